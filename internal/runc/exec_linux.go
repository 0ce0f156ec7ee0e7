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

// Exec replaces this process with the real runc at path. argv0 is the
// caller's argv[0] and args the rest of its argv; both reach runc
// unchanged, with our environment, stdio and every inherited file
// descriptor (--preserve-fds, LISTEN_FDS, --console-socket are all plain
// inherited fds).
func Exec(path, argv0 string, args []string) error {
	err := unix.Exec(path, append([]string{Argv0(argv0, path)}, args...), os.Environ())
	return fmt.Errorf("exec %s: %w", path, err)
}

// Argv0 is the argv[0] runc at path gets: the caller's, as runc would
// have had it called directly (runc names itself after its argv[0] in its
// help and usage), or path if the caller gave none.
func Argv0(callers, path string) string {
	if callers == "" {
		return path
	}
	return callers
}

// Signals forwarded to runc. A create or delete is short and forwards
// what a caller sends to stop or poke a process, by a C handler where
// there is cgo (handlerForwarder); any other signal takes its default
// action on us, as it would on runc (runc carries on, and delete --force
// or pool gc clean up after us). A foreground `run` lives as long as its
// container, and runc forwards every signal to the container: it
// forwards everything but SIGCHLD (about runc itself) and SIGURG (the Go
// runtime's preemption signal, sent to our own threads), through
// os/signal, whose Notify makes a round trip to the runtime's signal-mask
// thread per signal (several ms for all of them on the nested VM
// measured).
var (
	shortSignals = []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGUSR1, unix.SIGUSR2}
	allSignals   = func() []os.Signal {
		var list []os.Signal
		for s := syscall.Signal(1); s <= 64; s++ {
			switch s {
			case unix.SIGCHLD, unix.SIGURG, unix.SIGKILL, unix.SIGSTOP:
				continue
			case 32, 33: // the C library's own real-time signals (glibc's, musl's), which Go leaves alone
				continue
			}
			list = append(list, s)
		}
		return list
	}()
)

// Run starts the real runc as a child, forwards signals to it (all of them
// with foreground, see ShortSignals), waits, and returns the exit status
// the caller should exit with. Killed once runc has started (fault.RuncStarted),
// the wrapper leaves runc to carry on alone. The child inherits everything Exec would
// hand over: Go opens its own files with O_CLOEXEC, so the fds we
// inherited stay inheritable.
//
// The child is started and waited for through package syscall, not
// os.StartProcess and os.Process: their first use in a process probes the
// kernel's pidfd support with a child of its own (a clone and a wait,
// ~0.5 ms a call on the nested VM measured), and a parent needs no pidfd
// to signal its child safely (see forwardAndWait).
func Run(path, argv0 string, args []string, foreground bool) (int, error) {
	fwd := newForwarder(foreground)
	pid, err := syscall.ForkExec(path, append([]string{Argv0(argv0, path)}, args...), &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		fwd.stop()
		return 1, fmt.Errorf("start %s: %w", path, err)
	}
	fault.Point(fault.RuncStarted)
	return forwardAndWait(pid, fwd, path)
}

// forwarder passes the signals a caller sends us on to runc: caught from
// its creation on, held until start, dropped after stop. Nothing undoes
// the catching (no signal.Stop): one arriving after runc has ended, while
// we clean up after it, is dropped rather than killing us half-way.
type forwarder interface {
	start(pid int) // runc runs as our child pid
	stop()         // runc has exited (and is not reaped yet)
}

// newForwarder: shortSignals by a C handler where there is cgo, else, and
// for a foreground run (every signal), by os/signal.
func newForwarder(foreground bool) forwarder {
	if foreground {
		return newNotifyForwarder(allSignals)
	}
	if f := newHandlerForwarder(shortSignals); f != nil {
		return f
	}
	return newNotifyForwarder(shortSignals)
}

// notifyForwarder forwards through os/signal and a goroutine.
type notifyForwarder struct {
	sigs chan os.Signal
	done chan struct{}
	mu   sync.Mutex
	pid  int // 0 before start, -1 after stop
}

func newNotifyForwarder(list []os.Signal) *notifyForwarder {
	f := &notifyForwarder{sigs: make(chan os.Signal, 64), done: make(chan struct{})}
	signal.Notify(f.sigs, list...)
	return f
}

func (f *notifyForwarder) start(pid int) {
	f.mu.Lock()
	f.pid = pid
	f.mu.Unlock()
	go func() {
		for {
			select {
			case s := <-f.sigs:
				f.mu.Lock()
				if f.pid > 0 {
					_ = syscall.Kill(f.pid, s.(syscall.Signal))
				}
				f.mu.Unlock()
			case <-f.done:
				return
			}
		}
	}()
}

func (f *notifyForwarder) stop() {
	f.mu.Lock()
	started := f.pid > 0
	f.pid = -1
	f.mu.Unlock()
	if started {
		close(f.done)
	}
}

// forwardAndWait forwards signals to child pid until it has exited and
// returns its exit status (128+N when signal N killed it). The child is
// waited for in two steps, as package os does: waitid with WNOWAIT leaves
// it a zombie, whose pid no other process can take, until forwarding has
// stopped; only then does wait4 reap it. So a signal never reaches another
// process that took the pid.
func forwardAndWait(pid int, fwd forwarder, path string) (int, error) {
	fwd.start(pid)
	var info unix.Siginfo
	err := eintr(func() error { return unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) })
	fwd.stop()
	if err != nil {
		return 1, fmt.Errorf("wait for %s (pid %d): %w", path, pid, os.NewSyscallError("waitid", err))
	}
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
