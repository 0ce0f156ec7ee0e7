package idmap

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/libuserns"
)

func TestResolveLayers(t *testing.T) {
	// A containerd snapshots directory: layers 1-3, upper and work in 4.
	// A containers/storage overlay directory: links l/A and l/B to layers
	// a and b, upper and work in c, mounted at c/merged.
	tmp := t.TempDir()
	snap, cs := filepath.Join(tmp, "snapshots"), filepath.Join(tmp, "overlay")
	for _, d := range []string{"1/fs", "2/fs", "3/fs", "4/fs", "4/work"} {
		if err := os.MkdirAll(filepath.Join(snap, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"a/diff", "b/diff", "c/diff", "c/work", "c/merged", "l"} {
		if err := os.MkdirAll(filepath.Join(cs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"A": "../a/diff", "B": "../b/diff"} {
		if err := os.Symlink(to, filepath.Join(cs, "l", link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(snap, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	upper, work := filepath.Join(snap, "4/fs"), filepath.Join(snap, "4/work")
	cases := []struct {
		name       string
		o          Overlay
		mountpoint string
		want       Overlay
		wantErr    string
	}{
		{
			name: "absolute layers stay as they are",
			o:    Overlay{Lower: []string{"/x/2", "/x/1"}, Upper: "/nonexistent/u", Work: "/nonexistent/w"},
			want: Overlay{Lower: []string{"/x/2", "/x/1"}, Upper: "/nonexistent/u", Work: "/nonexistent/w"},
		},
		{
			name: "containerd: relative lowers, from the upper layer's grandparent",
			o:    Overlay{Lower: []string{"3/fs", "2/fs", "1/fs"}, Upper: upper, Work: work},
			want: Overlay{Lower: []string{snap + "/3/fs", snap + "/2/fs", snap + "/1/fs"}, Upper: upper, Work: work},
		},
		{
			name: "mixed",
			o:    Overlay{Lower: []string{"3/fs", "/x/1"}, Upper: upper, Work: work},
			want: Overlay{Lower: []string{snap + "/3/fs", "/x/1"}, Upper: upper, Work: work},
		},
		{
			name:       "containers/storage: everything relative, from the mount point's grandparent",
			o:          Overlay{Lower: []string{"l/A", "l/B"}, Upper: "c/diff", Work: "c/work"},
			mountpoint: filepath.Join(cs, "c/merged"),
			want:       Overlay{Lower: []string{cs + "/l/A", cs + "/l/B"}, Upper: cs + "/c/diff", Work: cs + "/c/work"},
		},
		{
			name:       "containers/storage mounted elsewhere",
			o:          Overlay{Lower: []string{"l/A"}, Upper: "c/diff", Work: "c/work"},
			mountpoint: "/nonexistent/c/merged",
			wantErr:    `the upper layer is the relative path "c/diff" (containerd and containers/storage write them so`,
		},
		{
			name:    "a relative layer that is not there",
			o:       Overlay{Lower: []string{"9/fs"}, Upper: upper, Work: work},
			wantErr: `lower layer 0 is the relative path "9/fs" (containerd and containers/storage write them so`,
		},
		{
			name:    "a relative layer that is no directory",
			o:       Overlay{Lower: []string{"2/fs", "file"}, Upper: upper, Work: work},
			wantErr: `lower layer 1 is the relative path "file"`,
		},
		{
			name:    "on another filesystem than the upper layer",
			o:       Overlay{Lower: []string{"../../../../../../../../../../proc"}, Upper: upper, Work: work},
			wantErr: "is not a directory of the upper layer's filesystem",
		},
		{
			name:    "no upper layer to place them by",
			o:       Overlay{Lower: []string{"2/fs", "1/fs"}},
			wantErr: `lower layers "2/fs:1/fs" are relative paths and there is no upper layer to place them by`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Lower = append([]string(nil), c.o.Lower...)
			err := resolveLayers(&o, c.mountpoint)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("resolveLayers(%+v) = %v, want an error with %q", c.o, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o, c.want) {
				t.Fatalf("resolveLayers(%+v) = %+v, want %+v", c.o, o, c.want)
			}
		})
	}
}

func TestMountFlags(t *testing.T) {
	tests := []struct {
		opts string
		want uintptr
	}{
		{"rw,relatime", 0},
		{"ro,nosuid,nodev,noexec,relatime", unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{"rw,nosuid,nodev", unix.MS_NOSUID | unix.MS_NODEV},
		// Whole options only: neither "rootcontext" nor "nosuidx" is one.
		{"rw,rootcontext=x,nosuidx,noexec", unix.MS_NOEXEC},
		{"", 0},
	}
	for _, tt := range tests {
		if got := mountFlags(tt.opts); got != tt.want {
			t.Errorf("mountFlags(%q) = %#x, want %#x", tt.opts, got, tt.want)
		}
	}
}

func TestPropagationConstants(t *testing.T) {
	if msPrivate != unix.MS_PRIVATE || msSlave != unix.MS_SLAVE {
		t.Fatalf("msPrivate %#x, msSlave %#x; want MS_PRIVATE %#x, MS_SLAVE %#x", msPrivate, msSlave, unix.MS_PRIVATE, unix.MS_SLAVE)
	}
}

func TestShiftOwnersStopsAtMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown and bind mounts")
	}
	// root/ holds the image's files; host/ is beside it on the same
	// filesystem and is bind-mounted into root/ (a file and a directory),
	// which a device comparison cannot tell from the image.
	base := t.TempDir()
	root, host := filepath.Join(base, "root"), filepath.Join(base, "host")
	for _, d := range []string{root + "/etc", root + "/mnt", host + "/dir"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{root + "/etc/passwd", root + "/etc/hosts", host + "/hosts", host + "/dir/file"} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range [][2]string{{host + "/hosts", root + "/etc/hosts"}, {host + "/dir", root + "/mnt"}} {
		if err := unix.Mount(b[0], b[1], "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(b[1], unix.MNT_DETACH) })
	}
	n, err := ShiftOwners(root, 3000000000, 65536)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 { // root, etc, etc/passwd
		t.Errorf("ShiftOwners changed %d entries, want 3", n)
	}
	for path, want := range map[string]uint32{root + "/etc/passwd": 3000000000, host + "/hosts": 0, host + "/dir": 0, host + "/dir/file": 0} {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != want || st.Gid != want {
			t.Errorf("%s owned by %d:%d after ShiftOwners, want %d", path, st.Uid, st.Gid, want)
		}
	}
}

func TestIdmapOverAnIdmappedMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: user namespaces and mounts")
	}
	// src/inner is itself an idmapped mount, as another pod's staging
	// mount is below /run while that pod is created.
	base := t.TempDir()
	src, inner := filepath.Join(base, "src"), filepath.Join(base, "src", "inner")
	if err := os.MkdirAll(filepath.Join(base, "innersrc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	m := libuserns.PodMappings(3000000000, 65536)
	ns, err := libuserns.NewUserns(m, m)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := Probe(base, int(ns.Fd()), TopOnly); errors.Is(err, ErrUnsupported) {
		t.Skipf("the kernel cannot idmap %s (%s), the test's temp dir: %v", base, FSType(base), err)
	}
	if err := Mount(filepath.Join(base, "innersrc"), inner, int(ns.Fd()), TopOnly); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(inner, unix.MNT_DETACH) })
	err = Probe(src, int(ns.Fd()), Tree)
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), "idmapped already") {
		t.Fatalf("Probe of a tree holding an idmapped mount = %v, want ErrUnsupported for EPERM, with the hint", err)
	}
	// Not recursive, the submount is not part of the clone.
	if err := Probe(src, int(ns.Fd()), TopOnly); err != nil {
		t.Fatalf("Probe of the tree alone = %v", err)
	}
}
