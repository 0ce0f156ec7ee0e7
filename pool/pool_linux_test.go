package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

const base = uint32(1 << 31)

// testPool is a pool of n slots of 65536 from 2^31 in a fresh state dir.
func testPool(t testing.TB, n uint32) *Pool {
	t.Helper()
	return testPoolIn(t, filepath.Join(t.TempDir(), "state"), n)
}

func testPoolIn(t testing.TB, dir string, n uint32) *Pool {
	t.Helper()
	p, err := New(Config{Ranges: []Range{{HostID: base, Size: n * 65536}}, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return time.Date(2025, 11, 22, 10, 50, 0, 123, time.Local) }
	return p
}

func mustAllocate(t *testing.T, p *Pool, owner, root, member string) Allocation {
	t.Helper()
	a, err := p.Allocate(owner, root, member)
	if err != nil {
		t.Fatalf("Allocate(%s): %v", owner, err)
	}
	return a
}

func TestAllocate(t *testing.T) {
	t.Run("lowest first", func(t *testing.T) {
		p := testPool(t, 4)
		for i, owner := range []string{"a", "b", "c"} {
			a := mustAllocate(t, p, owner, "/run/runc", owner)
			if want := base + uint32(i)*65536; a.HostID != want || a.Size != 65536 {
				t.Errorf("%s got %d+%d, want %d+65536", owner, a.HostID, a.Size, want)
			}
		}
		// A hole is filled before the top.
		if err := p.Release("b"); err != nil {
			t.Fatal(err)
		}
		if a := mustAllocate(t, p, "d", "/run/runc", "d"); a.HostID != base+65536 {
			t.Errorf("d got %d, want the freed %d", a.HostID, base+65536)
		}
	})
	t.Run("idempotent per owner", func(t *testing.T) {
		p := testPool(t, 4)
		first := mustAllocate(t, p, "pod", "/run/runc", "pod")
		again := mustAllocate(t, p, "pod", "/run/runc/", "pod") // same root, uncleaned
		if !reflect.DeepEqual(first, again) {
			t.Errorf("second Allocate = %+v, want %+v", again, first)
		}
		app := mustAllocate(t, p, "pod", "/run/runc", "app")
		if app.HostID != first.HostID || !reflect.DeepEqual(app.Members, []string{"pod", "app"}) {
			t.Errorf("with a new member: %+v", app)
		}
		if all, _ := p.List(); len(all) != 1 {
			t.Errorf("List = %+v, want one allocation", all)
		}
	})
	t.Run("record", func(t *testing.T) {
		p := testPool(t, 1)
		a := mustAllocate(t, p, "pod", "/run/runc", "c1")
		want := Allocation{Owner: "pod", HostID: base, Size: 65536, Root: "/run/runc", Allocated: time.Date(2025, 11, 22, 10, 50, 0, 0, time.Local).UTC(), Members: []string{"c1"}}
		if !reflect.DeepEqual(a, want) {
			t.Errorf("Allocate = %+v\nwant %+v", a, want)
		}
		got, ok, err := p.Get("pod")
		if err != nil || !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Get = %+v, %v, %v", got, ok, err)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		p := testPool(t, 2)
		mustAllocate(t, p, "a", "/r", "a")
		mustAllocate(t, p, "b", "/r", "b")
		_, err := p.Allocate("c", "/r", "c")
		if !errors.Is(err, ErrExhausted) {
			t.Fatalf("err = %v, want ErrExhausted", err)
		}
		if want := "user namespace pool exhausted: 2 of 2 ranges in use (see runc-userns pool ls); `runc-userns pool gc` frees those of pods that are gone"; err.Error() != want {
			t.Errorf("err = %q\nwant %q", err, want)
		}
		// A known owner still gets its range in a full pool.
		mustAllocate(t, p, "a", "/r", "a2")
	})
	t.Run("owner conflict", func(t *testing.T) {
		p := testPool(t, 2)
		mustAllocate(t, p, "pod", "/run/containerd/runc/k8s.io", "pod")
		_, err := p.Allocate("pod", "/run/runc", "x")
		if !errors.Is(err, ErrOwnerConflict) {
			t.Fatalf("err = %v, want ErrOwnerConflict", err)
		}
		for _, want := range []string{"/run/containerd/runc/k8s.io", "/run/runc", "pod"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not name %s", err, want)
			}
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		p := testPool(t, 1)
		for _, args := range [][3]string{{"", "/r", "m"}, {"o", "", "m"}} {
			if _, err := p.Allocate(args[0], args[1], args[2]); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Allocate%q = %v, want ErrInvalidConfig", args, err)
			}
		}
	})
	t.Run("opened without ranges", func(t *testing.T) {
		p, err := OpenExisting(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Allocate("o", "/r", "m"); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Allocate = %v, want ErrInvalidConfig", err)
		}
	})
}

func TestLeaveRelease(t *testing.T) {
	setup := func(t *testing.T) *Pool {
		p := testPool(t, 4)
		mustAllocate(t, p, "pod", "/r", "pod")
		mustAllocate(t, p, "pod", "/r", "app")
		return p
	}
	tests := []struct {
		name       string
		do         func(p *Pool) (bool, error)
		wantFreed  bool
		wantHeld   bool
		wantMember []string
	}{
		{name: "leave one of two", do: func(p *Pool) (bool, error) { return p.Leave("pod", "app") }, wantHeld: true, wantMember: []string{"pod"}},
		{name: "leave unknown member", do: func(p *Pool) (bool, error) { return p.Leave("pod", "nope") }, wantHeld: true, wantMember: []string{"pod", "app"}},
		{name: "leave unknown owner", do: func(p *Pool) (bool, error) { return p.Leave("other", "app") }, wantFreed: true, wantHeld: true, wantMember: []string{"pod", "app"}},
		{name: "last one out frees", do: func(p *Pool) (bool, error) {
			if _, err := p.Leave("pod", "app"); err != nil {
				return false, err
			}
			return p.Leave("pod", "pod")
		}, wantFreed: true},
		{name: "leave twice", do: func(p *Pool) (bool, error) {
			p.Leave("pod", "app")
			p.Leave("pod", "pod")
			return p.Leave("pod", "pod")
		}, wantFreed: true},
		{name: "release with members", do: func(p *Pool) (bool, error) { return true, p.Release("pod") }, wantFreed: true},
		{name: "release unknown", do: func(p *Pool) (bool, error) { return true, p.Release("other") }, wantFreed: true, wantHeld: true, wantMember: []string{"pod", "app"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := setup(t)
			freed, err := tc.do(p)
			if err != nil {
				t.Fatal(err)
			}
			if freed != tc.wantFreed {
				t.Errorf("freed = %v, want %v", freed, tc.wantFreed)
			}
			a, held, err := p.Get("pod")
			if err != nil {
				t.Fatal(err)
			}
			if held != tc.wantHeld || !reflect.DeepEqual(a.Members, tc.wantMember) {
				t.Errorf("after: held %v members %q, want %v %q", held, a.Members, tc.wantHeld, tc.wantMember)
			}
		})
	}
	t.Run("memberless allocation goes on any leave", func(t *testing.T) {
		p := testPool(t, 1)
		mustAllocate(t, p, "pod", "/r", "")
		if freed, err := p.Leave("pod", "x"); err != nil || !freed {
			t.Errorf("Leave = %v, %v; want freed", freed, err)
		}
	})
}

func TestJoinOwnerOf(t *testing.T) {
	p := testPool(t, 2)
	mustAllocate(t, p, "pod", "/run/runc", "pod")
	a, err := p.Join("pod", "app")
	if err != nil || !reflect.DeepEqual(a.Members, []string{"pod", "app"}) {
		t.Fatalf("Join = %+v, %v", a, err)
	}
	if _, err := p.Join("nope", "app"); !errors.Is(err, ErrUnknownOwner) {
		t.Errorf("Join unknown = %v, want ErrUnknownOwner", err)
	}
	tests := []struct{ root, id, want string }{
		{"/run/runc", "app", "pod"},
		{"/run/runc/", "pod", "pod"},
		{"/other/root", "app", ""},
		{"/run/runc", "stranger", ""},
	}
	for _, tc := range tests {
		if got, err := p.OwnerOf(tc.root, tc.id); err != nil || got != tc.want {
			t.Errorf("OwnerOf(%s, %s) = %q, %v; want %q", tc.root, tc.id, got, err, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	p := testPool(t, 4)
	for _, o := range []string{"z", "y", "x"} {
		mustAllocate(t, p, o, "/r", o)
	}
	p.Release("y")
	mustAllocate(t, p, "w", "/r", "w")
	all, err := p.List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range all {
		got = append(got, fmt.Sprintf("%s@%d", a.Owner, (a.HostID-base)/65536))
	}
	if want := []string{"z@0", "w@1", "x@2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	// Callers may not change the pool through what List returns.
	all[0].Members[0] = "mutated"
	if again, _ := p.List(); again[0].Members[0] != "z" {
		t.Error("List shares memory with later calls")
	}
}

func TestStateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "state")
	p := testPoolIn(t, dir, 2)

	t.Run("reads create nothing", func(t *testing.T) {
		if all, err := p.List(); err != nil || len(all) != 0 {
			t.Fatalf("List = %v, %v", all, err)
		}
		if _, ok, err := p.Get("x"); err != nil || ok {
			t.Fatalf("Get = %v, %v", ok, err)
		}
		if freed, err := p.Leave("x", "y"); err != nil || !freed {
			t.Fatalf("Leave = %v, %v", freed, err)
		}
		if err := p.Release("x"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("state dir exists after reads only: %v", err)
		}
	})
	t.Run("modes", func(t *testing.T) {
		mustAllocate(t, p, "pod", "/r", "pod")
		for name, want := range map[string]os.FileMode{dir: 0o711 | os.ModeDir, filepath.Join(dir, LockFile): 0o600, filepath.Join(dir, StateFile): 0o600} {
			st, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode() != want {
				t.Errorf("%s: mode %v, want %v", name, st.Mode(), want)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, StateFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temporary file left: %v", err)
		}
	})
	t.Run("no write without a change", func(t *testing.T) {
		path := filepath.Join(dir, StateFile)
		before := inode(t, path)
		mustAllocate(t, p, "pod", "/r", "pod")
		p.Leave("pod", "stranger")
		p.Release("stranger")
		if inode(t, path) != before {
			t.Error("the state file was rewritten by calls that changed nothing")
		}
		mustAllocate(t, p, "pod", "/r", "app")
		if inode(t, path) == before {
			t.Error("the state file was not replaced by a change")
		}
	})
	t.Run("stale temporary file", func(t *testing.T) {
		writeFile(t, dir, StateFile+".tmp", "garbage from a crash")
		mustAllocate(t, p, "pod2", "/r", "pod2")
		if all, err := p.List(); err != nil || len(all) != 2 {
			t.Fatalf("List = %+v, %v", all, err)
		}
	})
	t.Run("a second Pool sees the first one's changes", func(t *testing.T) {
		other := testPoolIn(t, dir, 2)
		if _, ok, _ := other.Get("pod2"); !ok {
			t.Error("pod2 not seen")
		}
	})
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

func TestCorruptState(t *testing.T) {
	slot := func(i uint32) uint32 { return base + i*65536 }
	rec := func(owner string, hostID uint32) string {
		return fmt.Sprintf(`{"owner":%q,"hostID":%d,"size":65536,"root":"/r","allocated":"2025-01-01T00:00:00Z","members":[%q]}`, owner, hostID, owner)
	}
	file := func(recs ...string) string {
		return `{"version":1,"slotSize":65536,"allocations":[` + strings.Join(recs, ",") + `]}`
	}
	tests := []struct {
		name    string
		content string
		wantErr string
	}{
		{name: "truncated", content: `{"version":1,"slotS`, wantErr: "unexpected EOF"},
		{name: "overlap", content: file(rec("a", slot(0)), rec("b", slot(0)+100)), wantErr: "share host IDs"},
		{name: "misaligned", content: file(rec("a", slot(0)+1)), wantErr: "not a slot of the pool"},
		{name: "outside the ranges", content: file(rec("a", slot(8))), wantErr: "not a slot of the pool"},
		{name: "other slot size", content: `{"version":1,"slotSize":131072,"allocations":[{"owner":"a","hostID":2147483648,"size":131072}]}`, wantErr: "not a slot of the pool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, StateFile, tc.content)
			p := testPoolIn(t, dir, 4)
			_, err := p.Allocate("new", "/r", "new")
			if !errors.Is(err, ErrCorruptState) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Allocate = %v, want ErrCorruptState with %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, StateFile)) && !strings.Contains(err.Error(), "release") {
				t.Errorf("%q names neither the file nor what to do", err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, StateFile)); string(got) != tc.content {
				t.Error("a corrupt state file was rewritten")
			}
		})
	}
	t.Run("ranges changed: still releasable", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, StateFile, file(rec("a", slot(8)), rec("b", slot(9))))
		p := testPoolIn(t, dir, 4) // slots 8 and 9 are no longer in the pool
		if _, err := p.Allocate("new", "/r", "new"); !errors.Is(err, ErrCorruptState) {
			t.Fatalf("Allocate = %v, want ErrCorruptState", err)
		}
		if freed, err := p.Leave("a", "a"); err != nil || !freed {
			t.Fatalf("Leave = %v, %v", freed, err)
		}
		if err := p.Release("b"); err != nil {
			t.Fatal(err)
		}
		mustAllocate(t, p, "new", "/r", "new")
	})
}

// BenchmarkAllocateRelease: one Allocate and one Release (two locked
// read-modify-write calls) on a pool already holding 0, 110 (kubelet's
// default pod limit) and 512 (half of the default pool) other ranges: each
// call parses and writes the whole state file.
func BenchmarkAllocateRelease(b *testing.B) {
	for _, held := range []int{0, 110, 512} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			p := testPool(b, 1024)
			for i := range held {
				if _, err := p.Allocate(fmt.Sprintf("bg%d", i), "/r", "m"); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := p.Allocate("pod", "/r", "pod"); err != nil {
					b.Fatal(err)
				}
				if err := p.Release("pod"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
