package runc

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/internal/fault"
)

// Exec replaces this process with the real runc. args is argv without
// argv[0]; it reaches runc unchanged, with our environment, stdio and every
// inherited file descriptor (--preserve-fds, LISTEN_FDS, --console-socket
// are all plain inherited fds).
func Exec(path string, args []string) error {
	argv := append([]string{path}, args...)
	err := unix.Exec(path, argv, os.Environ())
	return fmt.Errorf("exec %s: %w", path, err)
}

// Signals forwarded to runc. Notify registers each signal with a round
// trip to the runtime's signal-mask thread: 0.3-0.8 ms for the six below
// on the nested VM measured, several ms for all of them. A create or
// delete is short and forwards what a caller sends to stop or poke a
// process; any other signal takes its default action on us, as it would
// on runc (runc carries on, and delete --force or pool gc clean up after
// us). A foreground `run` lives as long as its container, and runc
// forwards every signal to the container: it forwards everything but
// SIGCHLD (about runc itself) and SIGURG (the Go runtime's preemption
// signal, sent to our own threads). ShortSignals is exported for the
// C constructor's own forwarding while it waits for an early delete's runc
// (fastpath_linux.c), which a test holds to this list.
var (
	ShortSignals = []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGUSR1, unix.SIGUSR2}
	allSignals   = func() []os.Signal {
		var list []os.Signal
		for s := syscall.Signal(1); s <= 64; s++ {
			switch s {
			case unix.SIGCHLD, unix.SIGURG, unix.SIGKILL, unix.SIGSTOP:
				continue
			case 32, 33: // glibc's own real-time signals, which Go leaves alone
				continue
			}
			list = append(list, s)
		}
		return list
	}()
)

// Run starts the real runc as a child, forwards signals to it (all of them
// with foreground, see ShortSignals), waits, and returns the exit status
// the caller should exit with. The child inherits everything Exec would
// hand over: Go opens its own files with O_CLOEXEC, so the fds we
// inherited stay inheritable.
//
// The child is started and waited for through package syscall, not
// os.StartProcess and os.Process: their first use in a process probes the
// kernel's pidfd support with a child of its own (a clone and a wait,
// ~0.5 ms a call on the nested VM measured), and a parent needs no pidfd
// to signal its child safely (see forwardAndWait).
func Run(path string, args []string, foreground bool) (int, error) {
	sigs := notify(foreground)
	pid, err := syscall.ForkExec(path, append([]string{path}, args...), &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		return 1, fmt.Errorf("start %s: %w", path, err)
	}
	fault.Point(fault.RuncStarted)
	return forwardAndWait(pid, sigs, path)
}

// Wait is Run for a runc at path that is already running as our child,
// pid: started before the Go runtime was (the constructor's early delete).
// It forwards ShortSignals from now on.
func Wait(pid int, path string) (int, error) {
	return forwardAndWait(pid, notify(false), path)
}

// notify starts catching the signals to forward. They stay caught until
// the process exits (no signal.Stop): one arriving after runc has ended,
// while we clean up after it, is dropped rather than killing us half-way,
// and Stop would cost as much as Notify (a round trip to the runtime's
// signal thread per signal).
func notify(foreground bool) chan os.Signal {
	sigs := make(chan os.Signal, 64)
	if foreground {
		signal.Notify(sigs, allSignals...)
	} else {
		signal.Notify(sigs, ShortSignals...)
	}
	return sigs
}

// forwardAndWait forwards sigs to child pid until it has exited and
// returns its exit status (128+N when signal N killed it). The child is
// waited for in two steps, as package os does: waitid with WNOWAIT leaves
// it a zombie, whose pid no other process can take, until forwarding has
// stopped; only then does wait4 reap it. So a signal never reaches another
// process that took the pid.
func forwardAndWait(pid int, sigs chan os.Signal, path string) (int, error) {
	var mu sync.Mutex
	exited := false
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				mu.Lock()
				if !exited {
					_ = syscall.Kill(pid, s.(syscall.Signal))
				}
				mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	defer close(done)
	var info unix.Siginfo
	err := eintr(func() error { return unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) })
	if err != nil {
		return 1, fmt.Errorf("wait for %s (pid %d): %w", path, pid, os.NewSyscallError("waitid", err))
	}
	mu.Lock()
	exited = true
	mu.Unlock()
	var ws syscall.WaitStatus
	if err := eintr(func() error { _, err := syscall.Wait4(pid, &ws, 0, nil); return err }); err != nil {
		return 1, fmt.Errorf("wait for %s (pid %d): %w", path, pid, os.NewSyscallError("wait4", err))
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

// eintr retries f while it fails with EINTR.
func eintr(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
