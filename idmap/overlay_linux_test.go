package idmap

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/libuserns"
)

// TestStageOverlay: the staged overlay sees the upper directory through
// the pod's mapping like the lower layers. An entry host root wrote
// through the original mount before runc ran (podman's /etc/mtab, the
// directories of its mount points) is the pod root's; what the pod's root
// writes lands in the upper directory as host root; nothing of the
// storage is chowned. An original mounted with index=on is refused
// before anything is attached.
func TestStageOverlay(t *testing.T) {
	const podRoot = 3000000000
	dir, merged := mountOverlay(t, []string{"l"}, 0, "index=off")
	if err := os.WriteFile(filepath.Join(merged, "from-host"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := libuserns.PodMappings(podRoot, 65536)
	ns, err := libuserns.NewUserns(m, m)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := Probe(dir, int(ns.Fd()), TopOnly); errors.Is(err, ErrUnsupported) {
		t.Skipf("the kernel cannot idmap %s (%s), the test's temp dir: %v", dir, FSType(dir), err)
	}
	stage := t.TempDir()
	// The pod's root walks to the staged rootfs, as runc does.
	for _, d := range []string{filepath.Dir(stage), stage} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := StageDir(stage); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { DetachAll(stage) })
	// An image file, which the pod's write copies up.
	if err := os.WriteFile(filepath.Join(dir, "l", "image-file"), []byte("i"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := OverlayAt(merged)
	if err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(stage, "rootfs")
	if err := StageOverlay(o, rootfs, filepath.Join(stage, "layers"), int(ns.Fd()), podRoot, podRoot); err != nil {
		t.Fatal(err)
	}
	owner := func(path string) uint32 {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != st.Gid {
			t.Fatalf("%s owned by %d:%d, want one ID for both", path, st.Uid, st.Gid)
		}
		return st.Uid
	}
	for _, p := range []string{rootfs, filepath.Join(rootfs, "from-host")} {
		if got := owner(p); got != podRoot {
			t.Errorf("%s in the staged overlay is %d's, want the pod root's (%d): the upper directory is seen through the mapping", p, got, podRoot)
		}
	}
	// The pod's root writes: on a thread of its own, with its host IDs.
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with its IDs
		unix.Setfsgid(podRoot)
		unix.Setfsuid(podRoot)
		err := os.WriteFile(filepath.Join(rootfs, "by-pod"), []byte("y"), 0o644)
		if err == nil {
			err = os.WriteFile(filepath.Join(rootfs, "image-file"), []byte("changed"), 0o644)
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("the pod's root writes its rootfs: %v", err)
	}
	for _, p := range []string{"upper", "upper/from-host", "upper/by-pod", "upper/image-file", "l/image-file"} {
		if got := owner(filepath.Join(dir, p)); got != 0 {
			t.Errorf("%s is %d's on disk, want host root's: nothing chowned, the pod's writes land as host root", p, got)
		}
	}
	if _, err := os.Stat(WorkDir(o)); err != nil {
		t.Errorf("the staged overlay's own work directory: %v", err)
	}

	withIndex := *o
	withIndex.Other = append(withIndex.Other, "index=on")
	layers := filepath.Join(stage, "layers-index")
	err = StageOverlay(&withIndex, filepath.Join(stage, "rootfs-index"), layers, int(ns.Fd()), podRoot, podRoot)
	if !errors.Is(err, ErrOverlayIndex) {
		t.Fatalf("StageOverlay of an overlay with index=on = %v, want ErrOverlayIndex", err)
	}
	if _, err := os.Stat(layers); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused with index=on, yet %s was made (%v)", layers, err)
	}
}

func TestIndexDefault(t *testing.T) {
	b, err := os.ReadFile(indexParam)
	if err != nil {
		t.Skipf("no %s here: %v", indexParam, err)
	}
	if want := string(b) == "Y\n"; indexDefault() != want {
		t.Fatalf("indexDefault() = %v with %s = %q", indexDefault(), indexParam, b)
	}
}
