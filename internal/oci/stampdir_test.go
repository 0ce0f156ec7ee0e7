package oci

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A stateDir a stamp names is trusted only in a configured one's shape:
// root's all the way down, writable by no one else (sticky excepted),
// itself unreadable by others, its key root's 0600.
func TestForeignStampKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the checks are about root ownership: needs root")
	}
	base := t.TempDir()
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, mode os.FileMode, uid int, key bool) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if key {
			if _, err := StampKey(dir, true); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, 0); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	openParent := mk("open", 0o777, 0, false)
	stickyParent := mk("sticky", 0o777|os.ModeSticky, 0, false)
	if err := os.Chmod(stickyParent, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mk("target", 0o711, 0, true), link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		dir  string
		ok   bool
	}{
		{"0711, root's", mk("a", 0o711, 0, true), true},
		{"0700, root's", mk("b", 0o700, 0, true), true},
		{"below a sticky directory", mk("sticky/c", 0o711, 0, true), true},
		{"through a root-owned symlink", link, true},
		{"readable by others", mk("d", 0o755, 0, true), false},
		{"writable by group", mk("e", 0o731, 0, true), false},
		{"not root's", mk("f", 0o711, 65534, true), false},
		{"below a directory others can write", filepath.Join(openParent, "g"), false},
		{"no key", mk("h", 0o711, 0, false), false},
		{"relative", "run/runc-userns", false},
		{"not clean", base + "/a/../a", false},
		{"missing", filepath.Join(base, "none"), false},
	}
	// The last but one needs a stateDir below the open directory.
	mk("open/g", 0o711, 0, true)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key, err := ForeignStampKey(c.dir)
			if (err == nil) != c.ok {
				t.Fatalf("ForeignStampKey(%s): %v, want ok %v", c.dir, err, c.ok)
			}
			if err == nil && len(key) != 32 {
				t.Errorf("key of %d bytes", len(key))
			}
			if !c.ok && c.name != "no key" && !errors.Is(err, ErrUntrustedStateDir) {
				t.Errorf("ForeignStampKey(%s): %v, not ErrUntrustedStateDir", c.dir, err)
			}
		})
	}
	// A key that is not root's 0600 is refused as StampKey refuses it.
	dir := mk("i", 0o711, 0, true)
	if err := os.Chmod(filepath.Join(dir, StampKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ForeignStampKey(dir); err == nil {
		t.Error("a 0644 key was taken")
	}
}
