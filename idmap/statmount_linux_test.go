package idmap

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

func TestSuperOptions(t *testing.T) {
	cases := []struct {
		name    string
		sbFlags uint32
		opts    string
		want    string
	}{
		{"no options", 0, "", "rw"},
		{"read-only", sbRdonly, "", "ro"},
		{"overlay", 0, "lowerdir=/a:/b,upperdir=/u,workdir=/w", "rw,lowerdir=/a:/b,upperdir=/u,workdir=/w"},
		{"superblock flags in mountinfo's order", sbLazytime | sbDirsync | sbSynchronous | sbRdonly, "size=10k", "ro,sync,dirsync,lazytime,size=10k"},
		{"other bits ignored", 0x40000000, "x", "rw,x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := superOptions(c.sbFlags, c.opts); got != c.want {
				t.Errorf("superOptions(%#x, %q) = %q, want %q", c.sbFlags, c.opts, got, c.want)
			}
		})
	}
}

func TestAttrFlags(t *testing.T) {
	cases := []struct {
		attr uint64
		want uintptr
	}{
		{0, 0},
		{unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOEXEC, unix.MS_RDONLY | unix.MS_NOEXEC},
		{unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_RELATIME, unix.MS_NOSUID | unix.MS_NODEV},
		{unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOATIME, 0},
	}
	for _, c := range cases {
		if got := attrFlags(c.attr); got != c.want {
			t.Errorf("attrFlags(%#x) = %#x, want %#x", c.attr, got, c.want)
		}
	}
}

// TestTopMountAtMatchesMountinfo: for every mount point of this process,
// statmount(2) says what mountinfo says (filesystem type, super options,
// the per-mount flags OverlayAt keeps). It needs a kernel with statmount
// and its mount options (Linux 6.10); mounts it answers nothing for (no
// options to report) must still leave enough compared. The comparison
// runs in a private copy of the mount namespace: the other packages'
// tests, run at the same time, mount and unmount in the host's, and a
// mount gone between reading mountinfo and asking statmount failed it.
func TestTopMountAtMatchesMountinfo(t *testing.T) {
	if _, err := topMountAt("/"); errors.Is(err, errNoStatmount) {
		t.Skip("statmount(2) with STATMOUNT_MNT_OPTS needs Linux >= 6.10")
	}
	inFrozenMountNamespace(t, func() {
		f, err := os.Open("/proc/thread-self/mountinfo")
		if err != nil {
			t.Error(err)
			return
		}
		all, err := mountinfo.GetMountsFromReader(f, nil)
		f.Close()
		if err != nil {
			t.Error(err)
			return
		}
		at := map[string][]*mountinfo.Info{}
		for _, m := range all {
			at[m.Mountpoint] = append(at[m.Mountpoint], m)
		}
		compared := 0
		for point, mounts := range at {
			if real, err := filepath.EvalSymlinks(point); err != nil || real != point {
				continue // under a mount made later, or reached by a symlink
			}
			got, err := topMountAt(point)
			if errors.Is(err, errNoStatmount) {
				continue
			}
			want := topEntry(mounts)
			if err != nil || got == nil {
				t.Errorf("topMountAt(%s) = %v, %v; mountinfo has %s %q", point, got, err, want.fsType, want.vfsOptions)
				continue
			}
			if *got != *want {
				t.Errorf("%s: statmount says %+v, mountinfo %+v", point, *got, *want)
			}
			compared++
		}
		t.Logf("%d of %d mount points compared", compared, len(at))
		if compared < 3 {
			t.Errorf("only %d of %d mount points compared", compared, len(at))
		}
	})
}

// inFrozenMountNamespace runs f on a thread of its own in a private copy
// of this process's mount namespace, which no mount or unmount elsewhere
// reaches. The thread is never unlocked, so it exits with the namespace.
// f reports with t.Error, not t.Fatal: it runs off the test's goroutine.
func inFrozenMountNamespace(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			t.Errorf("unshare(CLONE_NEWNS): %v", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Errorf("make the namespace's copy private: %v", err)
			return
		}
		f()
	}()
	<-done
}

// TestOverlayAtStatmount: an overlay with several lower layers, options
// of its own and per-mount flags reads the same through statmount(2) as
// through mountinfo, and a directory inside it is no overlay mount point.
func TestOverlayAtStatmount(t *testing.T) {
	dir, merged := mountOverlay(t, []string{"l1", "l2"}, unix.MS_NOSUID|unix.MS_NODEV, "redirect_dir=on")
	if err := os.Mkdir(filepath.Join(merged, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	got, err := topMountAt(merged)
	if err != nil || got == nil {
		t.Fatalf("topMountAt = %v, %v", got, err)
	}
	want, err := topMountInfo(merged)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *want {
		t.Errorf("statmount says %+v, mountinfo %+v", *got, *want)
	}
	o, err := OverlayAt(merged)
	if err != nil {
		t.Fatal(err)
	}
	wantO := &Overlay{Lower: []string{dir + "/l1", dir + "/l2"}, Upper: dir + "/upper", Work: dir + "/work", Other: []string{"redirect_dir=on"}, Flags: unix.MS_NOSUID | unix.MS_NODEV}
	o.Other = onlyOption(o.Other, "redirect_dir=on")
	if !reflect.DeepEqual(o, wantO) {
		t.Errorf("OverlayAt = %+v, want %+v", o, wantO)
	}
	if m, err := topMountAt(filepath.Join(merged, "sub")); err != nil || m != nil {
		t.Errorf("topMountAt of a directory inside the overlay = %+v, %v; want nil, nil", m, err)
	}
	if _, err := OverlayAt(filepath.Join(merged, "sub")); !errors.Is(err, ErrNotOverlay) {
		t.Errorf("OverlayAt of a directory inside the overlay: %v, want ErrNotOverlay", err)
	}
}

// mountOverlay mounts an overlay of lower layers lowers (directories made
// in a temp dir, with upper, work and merged), with flags and the extra
// options extra, unmounted at the test's end; it skips where the kernel
// or the user cannot.
func mountOverlay(tb testing.TB, lowers []string, flags uintptr, extra string) (dir, merged string) {
	tb.Helper()
	if os.Getuid() != 0 {
		tb.Skip("mounting an overlay needs root")
	}
	if _, err := topMountAt("/"); errors.Is(err, errNoStatmount) {
		tb.Skip("statmount(2) with STATMOUNT_MNT_OPTS needs Linux >= 6.10")
	}
	dir = tb.TempDir()
	for _, d := range append([]string{"upper", "work", "merged"}, lowers...) {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for i, l := range lowers {
		lowers[i] = filepath.Join(dir, l)
	}
	merged = filepath.Join(dir, "merged")
	data := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + dir + "/upper,workdir=" + dir + "/work"
	if extra != "" {
		data += "," + extra
	}
	if err := unix.Mount("overlay", merged, "overlay", flags, data); err != nil {
		tb.Fatalf("mount overlay: %v", err)
	}
	tb.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
	return dir, merged
}

// onlyOption keeps of opts the one named (the kernel adds defaults of
// its own, which vary with its configuration).
func onlyOption(opts []string, name string) []string {
	for _, o := range opts {
		if o == name {
			return []string{o}
		}
	}
	return nil
}

// BenchmarkTopMount: the lookup OverlayAt makes for an overlay rootfs,
// through statmount(2) and through mountinfo, whose cost grows with the
// mounts in the namespace (run it under `unshare -m` after mounting many).
func BenchmarkTopMount(b *testing.B) {
	_, merged := mountOverlay(b, []string{"l"}, 0, "")
	for name, lookup := range map[string]func(string) (*mountEntry, error){"statmount": topMountAt, "mountinfo": topMountInfo} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if m, err := lookup(merged); err != nil || m == nil || m.fsType != "overlay" {
					b.Fatalf("%v, %v", m, err)
				}
			}
		})
	}
}
