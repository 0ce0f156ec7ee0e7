package mounttest

import (
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Below counts the mounts at or below dir.
func Below(t *testing.T, dir string) int {
	t.Helper()
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// UnmountBelow detaches what a failed test left mounted below dir,
// deepest first.
func UnmountBelow(t *testing.T, dir string) {
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Error(err)
		return
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if strings.HasPrefix(ms[i].Mountpoint, dir) {
			_ = unix.Unmount(ms[i].Mountpoint, unix.MNT_DETACH)
		}
	}
}
