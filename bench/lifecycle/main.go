package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

type variant struct {
	name, runtime, bundle, config string
	starter                       string // runs start; runtime if empty
	spec                          []byte // the bundle's config.json as it was at the start
}

type result struct {
	Variant string             `json:"variant"`
	I       int                `json:"i"`
	MS      float64            `json:"ms"`
	Steps   map[string]float64 `json:"steps"`
}

func main() {
	n := flag.Int("n", 40, "measured rounds")
	warm := flag.Int("warmup", 5, "unmeasured rounds first")
	root := flag.String("root", "", "runc --root (a temp dir)")
	mode := flag.String("mode", "lifecycle", "lifecycle, cmd, gobench or tsv")
	col := flag.Int("col", 2, "tsv: the column (1-based) of microseconds to tabulate")
	rawPath := flag.String("raw", "", "append every measurement here as JSON lines")
	ref := flag.String("ref", "", "add a column: median minus this variant's median")
	pair := flag.String("pair", "", "gobench: A=B, ratio of /B/ twins to /A/ benchmarks")
	step := flag.String("step", "", "lifecycle: tabulate this step (create, start, wait, delete), not whole rounds")
	flag.Parse()
	if *mode == "gobench" {
		if err := gobench(os.Stdin, os.Stdout, *pair); err != nil {
			die(1, "lifecycle: %v", err)
		}
		return
	}
	if *mode == "tsv" {
		vs, samples, err := readTSV(os.Stdin, *col)
		if err != nil {
			die(1, "lifecycle: %v", err)
		}
		table(vs, samples, *ref)
		return
	}
	vs := variants(*mode, flag.Args())
	var raw *json.Encoder
	if *rawPath != "" {
		f, err := os.OpenFile(*rawPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			die(1, "lifecycle: %v", err)
		}
		defer f.Close()
		raw = json.NewEncoder(f)
	}
	samples := measure(vs, *mode, *root, *step, *warm, *n, raw)
	table(vs, samples, *ref)
}

// die prints a message and exits with status.
func die(status int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(status)
}

// variants reads the variants named on the command line: NAME=RUNTIME for
// -mode cmd, NAME=RUNTIME=BUNDLE[=CONFIG[=STARTER]] for -mode lifecycle.
func variants(mode string, args []string) []variant {
	var vs []variant
	for _, a := range args {
		p := strings.SplitN(a, "=", 5)
		switch {
		case mode == "cmd" && len(p) >= 2:
			vs = append(vs, variant{name: p[0], runtime: strings.SplitN(a, "=", 2)[1]})
		case mode == "lifecycle" && len(p) >= 3:
			v := variant{name: p[0], runtime: p[1], bundle: p[2]}
			if len(p) >= 4 {
				v.config = p[3]
			}
			if len(p) == 5 {
				v.starter = p[4]
			}
			var err error
			if v.spec, err = os.ReadFile(filepath.Join(v.bundle, "config.json")); err != nil {
				die(1, "lifecycle: %v", err)
			}
			vs = append(vs, v)
		default:
			die(2, "lifecycle: variant %q does not fit -mode %s", a, mode)
		}
	}
	return vs
}

// measure runs warm unmeasured and n measured rounds, each variant once a
// round in turn, and returns each variant's times (or step's) by round.
func measure(vs []variant, mode, root, step string, warm, n int, raw *json.Encoder) map[string][]float64 {
	samples := map[string][]float64{}
	for i := -warm; i < n; i++ {
		for vi, v := range vs {
			var r *result
			var err error
			if mode == "cmd" {
				r, err = once(v)
			} else {
				r, err = cycle(v, root, fmt.Sprintf("bench-%d-%d", vi, i+warm))
			}
			if err != nil {
				die(1, "lifecycle: %s round %d: %v", v.name, i, err)
			}
			if i < 0 {
				continue
			}
			r.I = i
			ms := r.MS
			if step != "" {
				var ok bool
				if ms, ok = r.Steps[step]; !ok {
					die(2, "lifecycle: -step %s: no such step in -mode %s", step, mode)
				}
			}
			samples[v.name] = append(samples[v.name], ms)
			if raw != nil {
				_ = raw.Encode(r)
			}
		}
	}
	return samples
}

// table prints the medians, each against the first variant's (ratio and
// paired difference with its 95% interval) and, with ref, against ref's.
func table(vs []variant, samples map[string][]float64, ref string) {
	base := median(samples[vs[0].name])
	refM, hasRef := 0.0, false
	if s, ok := samples[ref]; ok {
		refM, hasRef = median(s), true
	}
	head, rule := "", ""
	if hasRef {
		head, rule = fmt.Sprintf(" vs %s |", ref), "---:|"
	}
	fmt.Printf("| variant | median ms | min ms | max ms | vs %s | paired Δ vs %s, ms [95%% CI] |%s n |\n|---|---:|---:|---:|---:|---:|%s---:|\n", vs[0].name, vs[0].name, head, rule)
	for _, v := range vs {
		// Paired before sorting: samples[name][i] is round i.
		p, err := pairedDiff(samples[v.name], samples[vs[0].name])
		if err != nil {
			die(1, "lifecycle: %s: %v", v.name, err)
		}
		s := append([]float64(nil), samples[v.name]...)
		sort.Float64s(s)
		m := median(s)
		col := ""
		if hasRef {
			col = fmt.Sprintf(" %+.2f ms |", m-refM)
		}
		fmt.Printf("| %s | %.2f | %.2f | %.2f | %.2fx (%+.2f ms) | %s |%s %d |\n", v.name, m, s[0], s[len(s)-1], m/base, m-base, p, col, len(s))
	}
}

func median(s []float64) float64 {
	c := append([]float64(nil), s...)
	sort.Float64s(c)
	if len(c) == 0 {
		return 0
	}
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func once(v variant) (*result, error) {
	argv := strings.Fields(v.runtime)
	t := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", v.runtime, err, out)
	}
	return &result{Variant: v.name, MS: float64(time.Since(t).Microseconds()) / 1000}, nil
}

// run runs one runtime command with the global flags containerd's runc
// shim gives every call (go-runc: --root, --log, --log-format json). Its
// stderr goes to errf, a file, not a pipe: the container's init inherits
// create's stdio and would hold a pipe open.
func run(v variant, rt, root string, errf *os.File, args ...string) error {
	global := []string{"--root", root, "--log", filepath.Join(v.bundle, "log.json"), "--log-format", "json"}
	cmd := exec.Command(rt, append(global, args...)...)
	cmd.Stderr = errf
	if v.config != "" {
		cmd.Env = append(os.Environ(), "RUNC_USERNS_CONFIG="+v.config)
	}
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(errf.Name())
		log, _ := os.ReadFile(filepath.Join(v.bundle, "log.json"))
		return fmt.Errorf("%s %s: %w: %s%s", rt, strings.Join(args, " "), err, out, log)
	}
	return nil
}

func cycle(v variant, root, id string) (*result, error) {
	r := &result{Variant: v.name, Steps: map[string]float64{}}
	mark := func(step string, t0 time.Time) { r.Steps[step] = float64(time.Since(t0).Microseconds()) / 1000 }

	// Each create gets the bundle's spec as it was at the start, untimed:
	// containerd and CRI-O write a fresh config.json for every container,
	// while runc-userns rewrites the one it is given, so a bundle reused
	// as is would time undoing the last round's edits (~0.9 ms here), a
	// step no kubelet-driven create takes.
	if err := os.WriteFile(filepath.Join(v.bundle, "config.json"), v.spec, 0o644); err != nil {
		return nil, err
	}
	// Also untimed: a fresh log file (containerd's is in the task's own
	// directory), and the files the three calls' stderr goes to.
	if err := os.Remove(filepath.Join(v.bundle, "log.json")); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var errs [3]*os.File
	for i := range errs {
		f, err := os.CreateTemp("", "lifecycle-stderr-*")
		if err != nil {
			return nil, err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		errs[i] = f
	}
	t := time.Now()
	start := t
	// As containerd's shim creates a task: --pid-file in the bundle.
	if err := run(v, v.runtime, root, errs[0], "create", "--bundle", v.bundle, "--pid-file", filepath.Join(v.bundle, "init.pid"), id); err != nil {
		return nil, err
	}
	mark("create", t)
	pid, err := initPID(root, id)
	if err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	t = time.Now()
	starter := v.runtime
	if v.starter != "" {
		starter = v.starter
	}
	if err := run(v, starter, root, errs[1], "start", id); err != nil {
		return nil, err
	}
	mark("start", t)
	t = time.Now()
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, 10000); err != unix.EINTR {
			break
		}
	}
	mark("wait", t)
	t = time.Now()
	if err := run(v, v.runtime, root, errs[2], "delete", id); err != nil {
		return nil, err
	}
	mark("delete", t)
	r.MS = float64(time.Since(start).Microseconds()) / 1000
	return r, nil
}

func initPID(root, id string) (int, error) {
	b, err := os.ReadFile(filepath.Join(root, id, "state.json"))
	if err != nil {
		return 0, err
	}
	var st struct {
		PID int `json:"init_process_pid"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return 0, err
	}
	return st.PID, nil
}
