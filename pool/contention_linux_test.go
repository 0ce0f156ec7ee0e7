package pool

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// contentionEnv marks a child process of TestContention: its value is
// "DIR INDEX CYCLES SLOTS".
const contentionEnv = "RUNC_USERNS_POOL_CONTENTION_CHILD"

// TestContention runs 8 processes that each allocate, join, leave and
// free ranges from one small pool, many times over. flock locks belong to
// open file descriptions and every runc-userns call is its own process, so
// processes, not goroutines, are what must not collide. Each child proves
// it alone holds its range by creating a marker file for it with O_EXCL
// before using it and removing the marker before freeing it; a second
// holder of the same slot would find the marker. At the end the pool must
// be empty and every cycle accounted for: no lost update.
//
// The processes also reclaim (Hooks): a member is alive while its claim
// file exists, written by the Claim hook under the pool's lock and removed
// after the member leaves, as runc's state outlives a create. Every fifth
// cycle "crashes": its pod is gone without a Leave, and only a reclaim (a
// child's Reclaim every third cycle, or an Allocate finding the pool full)
// frees it. A reclaim of a live range would hand its slot to another child
// while the marker exists, or make the app's Leave free the range.
func TestContention(t *testing.T) {
	if spec := os.Getenv(contentionEnv); spec != "" {
		contentionChild(t, spec)
		return
	}
	if testing.Short() {
		t.Skip("spawns 8 processes doing hundreds of locked writes; skipped in -short")
	}
	const children, cycles, slots = 8, 40, 3 // fewer slots than children: exhaustion happens
	dir := t.TempDir()
	for _, d := range []string{"markers", "claims"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	outs := make([][]byte, children)
	errs := make([]error, children)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestContention$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %d", contentionEnv, dir, i, cycles, slots))
		wg.Go(func() { outs[i], errs[i] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for i := range children {
		if errs[i] != nil {
			t.Errorf("child %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	if t.Failed() {
		return
	}

	p := contentionPool(t, dir, slots)
	if _, err := p.Reclaim(); err != nil { // the last crashed pods
		t.Fatal(err)
	}
	if all, err := p.List(); err != nil || len(all) != 0 {
		t.Errorf("pool not empty at the end: %+v, %v", all, err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "markers")); len(left) != 0 {
		t.Errorf("markers left: %v", left)
	}
	total, waits := 0, 0
	for i := range children {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("result-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		var done, exhausted int
		if _, err := fmt.Sscan(string(raw), &done, &exhausted); err != nil {
			t.Fatalf("child %d result %q: %v", i, raw, err)
		}
		total += done
		waits += exhausted
	}
	if total != children*cycles {
		t.Errorf("%d cycles completed, want %d", total, children*cycles)
	}
	t.Logf("%d processes, %d allocate/join/leave/leave cycles on %d slots, %d waits on an exhausted pool", children, total, slots, waits)
}

func contentionPool(t *testing.T, dir string, slots uint32) *Pool {
	t.Helper()
	p, err := New(Config{Ranges: []Range{{HostID: base, Size: slots * 65536}}, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	claims := filepath.Join(dir, "claims")
	p.SetHooks(Hooks{
		Claim: func(a Allocation, member string) error {
			return os.WriteFile(filepath.Join(claims, member), []byte(a.Owner), 0o600)
		},
		Alive: func(_, member string) bool {
			_, err := os.Stat(filepath.Join(claims, member))
			return !errors.Is(err, os.ErrNotExist)
		},
	})
	return p
}

// unclaim removes member's claim: the container is gone.
func unclaim(t *testing.T, dir, member string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "claims", member)); err != nil {
		t.Fatal(err)
	}
}

func contentionChild(t *testing.T, spec string) {
	f := strings.Fields(spec)
	if len(f) != 4 {
		t.Fatalf("bad %s=%q", contentionEnv, spec)
	}
	dir := f[0]
	idx, _ := strconv.Atoi(f[1])
	cycles, _ := strconv.Atoi(f[2])
	slots, _ := strconv.Atoi(f[3])
	p := contentionPool(t, dir, uint32(slots))
	deadline := time.Now().Add(2 * time.Minute)
	done, exhausted := 0, 0
	for done < cycles {
		if time.Now().After(deadline) {
			t.Fatalf("child %d: %d of %d cycles done by the deadline", idx, done, cycles)
		}
		owner := fmt.Sprintf("child%d-cycle%d", idx, done)
		a, err := p.Allocate(owner, "/run/runc", owner)
		if errors.Is(err, ErrExhausted) {
			exhausted++
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("%s: Allocate: %v", owner, err)
		}
		marker := filepath.Join(dir, "markers", strconv.FormatUint(uint64(a.HostID), 10))
		mf, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			holder, _ := os.ReadFile(marker)
			t.Fatalf("%s: got host IDs %d+%d, which %q still holds: %v", owner, a.HostID, a.Size, holder, err)
		}
		mf.WriteString(owner)
		mf.Close()
		if done%5 == 4 {
			// The pod crashes: no Leave; a reclaim must free the range.
			if err := os.Remove(marker); err != nil {
				t.Fatal(err)
			}
			unclaim(t, dir, owner)
			done++
			continue
		}
		if done%3 == 0 {
			if _, err := p.Reclaim(); err != nil {
				t.Fatalf("%s: Reclaim: %v", owner, err)
			}
		}
		// Our record must still be there, as we wrote it: no lost update.
		if got, ok, err := p.Get(owner); err != nil || !ok || got.HostID != a.HostID {
			t.Fatalf("%s: Get = %+v, %v, %v; want host ID %d", owner, got, ok, err, a.HostID)
		}
		app := owner + "-app"
		if _, err := p.Join(owner, app); err != nil {
			t.Fatalf("%s: Join: %v", owner, err)
		}
		if freed, err := p.Leave(owner, app); err != nil || freed {
			t.Fatalf("%s: Leave app = %v, %v; want not freed (was the live range reclaimed?)", owner, freed, err)
		}
		unclaim(t, dir, app)
		if err := os.Remove(marker); err != nil {
			t.Fatal(err)
		}
		if freed, err := p.Leave(owner, owner); err != nil || !freed {
			t.Fatalf("%s: last Leave = %v, %v; want freed", owner, freed, err)
		}
		unclaim(t, dir, owner)
		done++
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("result-%d", idx)), fmt.Appendf(nil, "%d %d\n", done, exhausted), 0o600); err != nil {
		t.Fatal(err)
	}
}

// benchEnv marks a child process of BenchmarkContention: its value is
// "DIR INDEX CYCLES".
const benchEnv = "RUNC_USERNS_POOL_BENCH_CHILD"

// BenchmarkContention: 8 and 64 processes (each runc-userns call is its
// own process) allocate and release ranges of one pool as fast as they
// can. Every child starts when its stdin closes, so the span measured is
// contention, not process start-up; it reports operations (Allocate or
// Leave) per second over all processes and ms per operation, and fails on
// a lost update: a record missing right after its Allocate, a range held
// twice, or a pool not empty at the end. ns/op is a whole round, children
// started; span-ms/op is the span of the round over its operations.
func BenchmarkContention(b *testing.B) {
	if spec := os.Getenv(benchEnv); spec != "" {
		benchChild(b, spec)
		return
	}
	for _, procs := range []int{8, 64} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			const cycles = 20
			var ops, spanNS float64
			for b.Loop() {
				dir := b.TempDir()
				if err := os.Mkdir(filepath.Join(dir, "markers"), 0o700); err != nil {
					b.Fatal(err)
				}
				cmds := make([]*exec.Cmd, procs)
				var gates []*os.File
				for i := range procs {
					cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkContention$", "-test.benchtime=1x", "-test.count=1")
					cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", benchEnv, dir, i, cycles))
					r, w, err := os.Pipe()
					if err != nil {
						b.Fatal(err)
					}
					cmd.Stdin = r
					out := new(strings.Builder)
					cmd.Stdout, cmd.Stderr = out, out
					if err := cmd.Start(); err != nil {
						b.Fatal(err)
					}
					r.Close()
					cmds[i], gates = cmd, append(gates, w)
					defer func() {
						if cmd.ProcessState == nil {
							_ = cmd.Process.Kill()
							_ = cmd.Wait()
						}
					}()
				}
				// Let the children load, then open the gate for all at once.
				time.Sleep(time.Duration(procs) * 5 * time.Millisecond)
				for _, g := range gates {
					g.Close()
				}
				for i, cmd := range cmds {
					if err := cmd.Wait(); err != nil {
						b.Fatalf("child %d: %v: %s", i, err, cmd.Stdout)
					}
				}
				var first, last int64
				for i := range procs {
					raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("result-%d", i)))
					if err != nil {
						b.Fatal(err)
					}
					var done int
					var start, end int64
					if _, err := fmt.Sscan(string(raw), &done, &start, &end); err != nil || done != cycles {
						b.Fatalf("child %d: result %q (%v), want %d cycles", i, raw, err, cycles)
					}
					if first == 0 || start < first {
						first = start
					}
					last = max(last, end)
				}
				p, err := New(Config{Ranges: []Range{{HostID: base, Size: 1024 * 65536}}, StateDir: filepath.Join(dir, "state")})
				if err != nil {
					b.Fatal(err)
				}
				if all, err := p.List(); err != nil || len(all) != 0 {
					b.Fatalf("pool not empty at the end (lost update): %+v, %v", all, err)
				}
				ops += float64(procs * cycles * 2)
				spanNS += float64(last - first)
			}
			b.ReportMetric(ops/(spanNS/1e9), "ops/s")
			b.ReportMetric(spanNS/1e6/ops, "span-ms/op")
		})
	}
}

// benchChild is one process of BenchmarkContention: it waits for its stdin
// to close, then allocates and releases its own owner cycles times.
func benchChild(b *testing.B, spec string) {
	f := strings.Fields(spec)
	if len(f) != 3 {
		b.Fatalf("bad %s=%q", benchEnv, spec)
	}
	dir := f[0]
	idx, _ := strconv.Atoi(f[1])
	cycles, _ := strconv.Atoi(f[2])
	p, err := New(Config{Ranges: []Range{{HostID: base, Size: 1024 * 65536}}, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // the gate
	start := time.Now()
	for c := range cycles {
		owner := fmt.Sprintf("p%d-c%d", idx, c)
		a, err := p.Allocate(owner, "/run/runc", owner)
		if err != nil {
			b.Fatalf("%s: Allocate: %v", owner, err)
		}
		marker := filepath.Join(dir, "markers", strconv.FormatUint(uint64(a.HostID), 10))
		mf, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			b.Fatalf("%s: host IDs %d+%d are held by another owner too: %v", owner, a.HostID, a.Size, err)
		}
		mf.Close()
		if got, ok, err := p.Get(owner); err != nil || !ok || got.HostID != a.HostID {
			b.Fatalf("%s: lost update: Get = %+v, %v, %v; want host ID %d", owner, got, ok, err, a.HostID)
		}
		if err := os.Remove(marker); err != nil {
			b.Fatal(err)
		}
		if freed, err := p.Leave(owner, owner); err != nil || !freed {
			b.Fatalf("%s: Leave = %v, %v; want freed", owner, freed, err)
		}
	}
	end := time.Now()
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("result-%d", idx)), fmt.Appendf(nil, "%d %d %d\n", cycles, start.UnixNano(), end.UnixNano()), 0o600); err != nil {
		b.Fatal(err)
	}
}
