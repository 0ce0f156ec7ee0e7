package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// readTSV reads measurements made elsewhere (bench/cri.bats), a line
// "LABEL<tab>US<tab>US..." per variant and round, rounds in order and the
// variants of a round in turn, and returns the variants in the order they
// first appear with column col (1-based, microseconds) of each round in
// milliseconds, so that table pairs round i of every variant.
func readTSV(r io.Reader, col int) ([]variant, map[string][]float64, error) {
	if col < 2 {
		return nil, nil, fmt.Errorf("-col %d: column 1 is the label", col)
	}
	var vs []variant
	samples := map[string][]float64{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < col {
			return nil, nil, fmt.Errorf("line %d: %d columns, want at least %d", line, len(f), col)
		}
		us, err := strconv.ParseFloat(f[col-1], 64)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d, column %d: %w", line, col, err)
		}
		if _, ok := samples[f[0]]; !ok {
			vs = append(vs, variant{name: f[0]})
		}
		samples[f[0]] = append(samples[f[0]], us/1000)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(vs) == 0 {
		return nil, nil, fmt.Errorf("no measurements")
	}
	for _, v := range vs {
		if n, want := len(samples[v.name]), len(samples[vs[0].name]); n != want {
			return nil, nil, fmt.Errorf("%s has %d rounds, %s %d: the rounds do not pair", v.name, n, vs[0].name, want)
		}
	}
	return vs, samples, nil
}
