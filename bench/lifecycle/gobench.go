package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// gobench summarises `go test -bench -count N` output: per benchmark and
// unit, the median, min and max of the N rounds.
func gobench(r io.Reader, w io.Writer, pair string) error {
	type key struct{ name, unit string }
	vals := map[key][]float64{}
	var order []key
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		// Name-P  iterations  value unit  [value unit]...
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%q: %w", sc.Text(), err)
			}
			unit := f[i+1]
			if unit == "ns/op" { // ms read better at these scales
				v, unit = v/1e6, "ms/op"
			}
			k := key{name, unit}
			if _, ok := vals[k]; !ok {
				order = append(order, k)
			}
			vals[k] = append(vals[k], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	a, b, _ := strings.Cut(pair, "=")
	ratioHead, ratioRule := "", ""
	if pair != "" {
		ratioHead, ratioRule = fmt.Sprintf(" /%s/ ÷ /%s/ |", b, a), "---:|"
	}
	fmt.Fprintf(w, "| benchmark | unit | median | min | max | n |%s\n|---|---|---:|---:|---:|---:|%s\n", ratioHead, ratioRule)
	for _, k := range order {
		s := append([]float64(nil), vals[k]...)
		sort.Float64s(s)
		m := median(s)
		ratio := ""
		if pair != "" {
			ratio = " |"
			if twin, ok := vals[key{strings.Replace(k.name, "/"+a+"/", "/"+b+"/", 1), k.unit}]; ok && strings.Contains(k.name, "/"+a+"/") && m > 0 {
				ratio = fmt.Sprintf(" %.0fx |", median(twin)/m)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d |%s\n", k.name, k.unit, num(m), num(s[0]), num(s[len(s)-1]), len(s), ratio)
	}
	return nil
}

// num prints a measurement with 3 significant digits or as an integer.
func num(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
