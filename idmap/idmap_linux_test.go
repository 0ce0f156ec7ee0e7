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

func TestResolveLowers(t *testing.T) {
	// A containerd snapshots directory: layers 1-3, upper and work in 4.
	snap := filepath.Join(t.TempDir(), "snapshots")
	for _, d := range []string{"1/fs", "2/fs", "3/fs", "4/fs", "4/work"} {
		if err := os.MkdirAll(filepath.Join(snap, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(snap, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	upper, work := filepath.Join(snap, "4/fs"), filepath.Join(snap, "4/work")
	cases := []struct {
		name    string
		o       Overlay
		want    []string
		wantErr string
	}{
		{
			name: "absolute layers stay as they are",
			o:    Overlay{Lower: []string{"/x/2", "/x/1"}, Upper: "/nonexistent/u", Work: "/nonexistent/w"},
			want: []string{"/x/2", "/x/1"},
		},
		{
			name: "relative layers: from the upper layer's grandparent",
			o:    Overlay{Lower: []string{"3/fs", "2/fs", "1/fs"}, Upper: upper, Work: work},
			want: []string{snap + "/3/fs", snap + "/2/fs", snap + "/1/fs"},
		},
		{
			name: "mixed",
			o:    Overlay{Lower: []string{"3/fs", "/x/1"}, Upper: upper, Work: work},
			want: []string{snap + "/3/fs", "/x/1"},
		},
		{
			name:    "a relative layer that is not there",
			o:       Overlay{Lower: []string{"9/fs"}, Upper: upper, Work: work},
			wantErr: `lower layer 0 is the relative path "9/fs" (containerd writes them so`,
		},
		{
			name:    "a relative layer that is no directory",
			o:       Overlay{Lower: []string{"2/fs", "file"}, Upper: upper, Work: work},
			wantErr: `lower layer 1 is the relative path "file"`,
		},
		{
			name:    "on another filesystem than the upper layer",
			o:       Overlay{Lower: []string{"../../../../../../../../../../proc"}, Upper: upper, Work: work},
			wantErr: "is not a directory of its filesystem",
		},
		{
			name:    "no upper layer to place them by",
			o:       Overlay{Lower: []string{"2/fs", "1/fs"}},
			wantErr: `lower layer 0 is the relative path "2/fs" and there is no absolute upper layer to place it by`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Lower = append([]string(nil), c.o.Lower...)
			err := resolveLowers(&o)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("resolveLowers(%q) = %v, want an error with %q", c.o.Lower, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o.Lower, c.want) {
				t.Fatalf("resolveLowers(%q) = %q, want %q", c.o.Lower, o.Lower, c.want)
			}
		})
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
	if err := Mount(filepath.Join(base, "innersrc"), inner, int(ns.Fd()), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(inner, unix.MNT_DETACH) })
	err = Probe(src, int(ns.Fd()), true)
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), "idmapped already") {
		t.Fatalf("Probe of a tree holding an idmapped mount = %v, want ErrUnsupported for EPERM, with the hint", err)
	}
	// Not recursive, the submount is not part of the clone.
	if err := Probe(src, int(ns.Fd()), false); err != nil {
		t.Fatalf("Probe of the tree alone = %v", err)
	}
}
