package libuserns

import (
	"errors"
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// IsUserns checks that path is a user namespace (OpenUserns).
func IsUserns(path string, kind func(os.FileMode) string) error {
	f, err := OpenUserns(path, kind)
	if err != nil {
		return err
	}
	return f.Close()
}

// OpenUserns opens the user namespace at path, once: what path names is
// looked at through an O_PATH descriptor, and opened for the ioctl only
// once it is known to be an nsfs file (a device node swapped in meanwhile
// is never opened, as root), through that descriptor, never the path
// again. The file returned is the namespace that passed the checks. kind
// names a file's type in the error about a path that is no namespace at
// all ("it is a directory").
func OpenUserns(path string, kind func(os.FileMode) string) (*os.File, error) {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		what := "file of another type"
		if fi, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", pfd)); err == nil {
			what = kind(fi.Mode())
		}
		return nil, fmt.Errorf("not a namespace: it is a %s", what)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(pfd, &fs); err != nil {
		return nil, &os.PathError{Op: "fstatfs", Path: path, Err: err}
	}
	if fs.Type != unix.NSFS_MAGIC {
		return nil, errors.New("not a namespace (a regular file)")
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	switch {
	case errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL):
		err = errors.New("not a namespace (a regular file)")
	case err != nil:
		err = os.NewSyscallError("ioctl NS_GET_NSTYPE", err)
	case t != unix.CLONE_NEWUSER:
		err = fmt.Errorf("a namespace of another type (%#x), not a user namespace", t)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ErrOwnUserns: the user namespace is the caller's own.
var ErrOwnUserns = errors.New("it is runc-userns's own user namespace (the host's)")

// Mappings returns the uid and gid mappings of the open user namespace ns
// (OpenUserns), relative to ours: read through a child that joins ns
// itself (joinAndReadMaps), never through a path, and refused by
// ParseNamespaceMaps if they cannot describe it. Our own namespace, which
// cannot be joined and maps everything to itself, is ErrOwnUserns.
func Mappings(ns *os.File) (uid, gid []specs.LinuxIDMapping, err error) {
	var a, b unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &a); err != nil {
		return nil, nil, &os.PathError{Op: "fstat", Path: ns.Name(), Err: err}
	}
	if unix.Stat("/proc/self/ns/user", &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino {
		return nil, nil, ErrOwnUserns
	}
	uidMap, gidMap, err := joinAndReadMaps(ns)
	if err != nil {
		return nil, nil, err
	}
	return ParseNamespaceMaps(uidMap, gidMap)
}
