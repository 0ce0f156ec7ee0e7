package libuserns

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// IsUserns checks that path is a user namespace. What path names is
// looked at through an O_PATH descriptor, and opened for the ioctl only
// once it is known to be an nsfs file: a device node swapped in meanwhile
// is never opened (as root). kind names a file's type in the error about
// a path that is no namespace at all ("it is a directory").
func IsUserns(path string, kind func(os.FileMode) string) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		what := "file of another type"
		if fi, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", pfd)); err == nil {
			what = kind(fi.Mode())
		}
		return fmt.Errorf("not a namespace: it is a %s", what)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(pfd, &fs); err != nil {
		return &os.PathError{Op: "fstatfs", Path: path, Err: err}
	}
	if fs.Type != unix.NSFS_MAGIC {
		return errors.New("not a namespace (a regular file)")
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	if errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL) {
		return errors.New("not a namespace (a regular file)")
	}
	if err != nil {
		return os.NewSyscallError("ioctl NS_GET_NSTYPE", err)
	}
	if t != unix.CLONE_NEWUSER {
		return fmt.Errorf("a namespace of another type (%#x), not a user namespace", t)
	}
	return nil
}
