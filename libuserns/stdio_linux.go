package libuserns

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// GuardStdio keeps the runtime from changing the host's device nodes
// through the container's stdio. crun (1.8.1 here) fchowns fds 0-2 to the
// container's root when the container has a user namespace; when stdio is
// the host's /dev/null (podman --log-driver none, containerd's null IO for
// a pod's sandbox, a test's </dev/null) the host's /dev/null becomes the
// pod's. Each of fds 0-2 that is a character device other than a pty
// slave is replaced, before the runtime starts, by an open of a private
// node of the same device (same major and minor, so the same behaviour:
// reads of /dev/null see EOF, writes vanish): a chown then changes only the
// private node. Pty slaves are left alone: opening one through a node
// outside its devpts instance fails, and a caller's terminal is what `-t`
// runtimes chown anyway.
//
// runc does not need it (runc.Features.StdioChownedInside): its init
// chowns stdio from inside the user namespace, where a node owned by an ID
// the namespace does not map cannot be chowned, and it skips /dev/null.
// Making the nodes costs ~1.5 ms a create on the VM measured, so the
// create calls it only for other runtimes; hostdev.bats checks both. A
// caller that brings its own mappings (of host IDs that own device nodes,
// say) gets from runc what runc alone would give it.
func GuardStdio() ([]int, error) {
	var fds []int
	var rdevs []uint64
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			continue // closed: nothing to guard
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		if major := unix.Major(st.Rdev); major >= 136 && major <= 143 {
			continue // Unix98 pty slave
		}
		fds, rdevs = append(fds, fd), append(rdevs, st.Rdev)
	}
	if len(fds) == 0 {
		return nil, nil
	}
	if err := privateNodes(fds, rdevs); err != nil {
		return nil, fmt.Errorf("stdio is a host device node and could not be replaced by a private one (the runtime might chown the host's node): %w; run the container with stdio on pipes or files", err)
	}
	return fds, nil
}

// privateNodes makes the nodes on a tmpfs that is never attached anywhere
// (fsopen + fsmount: a detached mount, reached only through its fd), and
// dup3s an open of each over its fd. Nothing appears on the host, no
// filesystem mounted nodev is in the way, and unlike a private mount
// namespace (unshare copies every mount of the host, which grows with the
// pods on a node) it costs the same on any node. The tmpfs goes away with
// the last of the runtime's fds on it.
func privateNodes(fds []int, rdevs []uint64) error {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("fsopen tmpfs", err)
	}
	defer unix.Close(fsfd)
	for _, o := range [][2]string{{"size", "16k"}, {"mode", "0700"}} {
		if err := unix.FsconfigSetString(fsfd, o[0], o[1]); err != nil {
			return os.NewSyscallError("fsconfig tmpfs "+o[0], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return os.NewSyscallError("fsconfig tmpfs create", err)
	}
	mnt, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return os.NewSyscallError("fsmount tmpfs", err)
	}
	// Closing the last fd on the detached mount tree dissolves it, and
	// that waits for an RCU grace period (0.2-0.9 ms on the VM measured,
	// more under load): on another thread, while the runtime starts.
	// The fd is close-on-exec, so the runtime never holds it either way.
	defer func() { go unix.Close(mnt) }()
	for i, fd := range fds {
		// The name says, in the runtime's /proc/<pid>/fd, what the fd is.
		name := fmt.Sprintf("runc-userns-stdio-%d", fd)
		if err := unix.Mknodat(mnt, name, unix.S_IFCHR|0o666, int(rdevs[i])); err != nil {
			return &os.PathError{Op: "mknod", Path: "/" + name, Err: err}
		}
		if err := unix.Fchmodat(mnt, name, 0o666, 0); err != nil { // past the umask
			return &os.PathError{Op: "chmod", Path: "/" + name, Err: err}
		}
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return os.NewSyscallError("fcntl", err)
		}
		nfd, err := unix.Openat(mnt, name, fl&(unix.O_ACCMODE|unix.O_APPEND)|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: "/" + name, Err: err}
		}
		err = unix.Dup3(nfd, fd, 0) // inheritable, like the fd it replaces
		unix.Close(nfd)
		if err != nil {
			return os.NewSyscallError("dup3", err)
		}
	}
	return nil
}
