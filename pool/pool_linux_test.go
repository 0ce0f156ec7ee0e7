package pool

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
		want := fmt.Sprintf("user namespace pool exhausted: 2 of 2 ranges in use (see runc-userns pool ls) in the pool of host IDs %d+131072 kept in %s; `runc-userns pool gc` frees those of pods that are gone, a larger userns.ranges makes room", base, p.dir)
		if err.Error() != want {
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
		records := filepath.Join(dir, RecordDir)
		for name, want := range map[string]os.FileMode{
			dir:                                      0o711 | os.ModeDir,
			filepath.Join(dir, LockFile):             0o600,
			records:                                  0o700 | os.ModeDir,
			filepath.Join(records, "2147483648-pod"): 0o600,
		} {
			st, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode() != want {
				t.Errorf("%s: mode %v, want %v", name, st.Mode(), want)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(records, ".*")); len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
		if _, err := os.Stat(filepath.Join(dir, StateFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a version 1 state file was written: %v", err)
		}
	})
	t.Run("record content", func(t *testing.T) {
		got, err := os.ReadFile(filepath.Join(dir, RecordDir, "2147483648-pod"))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"owner":"pod","hostID":2147483648,"size":65536,"root":"/r","allocated":"2025-11-22T10:50:00Z","members":["pod"]}` + "\n"
		if string(got) != want {
			t.Errorf("record:\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("no write without a change", func(t *testing.T) {
		path := filepath.Join(dir, RecordDir, "2147483648-pod")
		before := inode(t, path)
		mustAllocate(t, p, "pod", "/r", "pod")
		p.Leave("pod", "stranger")
		p.Release("stranger")
		if inode(t, path) != before {
			t.Error("the record was rewritten by calls that changed nothing")
		}
		mustAllocate(t, p, "pod", "/r", "app")
		if inode(t, path) == before {
			t.Error("the record was not replaced by a change")
		}
	})
	t.Run("stale temporary files", func(t *testing.T) {
		records := filepath.Join(dir, RecordDir)
		// One of a record being written, one of an owner ending in .tmp
		// (a valid container ID, so a record of its own).
		writeFile(t, records, tempName(recordName(base+65536, "pod2")), "garbage from a crash")
		writeFile(t, records, tempName(recordName(base+65536, "x.tmp")), "{")
		if all, err := p.List(); err != nil || len(all) != 1 {
			t.Fatalf("List with temporary files = %+v, %v", all, err)
		}
		mustAllocate(t, p, "pod2", "/r", "pod2")
		if err := p.Release("pod"); err != nil {
			t.Fatal(err)
		}
		mustAllocate(t, p, "x.tmp", "/r", "x.tmp")
		if all, err := p.List(); err != nil || len(all) != 2 {
			t.Fatalf("List = %+v, %v", all, err)
		}
		if left, _ := filepath.Glob(filepath.Join(records, ".*")); len(left) != 0 {
			t.Errorf("temporary files left after a write: %v", left)
		}
		p.Release("x.tmp")
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

// slotID is the first host ID of slot i of testPool's pool.
func slotID(i uint32) uint32 { return base + i*65536 }

// rec is a record file's content; size 0 means 65536.
func rec(owner string, hostID, size uint32) string {
	if size == 0 {
		size = 65536
	}
	return fmt.Sprintf(`{"owner":%q,"hostID":%d,"size":%d,"root":"/r","allocated":"2025-01-01T00:00:00Z","members":[%q]}`+"\n", owner, hostID, size, owner)
}

// writeRecords makes dir/RecordDir hold files named as the keys.
func writeRecords(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, RecordDir), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		writeFile(t, filepath.Join(dir, RecordDir), name, content)
	}
}

func TestCorruptState(t *testing.T) {
	name := func(owner string, hostID uint32) string { return recordName(hostID, owner) }
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
		damage  bool   // a rebuild from Hooks.Scan would repair it
		owner   string // who allocates; "" is "new"
	}{
		{name: "garbage", files: map[string]string{name("a", slotID(0)): "\x00\xffnot json"}, wantErr: "invalid character", damage: true},
		{name: "truncated", files: map[string]string{name("a", slotID(0)): rec("a", slotID(0), 0)[:30]}, wantErr: "unexpected EOF", damage: true},
		{name: "empty", files: map[string]string{name("a", slotID(0)): ""}, wantErr: "EOF", damage: true},
		{name: "trailing data", files: map[string]string{name("a", slotID(0)): rec("a", slotID(0), 0) + "{}"}, wantErr: "data after the JSON object", damage: true},
		{name: "not a record name", files: map[string]string{"a": rec("a", slotID(0), 0)}, wantErr: "not a record name", damage: true},
		{name: "leading zero", files: map[string]string{"0" + name("a", slotID(0)): rec("a", slotID(0), 0)}, wantErr: "not a host ID in decimal", damage: true},
		{name: "owner not an ID", files: map[string]string{name("a b", slotID(0)): rec("a b", slotID(0), 0)}, wantErr: "only letters, digits", damage: true},
		{name: "owner differs from the name", files: map[string]string{name("a", slotID(0)): rec("b", slotID(0), 0)}, wantErr: `the record of owner "b" at host ID 2147483648 is in the file of owner a`, damage: true},
		{name: "host ID differs from the name", files: map[string]string{name("a", slotID(0)): rec("a", slotID(1), 0)}, wantErr: "is in the file of owner a at host ID 2147483648", damage: true},
		{name: "empty member", files: map[string]string{name("a", slotID(0)): strings.Replace(rec("a", slotID(0), 0), `["a"]`, `[""]`, 1)}, wantErr: "empty member", damage: true},
		{name: "size 0", files: map[string]string{name("a", slotID(0)): strings.Replace(rec("a", slotID(0), 0), `"size":65536`, `"size":0`, 1)}, wantErr: "size 0", damage: true},
		{name: "two records of one owner", files: map[string]string{name("a", slotID(0)): rec("a", slotID(0), 0), name("a", slotID(1)): rec("a", slotID(1), 0)}, wantErr: "owner a has two records", damage: true, owner: "a"},
		{name: "two owners at one host ID", files: map[string]string{name("a", slotID(0)): rec("a", slotID(0), 0), name("b", slotID(0)): rec("b", slotID(0), 0)}, wantErr: "owners a and b both have a record at host ID 2147483648", damage: true},
		{name: "overlap", files: map[string]string{name("a", slotID(0)): rec("a", slotID(0), 131072), name("b", slotID(1)): rec("b", slotID(1), 131072)}, wantErr: "share host IDs", damage: true},
		{name: "misaligned", files: map[string]string{name("a", slotID(0)+1): rec("a", slotID(0)+1, 0)}, wantErr: "not a slot of the pool"},
		{name: "outside the ranges", files: map[string]string{name("a", slotID(8)): rec("a", slotID(8), 0)}, wantErr: "not a slot of the pool"},
		{name: "other slot size", files: map[string]string{name("a", slotID(0)): rec("a", slotID(0), 131072)}, wantErr: "not a slot of the pool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeRecords(t, dir, tc.files)
			p := testPoolIn(t, dir, 4)
			owner := cmp.Or(tc.owner, "new")
			_, err := p.Allocate(owner, "/r", owner)
			if !errors.Is(err, ErrCorruptState) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Allocate = %v, want ErrCorruptState with %q", err, tc.wantErr)
			}
			var damaged *damagedError
			if errors.As(err, &damaged) != tc.damage {
				t.Errorf("%v: damage %v, want %v", err, !tc.damage, tc.damage)
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, RecordDir)) && !strings.Contains(err.Error(), "release") {
				t.Errorf("%q names neither the file nor what to do", err)
			}
			for name, content := range tc.files {
				if got, _ := os.ReadFile(filepath.Join(dir, RecordDir, name)); string(got) != content {
					t.Errorf("corrupt record %s was rewritten", name)
				}
			}
		})
	}
	t.Run("ranges changed: still releasable", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, map[string]string{name("a", slotID(8)): rec("a", slotID(8), 0), name("b", slotID(9)): rec("b", slotID(9), 0)})
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
	t.Run("slot size changed: still readable and releasable", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, map[string]string{name("a", slotID(0)): rec("a", slotID(0), 131072), name("b", slotID(2)): rec("b", slotID(2), 131072)})
		p := testPoolIn(t, dir, 4)
		if all, err := p.List(); err != nil || len(all) != 2 {
			t.Fatalf("List = %+v, %v", all, err)
		}
		if _, err := p.Join("a", "app"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Allocate("new", "/r", "new"); !errors.Is(err, ErrCorruptState) {
			t.Fatalf("Allocate = %v, want ErrCorruptState", err)
		}
		p.Release("a")
		p.Release("b")
		mustAllocate(t, p, "new", "/r", "new")
	})
	t.Run("two records of one owner: List sees them", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, map[string]string{name("a", slotID(0)): rec("a", slotID(0), 0), name("a", slotID(1)): rec("a", slotID(1), 0)})
		if _, err := testPoolIn(t, dir, 4).List(); !errors.Is(err, ErrCorruptState) || !strings.Contains(err.Error(), "owner a has two records") {
			t.Errorf("List = %v, want ErrCorruptState naming both", err)
		}
	})
	t.Run("mixed sizes", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, map[string]string{name("a", slotID(0)): rec("a", slotID(0), 0), name("b", slotID(2)): rec("b", slotID(2), 131072)})
		if _, err := testPoolIn(t, dir, 4).List(); !errors.Is(err, ErrCorruptState) || !strings.Contains(err.Error(), "share one slot size") {
			t.Errorf("List = %v, want ErrCorruptState naming the sizes", err)
		}
	})
}

func TestInvalidOwner(t *testing.T) {
	p := testPool(t, 2)
	mustAllocate(t, p, "pod", "/r", "pod")
	calls := map[string]func(owner string) error{
		"Allocate": func(o string) error { _, err := p.Allocate(o, "/r", "m"); return err },
		"Join":     func(o string) error { _, err := p.Join(o, "m"); return err },
		"Leave":    func(o string) error { _, err := p.Leave(o, "m"); return err },
		"Release":  func(o string) error { return p.Release(o) },
		"Get":      func(o string) error { _, _, err := p.Get(o); return err },
	}
	for _, owner := range []string{"", ".", "..", "../pod", "a/b", "a b", "pod\n", strings.Repeat("x", maxOwnerLen+1)} {
		for name, call := range calls {
			if err := call(owner); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s(%q) = %v, want ErrInvalidConfig", name, owner, err)
			}
		}
	}
	// The longest owner allowed, and every allowed character.
	for _, owner := range []string{strings.Repeat("x", maxOwnerLen), "Az09_+.-x"} {
		mustAllocate(t, p, owner, "/r", "m")
		if err := p.Release(owner); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkAllocateRelease: one Allocate and one Release (two locked
// read-modify-write calls) on a pool already holding 0, 110 (kubelet's
// default pod limit) and 512 (half of the default pool) other ranges: each
// call reads RecordDir's names and at most one record, and writes or
// removes one, so the cost should hardly grow with the ranges held.
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

// A lock file removed while held (an operator clearing a "stale" lock):
// a caller that was waiting on the old file must not run beside one that
// locked the new file.
func TestLockFileReplacedWhileHeld(t *testing.T) {
	p := testPool(t, 2)
	mustAllocate(t, p, "pod", "/r", "pod") // makes the state dir and lock file
	unlockA, err := p.lock(unix.LOCK_EX)
	if err != nil || unlockA == nil {
		t.Fatalf("lock A: %v", err)
	}
	bHeld := make(chan func())
	go func() {
		unlockB, err := p.lock(unix.LOCK_EX)
		if err != nil || unlockB == nil {
			t.Errorf("lock B: %v", err)
			unlockB = func() {}
		}
		bHeld <- unlockB
	}()
	time.Sleep(20 * time.Millisecond) // B waits on the old file
	if err := os.Remove(filepath.Join(p.dir, LockFile)); err != nil {
		t.Fatal(err)
	}
	unlockC, err := p.lock(unix.LOCK_EX) // makes and locks a new file
	if err != nil || unlockC == nil {
		t.Fatalf("lock C: %v", err)
	}
	unlockA()
	select {
	case unlockB := <-bHeld:
		unlockB()
		unlockC()
		t.Fatal("B got the lock on the removed file while C holds the new one")
	case <-time.After(50 * time.Millisecond):
	}
	unlockC()
	select {
	case unlockB := <-bHeld:
		unlockB()
	case <-time.After(5 * time.Second):
		t.Fatal("B never got the lock after C let go")
	}
}
