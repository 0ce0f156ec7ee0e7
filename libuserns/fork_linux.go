package libuserns

import (
	"runtime"
	"syscall"
	_ "unsafe" // go:linkname

	"golang.org/x/sys/unix"
)

// The Go runtime's fork hooks, as package syscall uses them around its own
// clone: BeforeFork blocks signals and poisons the goroutine's stack guard
// (a stack growth in the child aborts instead of corrupting memory),
// AfterFork undoes that in the parent, AfterForkInChild resets the signal
// handlers in the child. They are part of the runtime's kept linkname
// surface (go.dev/issue/67401).

//go:linkname beforeFork syscall.runtime_BeforeFork
func beforeFork()

//go:linkname afterFork syscall.runtime_AfterFork
func afterFork()

//go:linkname afterForkInChild syscall.runtime_AfterForkInChild
func afterForkInChild()

// forkHolder forks a child in a new user namespace that does nothing but
// wait to be killed: it asks for SIGKILL when its parent thread dies and
// blocks in ppoll. Between fork and exit the child runs only raw system
// calls (no allocation, no stack growth, no scheduler), which is all a Go
// program may do there. The caller must hold its OS thread
// (runtime.LockOSThread) until it has reaped the child: the death signal
// follows the parent thread, not the process.
//
// It replaces a fork+exec of /proc/self/exe stopped under PTRACE_TRACEME:
// no execve (mapping our binary again and a ptrace stop), and it works under
// strace or a debugger, where the child cannot be traced twice.
//
//go:norace
//go:noinline
func forkHolder(parent uintptr) (pid int, errno syscall.Errno) {
	flags, stack := uintptr(unix.CLONE_NEWUSER|syscall.SIGCHLD), uintptr(0)
	if runtime.GOARCH == "s390x" {
		flags, stack = stack, flags // clone's first two arguments are swapped there
	}
	beforeFork()
	r, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, flags, stack, 0, 0, 0, 0)
	if e != 0 || r != 0 {
		afterFork()
		return int(r), e
	}
	// The child.
	afterForkInChild()
	_, _, e = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if e == 0 {
		// The parent may have died before the prctl: then we have been
		// re-parented and nobody will kill us.
		if ppid, _, _ := syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0); ppid == parent {
			_, _, e = syscall.RawSyscall6(syscall.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
		}
	}
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, uintptr(e), 0, 0)
	panic("unreachable")
}
