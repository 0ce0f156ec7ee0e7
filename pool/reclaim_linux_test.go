package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fakeWorld is the containers a pool's hooks see: a set of live
// root/member pairs, and the records a rebuild scans.
type fakeWorld struct {
	alive     map[string]bool
	scan      []Allocation
	claims    []string
	reclaimed []string
	rebuilt   []error
}

func (w *fakeWorld) hooks() Hooks {
	return Hooks{
		Alive: func(root, member string) bool { return w.alive[root+"/"+member] },
		Claim: func(a Allocation, member string) error {
			w.claims = append(w.claims, a.Owner+"/"+member)
			return nil
		},
		Scan:    func([]string) ([]Allocation, error) { return w.scan, nil },
		Rebuilt: func(cause error, _ []Allocation) { w.rebuilt = append(w.rebuilt, cause) },
		Reclaimed: func(a Allocation) error {
			w.reclaimed = append(w.reclaimed, a.Owner)
			return nil
		},
	}
}

func owners(allocs []Allocation) []string {
	var out []string
	for _, a := range allocs {
		out = append(out, a.Owner)
	}
	slices.Sort(out)
	return out
}

func TestReclaim(t *testing.T) {
	tests := []struct {
		name  string
		alive []string // root/member pairs still alive
		want  []string // owners reclaimed
	}{
		{"all alive", []string{"/r/a", "/r/b", "/r/b-app"}, nil},
		{"sandbox gone, app alive", []string{"/r/a", "/r/b-app"}, nil},
		{"whole pod gone", []string{"/r/a"}, []string{"b"}},
		{"everything gone", nil, []string{"a", "b"}},
		{"alive under another root is not alive", []string{"/other/a", "/r/b"}, []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPool(t, 4)
			w := &fakeWorld{alive: map[string]bool{}}
			mustAllocate(t, p, "a", "/r", "a")
			mustAllocate(t, p, "b", "/r", "b")
			mustAllocate(t, p, "b", "/r", "b-app")
			for _, k := range tc.alive {
				w.alive[k] = true
			}
			p.SetHooks(w.hooks())
			got, err := p.Reclaim()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(owners(got), tc.want) || !reflect.DeepEqual(w.reclaimed, tc.want) {
				t.Errorf("reclaimed %v (hook saw %v), want %v", owners(got), w.reclaimed, tc.want)
			}
			left, _ := p.List()
			for _, a := range left {
				if slices.Contains(tc.want, a.Owner) {
					t.Errorf("%s still listed after it was reclaimed", a.Owner)
				}
			}
		})
	}
	t.Run("without a liveness check", func(t *testing.T) {
		if _, err := testPool(t, 1).Reclaim(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("err = %v, want ErrInvalidConfig", err)
		}
	})
}

func TestAllocateReclaimsWhenFull(t *testing.T) {
	p := testPool(t, 2)
	w := &fakeWorld{alive: map[string]bool{"/r/a": true}}
	mustAllocate(t, p, "a", "/r", "a")
	mustAllocate(t, p, "b", "/r", "b")
	// Without hooks a full pool is full.
	if _, err := p.Allocate("c", "/r", "c"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	p.SetHooks(w.hooks())
	c := mustAllocate(t, p, "c", "/r", "c")
	if c.HostID != base+65536 {
		t.Errorf("c got %d, want b's freed %d", c.HostID, base+65536)
	}
	if !reflect.DeepEqual(w.reclaimed, []string{"b"}) {
		t.Errorf("reclaimed %v, want [b]", w.reclaimed)
	}
	// a is alive and c's claim is the caller's: nothing more to take.
	w.alive["/r/c"] = true
	if _, err := p.Allocate("d", "/r", "d"); !errors.Is(err, ErrExhausted) {
		t.Errorf("err = %v, want ErrExhausted", err)
	}
	if want := []string{"c/c"}; !reflect.DeepEqual(w.claims, want) {
		t.Errorf("claims %v, want %v (made before the record, for every member)", w.claims, want)
	}
}

func TestClaimFailureRecordsNothing(t *testing.T) {
	p := testPool(t, 2)
	p.SetHooks(Hooks{Claim: func(Allocation, string) error { return errors.New("disk full") }})
	if _, err := p.Allocate("a", "/r", "a"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the claim's", err)
	}
	if all, _ := p.List(); len(all) != 0 {
		t.Errorf("pool holds %+v after a failed claim", all)
	}
}

func TestRebuildFromScan(t *testing.T) {
	live := []Allocation{
		{Owner: "a", HostID: base, Size: 65536, Root: "/r", Members: []string{"a"}},
		{Owner: "a", HostID: base, Size: 65536, Root: "/r", Members: []string{"a-app"}},
		{Owner: "b", HostID: base + 2*65536, Size: 65536, Root: "/r", Members: []string{"b"}},
	}
	xRecord := func(dir string) string { return filepath.Join(dir, RecordDir, recordName(base, "x")) }
	damage := map[string]func(t *testing.T, dir string){
		"garbage":   func(t *testing.T, dir string) { write(t, xRecord(dir), "\x00\xffnot json") },
		"truncated": func(t *testing.T, dir string) { truncateFile(t, xRecord(dir), 20) },
		"empty":     func(t *testing.T, dir string) { write(t, xRecord(dir), "") },
		"name and content differ": func(t *testing.T, dir string) {
			write(t, xRecord(dir), rec("y", base, 0))
		},
		"stray file": func(t *testing.T, dir string) { write(t, filepath.Join(dir, RecordDir, "x~"), "") },
		"missing":    func(t *testing.T, dir string) { os.RemoveAll(filepath.Join(dir, RecordDir)) },
		"garbage version 1 file": func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, StateFile), `{"version":1,"slotS`)
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			p := testPoolIn(t, dir, 4)
			mustAllocate(t, p, "x", "/r", "x")
			fn(t, dir)
			w := &fakeWorld{scan: live}
			p.SetHooks(w.hooks())
			c := mustAllocate(t, p, "c", "/r", "c")
			if c.HostID != base+65536 {
				t.Errorf("c got %d, want %d (the first slot no live container holds)", c.HostID, base+65536)
			}
			if len(w.rebuilt) != 1 {
				t.Fatalf("Rebuilt called %d times, want 1", len(w.rebuilt))
			}
			all, err := p.List()
			if err != nil {
				t.Fatal(err)
			}
			if got := owners(all); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
				t.Errorf("after rebuild: %v, want [a b c]", got)
			}
			if all[0].Owner != "a" || !reflect.DeepEqual(all[0].Members, []string{"a", "a-app"}) {
				t.Errorf("a's members %v, want merged [a a-app]", all[0].Members)
			}
			// The rebuild rewrote the whole directory: nothing else is left.
			names, _ := filepath.Glob(filepath.Join(dir, RecordDir, "*"))
			for i, n := range names {
				names[i] = filepath.Base(n)
			}
			if want := []string{recordName(base, "a"), recordName(base+65536, "c"), recordName(base+2*65536, "b")}; !reflect.DeepEqual(names, want) {
				t.Errorf("%s holds %v, want %v", RecordDir, names, want)
			}
			if _, err := os.Stat(filepath.Join(dir, StateFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("version 1 state file left: %v", err)
			}
		})
	}
	t.Run("conflicting records are refused", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		p := testPoolIn(t, dir, 4)
		mustAllocate(t, p, "x", "/r", "x")
		write(t, xRecord(dir), "{")
		bad := append(slices.Clone(live), Allocation{Owner: "z", HostID: base, Size: 65536, Root: "/r", Members: []string{"z"}})
		p.SetHooks((&fakeWorld{scan: bad}).hooks())
		if _, err := p.Allocate("c", "/r", "c"); !errors.Is(err, ErrCorruptState) || !strings.Contains(err.Error(), "share host IDs") {
			t.Errorf("err = %v, want ErrCorruptState naming the overlap", err)
		}
	})
	t.Run("fresh pool is not rebuilt", func(t *testing.T) {
		p := testPool(t, 4)
		w := &fakeWorld{scan: live}
		p.SetHooks(w.hooks())
		if a := mustAllocate(t, p, "c", "/r", "c"); a.HostID != base || len(w.rebuilt) != 0 {
			t.Errorf("got %d with %d rebuilds, want %d and none", a.HostID, len(w.rebuilt), base)
		}
	})
	t.Run("without a scan the damage is reported", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		p := testPoolIn(t, dir, 4)
		mustAllocate(t, p, "x", "/r", "x")
		write(t, xRecord(dir), "{")
		_, err := p.Allocate("c", "/r", "c")
		if !errors.Is(err, ErrCorruptState) || !strings.Contains(err.Error(), xRecord(dir)) {
			t.Errorf("err = %v, want ErrCorruptState naming %s", err, xRecord(dir))
		}
		// Missing with the roots file listing roots, and no scan: an
		// empty pool, as before the first Allocate.
		os.RemoveAll(filepath.Join(dir, RecordDir))
		if a := mustAllocate(t, p, "c", "/r", "c"); a.HostID != base {
			t.Errorf("c got %d, want %d", a.HostID, base)
		}
	})
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncateFile(t *testing.T, path string, n int64) {
	t.Helper()
	if err := os.Truncate(path, n); err != nil {
		t.Fatal(err)
	}
}

func TestSweep(t *testing.T) {
	live := []Allocation{{Owner: "b", HostID: base + 65536, Size: 65536, Root: "/r", Members: []string{"b"}}}
	tests := []struct {
		name  string
		setup func(t *testing.T, p *Pool, dir string)
		want  []string // owners Sweep reports as holding a range
	}{
		{"empty pool", func(*testing.T, *Pool, string) {}, nil},
		{"released owners are not held", func(t *testing.T, p *Pool, _ string) {
			mustAllocate(t, p, "a", "/r", "a")
			mustAllocate(t, p, "b", "/r", "b")
			if err := p.Release("a"); err != nil {
				t.Fatal(err)
			}
		}, []string{"b"}},
		{"lost records are rebuilt first", func(t *testing.T, p *Pool, dir string) {
			mustAllocate(t, p, "a", "/r", "a")
			mustAllocate(t, p, "b", "/r", "b")
			os.RemoveAll(filepath.Join(dir, RecordDir))
		}, []string{"b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			p := testPoolIn(t, dir, 4)
			tc.setup(t, p, dir)
			p.SetHooks((&fakeWorld{scan: live}).hooks())
			var got []string
			err := p.Sweep(func(held map[string]bool) error {
				for o := range held {
					got = append(got, o)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("held %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("fn's error is Sweep's", func(t *testing.T) {
		p := testPool(t, 4)
		mustAllocate(t, p, "a", "/r", "a")
		boom := errors.New("boom")
		if err := p.Sweep(func(map[string]bool) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("Sweep = %v, want %v", err, boom)
		}
	})
}

// A pod whose leftovers cannot be removed stays taken, and says why; the
// other dead pods are reclaimed all the same.
func TestReclaimGoesOnPastAFailedHook(t *testing.T) {
	p := testPool(t, 3)
	mustAllocate(t, p, "a", "/r", "a")
	mustAllocate(t, p, "b", "/r", "b")
	mustAllocate(t, p, "c", "/r", "c")
	w := &fakeWorld{alive: map[string]bool{}}
	h := w.hooks()
	h.Reclaimed = func(a Allocation) error {
		if a.Owner == "b" {
			return errors.New("remove pod dir: directory not empty")
		}
		w.reclaimed = append(w.reclaimed, a.Owner)
		return nil
	}
	p.SetHooks(h)
	got, err := p.Reclaim()
	if err == nil || !strings.Contains(err.Error(), "owner b (it stays taken): remove pod dir: directory not empty") {
		t.Errorf("err = %v, want b's hook error", err)
	}
	if want := []string{"a", "c"}; !reflect.DeepEqual(owners(got), want) || !reflect.DeepEqual(w.reclaimed, want) {
		t.Errorf("reclaimed %v (hook saw %v), want %v", owners(got), w.reclaimed, want)
	}
	left, _ := p.List()
	if !reflect.DeepEqual(owners(left), []string{"b"}) {
		t.Errorf("left %v, want [b]", owners(left))
	}

	// Full, and the only dead pod's hook fails: exhausted, and why.
	mustAllocate(t, p, "d", "/r", "d")
	mustAllocate(t, p, "e", "/r", "e")
	w.alive["/r/d"], w.alive["/r/e"] = true, true
	_, err = p.Allocate("f", "/r", "f")
	if !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "could not all be taken back") || !strings.Contains(err.Error(), "directory not empty") {
		t.Errorf("Allocate on a full pool: %v, want ErrExhausted with b's hook error", err)
	}
	// Once the hook succeeds, b's range goes to the next pod.
	h.Reclaimed = func(Allocation) error { return nil }
	p.SetHooks(h)
	if f := mustAllocate(t, p, "f", "/r", "f"); f.HostID != base+65536 {
		t.Errorf("f got %d, want b's %d", f.HostID, base+65536)
	}
}

func TestReleaseRefusesWhileAMemberIsAlive(t *testing.T) {
	tests := []struct {
		name      string
		hooks     bool
		alive     []string // members Alive reports alive
		wantErr   bool
		wantAlive string // the live members the error names
	}{
		{name: "no hooks: released whatever its members", alive: []string{"pod"}},
		{name: "all members gone", hooks: true},
		{name: "the sandbox alive", hooks: true, alive: []string{"pod"}, wantErr: true, wantAlive: "pod"},
		{name: "two of three alive", hooks: true, alive: []string{"pod", "app2"}, wantErr: true, wantAlive: "pod, app2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPool(t, 2)
			mustAllocate(t, p, "pod", "/run/runc", "pod")
			for _, m := range []string{"app1", "app2"} {
				if _, err := p.Join("pod", m); err != nil {
					t.Fatal(err)
				}
			}
			if tc.hooks {
				p.SetHooks(Hooks{Alive: func(root, member string) bool {
					if root != "/run/runc" {
						t.Errorf("Alive asked about root %q", root)
					}
					return slices.Contains(tc.alive, member)
				}})
			}
			err := p.Release("pod")
			_, held, gerr := p.Get("pod")
			if gerr != nil {
				t.Fatal(gerr)
			}
			if !tc.wantErr {
				if err != nil || held {
					t.Fatalf("Release = %v, still held %v; want it released", err, held)
				}
				return
			}
			if !errors.Is(err, ErrInUse) || !held {
				t.Fatalf("Release = %v, still held %v; want ErrInUse and the range kept", err, held)
			}
			want := fmt.Sprintf("owner pod: its containers %s (runc root /run/runc) are alive and use host IDs %d-%d", tc.wantAlive, base, base+65535)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Release error %q does not say %q", err, want)
			}
		})
	}
}
