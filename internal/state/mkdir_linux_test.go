package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMkdirTraversable(t *testing.T) {
	tmp := t.TempDir()
	// The test's temp dirs are 0700: make the way to base searchable
	// (0755: a chmod to 0711 above base would show).
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base := filepath.Join(tmp, "state")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, base, dir string
		wantErr         string
	}{
		{name: "below base", base: base, dir: filepath.Join(base, "a", "b")},
		{name: "base spelled with a trailing slash", base: base + "/", dir: filepath.Join(base, "c")},
		{name: "outside base: nothing chmodded", base: filepath.Join(base, "a"), dir: filepath.Join(tmp, "other", "x"), wantErr: "is not below stateDir"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := MkdirTraversable(c.base, c.dir)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("MkdirTraversable(%s, %s) = %v, want %q", c.base, c.dir, err, c.wantErr)
				}
				if _, err := os.Stat(c.dir); err == nil {
					t.Fatalf("%s was made", c.dir)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for d := c.dir; d != filepath.Dir(base); d = filepath.Dir(d) {
				if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o711 {
					t.Fatalf("%s: %v, %v: want mode 0711", d, st.Mode(), err)
				}
			}
			// Nothing above base was touched.
			if st, _ := os.Stat(tmp); st.Mode().Perm() != 0o755 {
				t.Fatalf("%s changed to %v", tmp, st.Mode())
			}
		})
	}
}

// privateBase gives MkdirPrivate's tests a temp dir that others can
// search (MkdirTraversable demands it above the stateDir); it skips
// without root, which the chown needs (make test runs as root).
func privateBase(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	tmp := t.TempDir()
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

// A container directory is root's, open to the pod's root's group for
// search only, whatever an earlier create left there. (Needs root for the
// chown; the unit tests run as root in make test.)
func TestMkdirPrivate(t *testing.T) {
	tmp := privateBase(t)
	base := filepath.Join(tmp, "state")
	cases := []struct {
		name     string
		before   func(dir string) error // what an earlier create left
		gid      int
		wantMode os.FileMode
		wantErr  string
	}{
		{name: "new, no pod", gid: 0, wantMode: 0o700},
		{name: "new, a pod's root", gid: 3221225472, wantMode: 0o710},
		{name: "left open to all", before: func(d string) error { return os.Mkdir(d, 0o777) }, gid: 3221225472, wantMode: 0o710},
		{name: "left to another pod", before: func(d string) error {
			if err := os.Mkdir(d, 0o710); err != nil {
				return err
			}
			return os.Chown(d, 0, 3221291008)
		}, gid: 0, wantMode: 0o700},
		{name: "a symlink in its place", before: func(d string) error { return os.Symlink(tmp, d) }, gid: 3221225472, wantErr: "is not a directory"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(base, "containers", "hash", fmt.Sprint("c", i))
			if c.before != nil {
				if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
					t.Fatal(err)
				}
				if err := c.before(dir); err != nil {
					t.Fatal(err)
				}
			}
			err := MkdirPrivate(base, dir, c.gid)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("MkdirPrivate = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			if err := unix.Lstat(dir, &st); err != nil {
				t.Fatal(err)
			}
			if mode := os.FileMode(st.Mode).Perm(); mode != c.wantMode || st.Uid != 0 || st.Gid != uint32(c.gid) {
				t.Fatalf("%s: %d:%d %#o, want 0:%d %#o", dir, st.Uid, st.Gid, mode, c.gid, c.wantMode)
			}
			if st, err := os.Stat(filepath.Dir(dir)); err != nil || st.Mode().Perm() != 0o711 {
				t.Fatalf("parent: %v, %v: want 0711", st.Mode(), err)
			}
		})
	}
}

// Containers of one runc root are created side by side, each create
// first removing the root's directory if empty, as a create's cleanup of
// its ID's leftovers and a delete do (RemoveStaged): every MkdirPrivate
// still succeeds. (Six concurrent creates in crio.bats, under runc 1.5.2,
// failed one in three runs with "chmod …: no such file or directory"
// before MkdirPrivate made the parents again.)
func TestMkdirPrivateParentRemoved(t *testing.T) {
	tmp := privateBase(t)
	base := filepath.Join(tmp, "state")
	root := filepath.Join(base, "containers", "hash")
	var removed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if os.Remove(root) == nil {
					removed.Add(1)
				}
				dir := filepath.Join(root, fmt.Sprint("c", g, "-", i))
				if err := MkdirPrivate(base, dir, 0); err != nil {
					errs <- fmt.Errorf("MkdirPrivate %s: %w", dir, err)
					return
				}
				if err := os.Remove(dir); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if removed.Load() == 0 {
		t.Fatal("the parent was never removed: the test raced nothing")
	}
}
