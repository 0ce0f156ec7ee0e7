package state

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/mounttest"
)

// TestDetachStaged: whatever a create staged, below the container
// directory made a mount first (stageContainerDir: the rootfs, the entries,
// a container:<ID> target's pin), with StageDir over each staging directory
// (an older create's layout) or as still older creates did (each entry a
// mount of its own in a plain directory), nothing of it is mounted once
// DetachStaged returns, and the files and directories stay. A StageDir
// over an older create's entries (a killed create's leftovers) needs the
// thorough form.
func TestDetachStaged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: bind mounts")
	}
	cases := []struct {
		name     string
		older    bool // entries mounted one by one in a plain directory
		cdir     bool // the container directory a StageDir before anything is mounted
		cdirOver bool // the container directory a StageDir over what is mounted
		stageDir bool // then a StageDir over the staging directories
		stacked  bool // the rootfs mounted twice over itself
		pin      bool // a file's bind in the container directory
		thorough bool
	}{
		{name: "container directory staged", cdir: true},
		{name: "container directory staged, stacked rootfs and a pin", cdir: true, stacked: true, pin: true},
		{name: "container directory staged, thorough", cdir: true, pin: true, thorough: true},
		{name: "container directory staged over an older create's entries, thorough", older: true, cdirOver: true, thorough: true},
		{name: "StageDir", stageDir: true},
		{name: "older create, an entry per mount", older: true},
		{name: "StageDir, stacked rootfs", stageDir: true, stacked: true},
		{name: "StageDir over an older create's entries, thorough", older: true, stageDir: true, thorough: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			src := filepath.Join(base, "src")
			lay := Layout(filepath.Join(base, "state"))
			root, id := "/run/test-root", "c1"
			cdir := lay.ContainerDir(root, id)
			for _, d := range []string{src, lay.StagedRootfs(root, id), lay.MountsDir(root, id), lay.LayersDir(root, id)} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(src, "file"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mounttest.UnmountBelow(t, base) })
			if c.cdir {
				if err := idmap.StageDir(cdir); err != nil {
					t.Fatal(err)
				}
			}
			bind := func(dst string) {
				t.Helper()
				if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
					t.Fatal(err)
				}
			}
			entries := func() {
				t.Helper()
				for i := 0; i < 3; i++ {
					dst := lay.StagedMount(root, id, i)
					if err := os.Mkdir(dst, 0o755); err != nil && !os.IsExist(err) {
						t.Fatal(err)
					}
					bind(dst)
				}
			}
			bind(lay.StagedRootfs(root, id))
			if c.stacked {
				bind(lay.StagedRootfs(root, id))
			}
			if c.older {
				entries()
			}
			if c.stageDir {
				for _, d := range []string{lay.MountsDir(root, id), lay.LayersDir(root, id)} {
					if err := idmap.StageDir(d); err != nil {
						t.Fatal(err)
					}
				}
				entries()
			}
			if c.cdir && !c.older {
				entries()
			}
			if c.pin {
				pin := filepath.Join(cdir, "pidns")
				if err := os.WriteFile(pin, nil, 0o444); err != nil {
					t.Fatal(err)
				}
				if err := unix.Mount(filepath.Join(src, "file"), pin, "", unix.MS_BIND, ""); err != nil {
					t.Fatal(err)
				}
			}
			if c.cdirOver {
				if err := idmap.StageDir(cdir); err != nil {
					t.Fatal(err)
				}
			}
			if n := mounttest.Below(t, cdir); n == 0 {
				t.Fatal("nothing staged: the test set up nothing to detach")
			}
			if err := DetachStaged(cdir, c.thorough); err != nil {
				t.Fatalf("DetachStaged: %v", err)
			}
			if n := mounttest.Below(t, cdir); n != 0 {
				t.Errorf("%d mounts below %s after DetachStaged, want none", n, cdir)
			}
			for _, p := range []string{lay.StagedRootfs(root, id), lay.StagedMount(root, id, 2)} {
				if st, err := os.Stat(p); err != nil || !st.IsDir() {
					t.Errorf("%s after DetachStaged: %v; want the directory kept", p, err)
				}
			}
		})
	}
}
