package netns

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// ErrChanged: the path names another network namespace than the one
// recorded for the container.
var ErrChanged = errors.New("network namespace changed")

// ID names a namespace: the nsfs device and inode of its file.
type ID struct {
	Dev uint64
	Ino uint64
}

func (id ID) String() string { return fmt.Sprintf("%d:%d", id.Dev, id.Ino) }

// Open opens the network namespace file at path and returns its ID. The
// open neither waits (a FIFO at path) nor makes a terminal ours; only an
// nsfs file of a network namespace is one: a spec's path names anything
// its writer chose.
func Open(path string) (*os.File, ID, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, ID{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, ID{}, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		f.Close()
		return nil, ID{}, &os.PathError{Op: "fstatfs", Path: path, Err: err}
	}
	if fs.Type != unix.NSFS_MAGIC {
		f.Close()
		return nil, ID{}, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a namespace file (filesystem type %#x, not nsfs): the namespace is gone or its bind mount was removed", fs.Type)}
	}
	if t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE); err != nil || t != unix.CLONE_NEWNET {
		f.Close()
		if err == nil {
			err = fmt.Errorf("a namespace of type %#x, not a network namespace", t)
		}
		return nil, ID{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return f, ID{Dev: st.Dev, Ino: st.Ino}, nil
}

// Enter locks the calling goroutine to its thread and moves the thread into
// the network namespace at path. A non-zero want must match the
// namespace's ID. restore moves the thread back and unlocks it.
func Enter(path string, want ID) (restore func() error, id ID, err error) {
	target, id, err := Open(path)
	if err != nil {
		return nil, ID{}, err
	}
	defer target.Close()
	if want != (ID{}) && id != want {
		return nil, id, fmt.Errorf("%s is namespace %s, not %s: %w", path, id, want, ErrChanged)
	}
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, id, err
	}
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		self.Close()
		runtime.UnlockOSThread()
		return nil, id, os.NewSyscallError("setns "+path, err)
	}
	return func() error {
		defer self.Close()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked: Go ends it with the goroutine
			// instead of reusing it in the wrong namespace.
			return os.NewSyscallError("setns back to the wrapper's network namespace", err)
		}
		runtime.UnlockOSThread()
		return nil
	}, id, nil
}
