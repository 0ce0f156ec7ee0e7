package nsjoin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/internal/procfs"
)

// testHookOpened, when set by a test, runs after the target's namespaces
// are open and before Resolve checks that its init still lives.
var testHookOpened func(pid int)

// maxMapSize bounds a uid_map or gid_map (340 lines of 3 x 10 digits).
const maxMapSize = 16 << 10

// Resolve resolves o.Target to its PID namespace (see the package
// documentation for how, and the refusals), reading its state through l.
// Errors name the target and, where it matters, the joining container;
// the caller adds the joining container's name in front. On success the
// pins exist until Release.
func Resolve(l Lookup, o Options) (*Target, error) {
	what := "cannot join the PID namespace of container " + o.Target
	st, err := readTarget(l, o, what)
	if err != nil {
		return nil, err
	}
	t := &Target{ID: o.Target, PID: st.InitPID, Pod: st.Pod}
	ns, err := openTarget(t, st, what)
	if err != nil {
		return nil, err
	}
	defer ns.close()
	if err := os.MkdirAll(o.PinDir, 0o711); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	t.PIDNS = PIDNSPin(o.PinDir)
	if err := pin(ns.pid, t.PIDNS); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if ns.userns == nil {
		return t, nil
	}
	if err := pinUserns(l, o, t, ns.userns, st.Annotations); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return t, nil
}

// readTarget reads the target's state and refuses what the state alone
// rules out: a malformed ID, the joining container itself, a container
// the runtime does not have, one of another pod, one in the host's PID
// namespace by its spec, one created but not started.
func readTarget(l Lookup, o Options, what string) (*State, error) {
	if err := l.ValidateID(o.Target); err != nil {
		return nil, refuse(ErrBadRef, "%s: %w", what, err)
	}
	if o.Target == o.ID {
		return nil, refuse(ErrSelf, "container %s refers to its own PID namespace (%s%s): a container cannot join itself", o.ID, RefPrefix, o.ID)
	}
	st, err := l.State(o.Root, o.Target)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, refuse(ErrNotFound, "%s: container %s does not exist (runc root %s)", what, o.Target, o.Root)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !SamePod(o.Pod, st.Pod) {
		return nil, refuse(ErrOtherPod, "%s: %s; only containers of one pod (or two containers of no pod) may share a PID namespace", what, podMismatch(o.ID, o.Pod, o.Target, st.Pod))
	}
	// Annotations alone do not prove membership (on CRI-O a pod author
	// can write a sandbox's): the containers of a pod also share their
	// cgroup parent, which kubelet chooses.
	if tc := st.Cgroup; o.Pod.InPod() && tc != "" && o.Cgroup != tc {
		return nil, refuse(ErrOtherPod, "%s: its annotations say both are in one pod, but container %s's cgroup parent %q is not container %s's (%q): the containers of a pod share it, so one of them carries another pod's annotations; give it the pod's cgroup parent, or leave out the pod annotations", what, o.ID, o.Cgroup, o.Target, tc)
	}
	if !st.PIDNamespace {
		return nil, refuse(ErrHostPID, "%s: container %s runs in the host's PID namespace (its spec has no pid namespace); to share the host's, leave the pid namespace out of this container's spec", what, o.Target)
	}
	if st.Created {
		return nil, refuse(ErrNotRunning, "%s: container %s is created but not running: start it first", what, o.Target)
	}
	return st, nil
}

// targetNS are the target's namespaces, open: its PID namespace and, when
// a user namespace other than the caller's owns that, this one.
type targetNS struct {
	pid, userns *os.File
}

func (n *targetNS) close() {
	for _, f := range []*os.File{n.pid, n.userns} {
		if f != nil {
			f.Close()
		}
	}
}

// openTarget opens the target's namespaces through its init, proven to be
// that init until they were all open, and reads its id maps when its PID
// namespace belongs to another user namespace (see the package
// documentation, steps 1 to 4).
func openTarget(t *Target, st *State, what string) (_ *targetNS, err error) {
	p, err := openInit(st.InitPID, st.InitStart)
	if err != nil {
		return nil, refuse(ErrNotRunning, "%s: container %s is not running: %w", what, t.ID, err)
	}
	defer p.close()
	ns := &targetNS{}
	defer func() {
		if err != nil {
			ns.close()
		}
	}()
	if ns.pid, err = p.open("ns/pid"); err != nil {
		return nil, p.gone(what, t.ID, err)
	}
	initUserns, err := p.open("ns/user")
	if err != nil {
		return nil, p.gone(what, t.ID, err)
	}
	defer initUserns.Close()
	owner, err := ownerOf(ns.pid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if sameAs(owner, "/proc/self/ns/user") {
		owner.Close()
	} else {
		ns.userns = owner
		if t.UIDMap, err = p.read("uid_map", maxMapSize); err == nil {
			t.GIDMap, err = p.read("gid_map", maxMapSize)
		}
		if err != nil {
			return nil, p.gone(what, t.ID, err)
		}
	}
	if testHookOpened != nil {
		testHookOpened(p.pid)
	}
	// The process whose start time matched is still alive now that every
	// file is open, so they are its own and not a newcomer's with its PID.
	if err := p.alive(); err != nil {
		return nil, refuse(ErrNotRunning, "%s: container %s is not running: %w", what, t.ID, err)
	}
	if hostPID(ns.pid) {
		return nil, refuse(ErrHostPID, "%s: container %s runs in the host's PID namespace", what, t.ID)
	}
	if ns.userns != nil && !sameFile(ns.userns, initUserns) {
		return nil, refuse(ErrUserns, "%s: its PID namespace is owned by user namespace %s, but its init process %d runs in %s (it joined that PID namespace and made a user namespace of its own), and a container joins a PID namespace only with the user namespace that owns it: refer to the container that created the PID namespace (its pod's sandbox, or the container it joined) instead", what, nsName(ns.userns), p.pid, nsName(initUserns))
	}
	return ns, nil
}

// pinUserns names the user namespace owner, which owns the target's PID
// namespace, in t.Userns: a path l designates if it is that namespace,
// else a pin at UsernsPin(o.PinDir). On failure it drops the PID
// namespace's pin too.
func pinUserns(l Lookup, o Options, t *Target, owner *os.File, annotations map[string]string) error {
	for _, c := range l.UsernsPins(o.Target, annotations) {
		if c != "" && sameAs(owner, c) {
			t.Userns = c
			return nil
		}
	}
	t.Userns = UsernsPin(o.PinDir)
	if err := pin(owner, t.Userns); err != nil {
		_ = Release(o.PinDir)
		return err
	}
	return nil
}

// Release detaches and removes the pins Resolve made in pinDir. It is
// idempotent: pins that are gone (or were never made) are fine. pinDir
// itself stays.
func Release(pinDir string) error {
	return errors.Join(unpin(PIDNSPin(pinDir)), unpin(UsernsPin(pinDir)))
}

func podMismatch(joiner string, jp Pod, target string, tp Pod) string {
	switch {
	case jp.InPod() && tp.InPod():
		return fmt.Sprintf("container %s is in pod %s and container %s in pod %s", joiner, jp.ID, target, tp.ID)
	case jp.InPod():
		return fmt.Sprintf("container %s is in pod %s but container %s belongs to no pod", joiner, jp.ID, target)
	default:
		return fmt.Sprintf("container %s belongs to no pod but container %s is in pod %s", joiner, target, tp.ID)
	}
}

// initProc is a process held by a pidfd and a /proc/<pid> directory fd,
// both opened before its start time was checked through the latter.
type initProc struct {
	pid   int
	pidfd int
	dir   int
}

// openInit opens the process recorded as a container's init and proves it
// is that init: the start time read through the directory fd is the one
// runc recorded when it started it.
func openInit(pid int, start uint64) (*initProc, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("its runc state records no init process (PID %d)", pid)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH), errors.Is(err, unix.EINVAL):
		// EINVAL: the PID is now a thread's, not a process's.
		return nil, fmt.Errorf("its init process %d has exited", pid)
	case errors.Is(err, unix.ENOSYS):
		return nil, fmt.Errorf("open init process %d: %w (pidfd_open needs Linux >= 5.3)", pid, os.NewSyscallError("pidfd_open", err))
	case err != nil:
		return nil, fmt.Errorf("open init process %d: %w", pid, os.NewSyscallError("pidfd_open", err))
	}
	dir, err := unix.Open(fmt.Sprintf("/proc/%d", pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(pidfd)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("its init process %d has exited", pid)
		}
		return nil, &os.PathError{Op: "open", Path: fmt.Sprintf("/proc/%d", pid), Err: err}
	}
	p := &initProc{pid: pid, pidfd: pidfd, dir: dir}
	if err := p.check(start); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// check compares the process's start time with the recorded one.
func (p *initProc) check(start uint64) error {
	b, err := p.read("stat", 4096)
	if err != nil {
		return fmt.Errorf("its init process %d has exited (%w)", p.pid, err)
	}
	ps, err := procfs.ParseStat(b)
	if err != nil {
		return err
	}
	if ps.StartTime != start {
		return fmt.Errorf("PID %d recorded in its runc state now belongs to another process (started at tick %d, the container's init at tick %d)", p.pid, ps.StartTime, start)
	}
	if ps.Exited() {
		return fmt.Errorf("its init process %d has exited (state %c)", p.pid, ps.State)
	}
	return nil
}

// alive reports whether the pidfd's process has not been reaped. A zombie
// still holds its PID, so nothing else can have taken it.
func (p *initProc) alive() error {
	err := unix.PidfdSendSignal(p.pidfd, 0, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("its init process %d exited while its namespaces were being opened", p.pid)
	}
	if err != nil {
		return os.NewSyscallError("pidfd_send_signal", err)
	}
	return nil
}

// gone explains a failure to open a file of the init: usually it exited.
func (p *initProc) gone(what, target string, err error) error {
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
		return refuse(ErrNotRunning, "%s: container %s is not running: its init process %d has exited (%w)", what, target, p.pid, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (p *initProc) close() {
	unix.Close(p.dir)
	unix.Close(p.pidfd)
}

// open opens a file under the process's /proc directory (ns/* are magic
// links to the namespaces: followed, never O_NOFOLLOW).
func (p *initProc) open(name string) (*os.File, error) {
	fd, err := unix.Openat(p.dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: fmt.Sprintf("/proc/%d/%s", p.pid, name), Err: err}
	}
	return os.NewFile(uintptr(fd), fmt.Sprintf("/proc/%d/%s", p.pid, name)), nil
}

// read reads a file under the process's /proc directory, up to max bytes.
func (p *initProc) read(name string, max int64) ([]byte, error) {
	f, err := p.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max)) // errors are *os.PathError
}

// ownerOf returns the user namespace that owns the namespace ns.
func ownerOf(ns *os.File) (*os.File, error) {
	fd, err := unix.IoctlRetInt(int(ns.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return nil, fmt.Errorf("owner of %s: %w", ns.Name(), os.NewSyscallError("ioctl NS_GET_USERNS", err))
	}
	return os.NewFile(uintptr(fd), "owner of "+ns.Name()), nil
}

// procPIDInitIno is the inode number of the initial PID namespace
// (PROC_PID_INIT_INO, fixed by the kernel).
const procPIDInitIno = 0xEFFFFFFC

// hostPID reports whether the PID namespace ns is the host's: ours (the
// one runc gives a container without a pid namespace entry), PID 1's (not
// always readable: an LSM may deny it even to root), or the initial one.
func hostPID(ns *os.File) bool {
	var st unix.Stat_t
	if unix.Fstat(int(ns.Fd()), &st) == nil && st.Ino == procPIDInitIno {
		return true
	}
	return sameAs(ns, "/proc/self/ns/pid") || sameAs(ns, "/proc/1/ns/pid")
}

// sameAs reports whether the open namespace f is the one at path.
func sameAs(f *os.File, path string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// nsName names an open namespace as the kernel does in /proc/<pid>/ns
// links ("user:[4026531837]"), or "?" when it cannot be stat'ed.
func nsName(f *os.File) string {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return "?"
	}
	return fmt.Sprintf("user:[%d]", st.Ino)
}

// sameFile reports whether two open files are the same inode.
func sameFile(f, g *os.File) bool {
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Fstat(int(g.Fd()), &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// pin bind-mounts the namespace ns on path (created, mode 0444), after
// removing a pin left there by a create that was killed, and checks that
// path now names ns. The same as libuserns.Pin, for any namespace type:
// under a shared parent the mount propagates to the peers, and unpin's
// unlink removes those copies too (Linux >= 3.18).
func pin(ns *os.File, path string) error {
	if err := unpin(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("pin namespace: %w", err)
	}
	f.Close()
	src := fmt.Sprintf("/proc/self/fd/%d", ns.Fd())
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return fmt.Errorf("pin namespace: %w", &os.PathError{Op: "mount", Path: path, Err: err})
	}
	if !sameAs(ns, path) {
		_ = unpin(path)
		return fmt.Errorf("pin namespace: %s does not name the namespace after the bind mount", path)
	}
	return nil
}

// unpin detaches the pin at path and removes the file; a path that is
// gone or not mounted is fine.
func unpin(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unpin namespace: %w", &os.PathError{Op: "umount", Path: path, Err: err})
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unpin namespace: %w", err)
	}
	return nil
}
