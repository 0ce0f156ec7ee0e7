package netns

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRecord(t *testing.T) {
	dir := t.TempDir()
	rec := func(id string) string { return filepath.Join(dir, id, "netns") }
	write := func(file, path string) (Record, error) {
		return WriteRecord(file, path, func(file string, data []byte, mode os.FileMode) error {
			if err := os.MkdirAll(filepath.Dir(file), 0o711); err != nil {
				return err
			}
			return os.WriteFile(file, data, mode)
		})
	}
	if _, found, err := ReadRecord(rec("c1")); found || err != nil {
		t.Fatalf("no record: found %v, err %v", found, err)
	}
	nj, err := write(rec("c1"), "/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := ReadRecord(rec("c1"))
	if err != nil || !found || got != nj {
		t.Fatalf("read back %+v found %v err %v, want %+v", got, found, err, nj)
	}
	// The on-disk format package doc.go states.
	if raw, err := os.ReadFile(rec("c1")); err != nil || string(raw) != fmt.Sprintf("%d %d /proc/self/ns/net\n", nj.ID.Dev, nj.ID.Ino) {
		t.Errorf("record file %q, %v; want \"<dev> <ino> <path>\\n\"", raw, err)
	}
	if fi, err := os.Stat(rec("c1")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file mode %v, %v; want 0600", fi.Mode(), err)
	}
	// A path with spaces (a netns file of the caller's naming) reads back
	// whole; one with a newline is refused.
	spaced := filepath.Join(t.TempDir(), "net ns  x")
	if err := os.Symlink("/proc/self/ns/net", spaced); err != nil {
		t.Fatal(err)
	}
	nj, err = write(rec("c2"), spaced)
	if err != nil {
		t.Fatal(err)
	}
	if got, found, err := ReadRecord(rec("c2")); err != nil || !found || got != nj || got.Path != spaced {
		t.Fatalf("read back %+v found %v err %v, want %+v", got, found, err, nj)
	}
	if _, err := write(rec("c3"), spaced+"\n"); err == nil || !strings.Contains(err.Error(), "newline") {
		t.Errorf("a path with a newline: %v, want it refused", err)
	}
	for _, bad := range []string{"1 2 relative\n", "1 2\n", "x 2 /p\n", "1 -2 /p\n", "1 2 /p"} {
		if err := os.WriteFile(rec("c1"), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadRecord(rec("c1")); err == nil {
			t.Errorf("malformed record %q accepted", bad)
		}
	}
}
