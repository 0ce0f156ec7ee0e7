package state

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// LockPods takes PodsLock exclusively, waiting for it, and returns its
// release. It orders the pool's changes to a pod's range with the pins
// that go with it: a pod whose first container takes its range (CRI-O's
// drop_infra_ctr, no sandbox container) has no single create that makes
// its pins, and without the lock one of its containers could take a
// fresh range while the pod's last container, deleted, unpins the old
// namespaces under it (Leave, then UnpinPod), or two of them could pin
// two user namespaces for one range. It is taken before the pool's own
// lock, never while holding it, and held for a pool call and a pin (a
// few milliseconds). The file is never removed, as the pool's lock is not.
func (l Layout) LockPods() (unlock func(), err error) {
	if err := os.MkdirAll(string(l), 0o711); err != nil {
		return nil, fmt.Errorf("pods lock: %w", err)
	}
	path := l.PodsLock()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pods lock: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pods lock: %w", &os.PathError{Op: "flock", Path: path, Err: err})
	}
	return func() { unix.Close(fd) }, nil
}
