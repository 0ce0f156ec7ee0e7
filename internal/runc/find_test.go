package runc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeRunc writes an executable script named runc in dir.
func fakeRunc(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, "runc")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// selfLink makes dir/runc a symlink to target (this test binary).
func selfLink(t *testing.T, dir, target string) string {
	t.Helper()
	p := filepath.Join(dir, "runc")
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func testBinary(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	type env struct {
		configured, path string
		// fallback replaces fallbackPaths when non-nil.
		fallback []string
		// want is the path Find must return; "" when it must fail.
		want string
		// mention lists what the error must name, besides the case's.
		mention []string
	}
	cases := []struct {
		name    string
		setup   func(t *testing.T) env
		is      error
		mention []string
	}{
		{
			name: "configured path wins over PATH",
			setup: func(t *testing.T) env {
				conf := fakeRunc(t, t.TempDir(), 0o755)
				fakeRunc(t, t.TempDir(), 0o755)
				return env{configured: conf, path: t.TempDir(), want: conf}
			},
		},
		{
			name: "configured path is taken as it is",
			setup: func(t *testing.T) env {
				return env{configured: "/usr/bin/env", path: "", want: "/usr/bin/env"}
			},
		},
		{
			name: "configured path missing",
			setup: func(t *testing.T) env {
				other := t.TempDir()
				fakeRunc(t, other, 0o755)
				return env{configured: filepath.Join(t.TempDir(), "runc"), path: other}
			},
			is:      os.ErrNotExist,
			mention: []string{"config"},
		},
		{
			name: "configured path is this binary",
			setup: func(t *testing.T) env {
				return env{configured: testBinary(t)}
			},
			is: ErrSelf,
		},
		{
			name: "configured path is a symlink to /proc/self/exe",
			setup: func(t *testing.T) env {
				return env{configured: selfLink(t, t.TempDir(), "/proc/self/exe")}
			},
			is: ErrSelf,
		},
		{
			name: "fake runc on PATH",
			setup: func(t *testing.T) env {
				dir := t.TempDir()
				return env{path: dir, want: fakeRunc(t, dir, 0o755)}
			},
		},
		{
			name: "first runc on PATH",
			setup: func(t *testing.T) env {
				a, b := t.TempDir(), t.TempDir()
				want := fakeRunc(t, a, 0o755)
				fakeRunc(t, b, 0o755)
				return env{path: a + ":" + b, want: want}
			},
		},
		{
			name: "missing PATH entries are skipped",
			setup: func(t *testing.T) env {
				b := t.TempDir()
				return env{path: "/nonexistent:" + filepath.Join(b, "missing") + ":" + b, want: fakeRunc(t, b, 0o755)}
			},
		},
		{
			name: "not executable is skipped",
			setup: func(t *testing.T) env {
				a, b := t.TempDir(), t.TempDir()
				fakeRunc(t, a, 0o644)
				return env{path: a + ":" + b, want: fakeRunc(t, b, 0o755)}
			},
		},
		{
			name: "directory named runc is skipped",
			setup: func(t *testing.T) env {
				a, b := t.TempDir(), t.TempDir()
				if err := os.Mkdir(filepath.Join(a, "runc"), 0o755); err != nil {
					t.Fatal(err)
				}
				return env{path: a + ":" + b, want: fakeRunc(t, b, 0o755)}
			},
		},
		{
			name: "symlink to /proc/self/exe is skipped for the next on PATH",
			setup: func(t *testing.T) env {
				a, b := t.TempDir(), t.TempDir()
				selfLink(t, a, "/proc/self/exe")
				return env{path: a + ":" + b, want: fakeRunc(t, b, 0o755)}
			},
		},
		{
			name: "symlink to the test binary is skipped for the next on PATH",
			setup: func(t *testing.T) env {
				a, b := t.TempDir(), t.TempDir()
				selfLink(t, a, testBinary(t))
				return env{path: a + ":" + b, want: fakeRunc(t, b, 0o755)}
			},
		},
		{
			name: "symlink to this binary is skipped for a fallback",
			setup: func(t *testing.T) env {
				a, b := t.TempDir(), t.TempDir()
				selfLink(t, a, "/proc/self/exe")
				return env{path: a, fallback: []string{filepath.Join(b, "runc")}, want: fakeRunc(t, b, 0o755)}
			},
		},
		{
			name: "only this binary",
			setup: func(t *testing.T) env {
				a := t.TempDir()
				link := selfLink(t, a, "/proc/self/exe")
				return env{path: a, fallback: []string{}, mention: []string{link}}
			},
			is: ErrSelf,
		},
		{
			name: "nothing anywhere",
			setup: func(t *testing.T) env {
				return env{path: t.TempDir(), fallback: []string{filepath.Join(t.TempDir(), "runc")}}
			},
			mention: []string{"not found"},
		},
		{
			name: "empty PATH uses the fallbacks",
			setup: func(t *testing.T) env {
				a, b := t.TempDir(), t.TempDir()
				return env{path: "", fallback: []string{filepath.Join(a, "runc"), filepath.Join(b, "runc")}, want: fakeRunc(t, b, 0o755)}
			},
		},
		{
			name: "empty and relative PATH entries are skipped: no runc from the working directory",
			setup: func(t *testing.T) env {
				dir := t.TempDir()
				if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
					t.Fatal(err)
				}
				fakeRunc(t, dir, 0o755)
				fakeRunc(t, filepath.Join(dir, "bin"), 0o755)
				t.Chdir(dir)
				return env{path: ":bin:./bin:/nonexistent", fallback: []string{}}
			},
			mention: []string{"real runc not found"},
		},
		{
			name: "an absolute entry after skipped ones",
			setup: func(t *testing.T) env {
				dir, abs := t.TempDir(), t.TempDir()
				fakeRunc(t, dir, 0o755)
				t.Chdir(dir)
				return env{path: ":.:" + abs, fallback: []string{}, want: fakeRunc(t, abs, 0o755)}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := c.setup(t)
			if e.fallback != nil {
				saved := fallbackPaths
				fallbackPaths = e.fallback
				t.Cleanup(func() { fallbackPaths = saved })
			}
			got, err := Find(e.configured, e.path)
			if e.want != "" {
				if err != nil {
					t.Fatalf("Find(%q, %q): %v", e.configured, e.path, err)
				}
				if got != e.want {
					t.Errorf("Find(%q, %q) = %q, want %q", e.configured, e.path, got, e.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Find(%q, %q) = %q, want an error", e.configured, e.path, got)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q does not wrap %v", err, c.is)
			}
			if c.is == nil && errors.Is(err, ErrSelf) {
				t.Errorf("error %q wraps ErrSelf", err)
			}
			for _, s := range append(c.mention, e.mention...) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

// With the machine's own fallbacks: a runc on PATH that is this binary is
// never the answer. (This host may have a real runc in /usr/sbin, so the
// answer is that one or ErrSelf, never the symlink.)
func TestFindSkipsSelfWithRealFallbacks(t *testing.T) {
	for _, c := range []struct{ name, target string }{
		{"symlink to /proc/self/exe", "/proc/self/exe"},
		{"symlink to the test binary", testBinary(t)},
	} {
		t.Run(c.name, func(t *testing.T) {
			link := selfLink(t, t.TempDir(), c.target)
			got, err := Find("", filepath.Dir(link))
			switch {
			case err != nil:
				if !errors.Is(err, ErrSelf) || !strings.Contains(err.Error(), link) {
					t.Errorf("Find = %v, want ErrSelf naming %s", err, link)
				}
			case got == link:
				t.Errorf("Find returned the symlink to this binary")
			case !slices.Contains(fallbackPaths, got):
				t.Errorf("Find = %q, not one of %q", got, fallbackPaths)
			default:
				self, _ := os.Stat("/proc/self/exe")
				if st, err := os.Stat(got); err != nil || os.SameFile(st, self) {
					t.Errorf("Find = %q, which is this binary (or gone: %v)", got, err)
				}
			}
		})
	}
}
