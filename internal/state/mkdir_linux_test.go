package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
