package libuserns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// NewUserns returns an fd (O_RDONLY|O_CLOEXEC) of a new user namespace
// with the given mappings.
func NewUserns(uid, gid []specs.LinuxIDMapping) (*os.File, error) {
	f, _, _, err := newUserns(uid, gid, false)
	if err != nil {
		return nil, fmt.Errorf("create user namespace with uid map %q, gid map %q: %w (%s)", FormatMappings(uid), FormatMappings(gid), err, usernsHint(err))
	}
	return f, nil
}

// PodNamespaces are a pod's user namespace and, when asked for, an IPC and
// a UTS namespace that it owns (NewPodNamespaces).
type PodNamespaces struct {
	User, IPC, UTS *os.File // IPC and UTS nil unless asked for
}

// Close closes every namespace fd that is set.
func (n PodNamespaces) Close() {
	for _, f := range []*os.File{n.User, n.IPC, n.UTS} {
		if f != nil {
			f.Close()
		}
	}
}

// NewPodNamespaces is NewUserns, and with ipcUTS also an IPC and a UTS
// namespace owned by the new user namespace, made by the same clone (the
// kernel creates the user namespace first and gives it the others): the
// pod's root holds CAP_SYS_ADMIN over them, which it does not over the
// IPC and UTS namespaces a CRI runtime made in the host's user namespace
// (CRI-O's pinns). Go cannot make them: a namespace owned by another user
// namespace is made by a process inside it, and a multi-threaded process
// cannot join a user namespace.
func NewPodNamespaces(uid, gid []specs.LinuxIDMapping, ipcUTS bool) (PodNamespaces, error) {
	u, i, h, err := newUserns(uid, gid, ipcUTS)
	if err != nil {
		what := "user namespace"
		if ipcUTS {
			what = "user, IPC and UTS namespaces"
		}
		return PodNamespaces{}, fmt.Errorf("create %s with uid map %q, gid map %q: %w (%s)", what, FormatMappings(uid), FormatMappings(gid), err, usernsHint(err))
	}
	return PodNamespaces{User: u, IPC: i, UTS: h}, nil
}

// usernsHint says what to check after newUserns failed with err: the
// step that failed, and its errno, tell a refused mapping from a limit
// reached or a policy.
func usernsHint(err error) string {
	var pe *os.PathError
	switch {
	case errors.As(err, &pe) && strings.HasSuffix(pe.Path, "_map"):
		return "the kernel refused the mapping: its ranges must not overlap, each needs a size, host IDs stay below 4294967295, and there are at most 340 ranges"
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EUSERS):
		return "a limit on user namespaces was reached: raise user.max_user_namespaces (sysctl), and run `runc-userns pool gc` to drop the namespaces of pods that are gone"
	case errors.Is(err, unix.EPERM):
		return "this process may not create user namespaces: check for a seccomp profile or an LSM policy on the runtime (AppArmor, SELinux), and that it does not run in a chroot"
	case errors.Is(err, unix.ENOMEM), errors.Is(err, unix.EAGAIN):
		return "the node is short of memory or processes: check its free memory and pids limits"
	}
	return "check user.max_user_namespaces and the kernel log"
}

// Pin bind-mounts the namespace ns (any type) on path (created, mode 0444) so that the
// namespace lives on without processes. Like any mount made under a shared
// parent (a host whose /run is shared), it is copied to that parent's
// peers; Unpin's unlink removes those copies too (Linux >= 3.18 detaches
// every mount on an unlinked mountpoint, in all mount namespaces).
func Pin(ns *os.File, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return fmt.Errorf("pin namespace: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("pin namespace: %w", err)
	}
	f.Close()
	src := fmt.Sprintf("/proc/self/fd/%d", ns.Fd())
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return fmt.Errorf("pin namespace on %s: %w", path, &os.PathError{Op: "mount", Path: path, Err: err})
	}
	return nil
}

// OpenPinned opens a pinned namespace and checks that it is a user
// namespace (a plain file or another namespace type is refused).
func OpenPinned(path string) (*os.File, error) {
	return OpenPinnedType(path, unix.CLONE_NEWUSER)
}

// OpenPinnedType opens a pinned namespace and checks that it is one of
// type nstype (a CLONE_NEW* flag): a plain file or another namespace type
// is refused.
func OpenPinnedType(path string, nstype int) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	t, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_NSTYPE)
	if err != nil || t != nstype {
		f.Close()
		if err == nil {
			err = fmt.Errorf("namespace type %#x", t)
		}
		return nil, fmt.Errorf("%s is not %s namespace: %w", path, nsTypeName(nstype), err)
	}
	return f, nil
}

// OpenNS opens the namespace file at path, a caller's spec's, and checks
// that it is an nsfs file of type nstype (a CLONE_NEW* flag) before it is
// used: O_NONBLOCK and O_NOCTTY, so that a FIFO or a terminal put there
// neither blocks nor becomes ours.
func OpenNS(path string, nstype int) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "fstatfs", Path: path, Err: err}
	}
	if fs.Type != unix.NSFS_MAGIC {
		f.Close()
		return nil, fmt.Errorf("%s is not a namespace file (filesystem type %#x, not nsfs): the namespace is gone or its bind mount was removed", path, fs.Type)
	}
	if t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE); err != nil || t != nstype {
		f.Close()
		if err == nil {
			err = fmt.Errorf("namespace type %#x", t)
		}
		return nil, fmt.Errorf("%s is not %s namespace: %w", path, nsTypeName(nstype), err)
	}
	return f, nil
}

func nsTypeName(nstype int) string {
	switch nstype {
	case unix.CLONE_NEWUSER:
		return "a user"
	case unix.CLONE_NEWIPC:
		return "an IPC"
	case unix.CLONE_NEWUTS:
		return "a UTS"
	}
	return fmt.Sprintf("a %#x", nstype)
}

// Unpin detaches the pin at path and removes the file. A path that is gone
// or not mounted is fine: unpinning is idempotent.
func Unpin(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unpin namespace: %w", &os.PathError{Op: "umount", Path: path, Err: err})
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unpin namespace: %w", err)
	}
	return nil
}

// OwnedBy reports whether the namespace ns (an open nsfs file, any type)
// is owned by the user namespace userns (NS_GET_USERNS, Linux >= 4.9).
func OwnedBy(ns, userns *os.File) (bool, error) {
	owner, err := unix.IoctlRetInt(int(ns.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return false, fmt.Errorf("owner of namespace %s: %w", ns.Name(), os.NewSyscallError("ioctl NS_GET_USERNS", err))
	}
	defer unix.Close(owner)
	var a, b unix.Stat_t
	if err := unix.Fstat(owner, &a); err != nil {
		return false, err
	}
	if err := unix.Fstat(int(userns.Fd()), &b); err != nil {
		return false, err
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}
