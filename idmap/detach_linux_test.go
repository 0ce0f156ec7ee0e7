package idmap

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/internal/mounttest"
)

// TestDetachAll: DetachAll says whether anything was mounted, and leaves
// nothing mounted at the path, however many mounts were stacked there.
func TestDetachAll(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: bind mounts")
	}
	cases := []struct {
		name   string
		mounts int
		path   string // below the temp dir; "" the staged directory
		want   bool
	}{
		{"a plain directory", 0, "", false},
		{"one mount", 1, "", true},
		{"three stacked", 3, "", true},
		{"a missing path", 0, "missing", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "staged")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mounttest.UnmountBelow(t, base) })
			for i := 0; i < c.mounts; i++ {
				if err := unix.Mount(base, dir, "", unix.MS_BIND, ""); err != nil {
					t.Fatal(err)
				}
			}
			path := dir
			if c.path != "" {
				path = filepath.Join(base, c.path)
			}
			got, err := DetachAll(path)
			if err != nil || got != c.want {
				t.Errorf("DetachAll(%s) = %v, %v; want %v, nil", path, got, err, c.want)
			}
			if n := mounttest.Below(t, base); n != 0 {
				t.Errorf("%d mounts left below %s", n, base)
			}
		})
	}
}
