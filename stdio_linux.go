package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// guardStdio keeps the runtime from changing the host's device nodes
// through the container's stdio. crun (1.8.1 here) fchowns fds 0-2 to the
// container's root when the container has a user namespace; when stdio is
// the host's /dev/null (podman --log-driver none, a test's </dev/null) the
// host's /dev/null becomes the pod's. Each of fds 0-2 that is a character
// device other than a pty slave is replaced, before the runtime starts, by
// an open of a private node of the same device (same major and minor, so
// the same behaviour: reads of /dev/null see EOF, writes vanish): a chown
// then changes only the private node. The node is made on a tmpfs mounted
// in a mount namespace of one thread that dies right after, so nothing
// appears on the host and no filesystem mounted nodev is in the way.
// Pty slaves are left alone: opening one through a node outside its devpts
// instance fails, and a caller's terminal is what `-t` runtimes chown anyway.
func guardStdio() ([]int, error) {
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
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the goroutine's end ends the thread, and with it
		// the private mount namespace.
		runtime.LockOSThread()
		errc <- privateNodes(fds, rdevs)
	}()
	if err := <-errc; err != nil {
		return nil, fmt.Errorf("stdio is a host device node and could not be replaced by a private one (the runtime might chown the host's node): %w; run the container with stdio on pipes or files", err)
	}
	return fds, nil
}

// privateNodes runs on a locked thread that it moves to a private mount
// namespace.
func privateNodes(fds []int, rdevs []uint64) error {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return os.NewSyscallError("unshare", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	// /dev always exists; the tmpfs hides it only from this thread. The
	// name says, in the runtime's /proc/<pid>/fd, what the fd is.
	dir := "/dev"
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=16k,mode=0700"); err != nil {
		return fmt.Errorf("mount private tmpfs: %w", &os.PathError{Op: "mount", Path: dir, Err: err})
	}
	for i, fd := range fds {
		path := filepath.Join(dir, fmt.Sprintf("runc-userns-stdio-%d", fd))
		if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(rdevs[i])); err != nil {
			return &os.PathError{Op: "mknod", Path: path, Err: err}
		}
		if err := unix.Chmod(path, 0o666); err != nil { // past the umask
			return &os.PathError{Op: "chmod", Path: path, Err: err}
		}
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return os.NewSyscallError("fcntl", err)
		}
		nfd, err := unix.Open(path, fl&(unix.O_ACCMODE|unix.O_APPEND)|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: path, Err: err}
		}
		err = unix.Dup3(nfd, fd, 0) // inheritable, like the fd it replaces
		unix.Close(nfd)
		if err != nil {
			return os.NewSyscallError("dup3", err)
		}
	}
	return nil
}
