package runc

import (
	"fmt"
	"os"
	"os/signal"
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
// trip to the runtime's signal-mask thread, and Stop undoes it with
// another: for every signal, ~5 ms a call on a nested VM. A create or
// delete is short and forwards what a caller sends to stop or poke a
// process; any other signal takes its default action on us, as it would
// on runc (runc carries on, and delete --force or pool gc clean up after
// us). A foreground `run` lives as long as its container, and runc
// forwards every signal to the container: it forwards everything but
// SIGCHLD (about runc itself) and SIGURG (the Go runtime's preemption
// signal, sent to our own threads).
var (
	shortSignals = []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGUSR1, unix.SIGUSR2}
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
// with foreground, see shortSignals), waits, and returns the exit status
// the caller should exit with. The child inherits everything Exec would
// hand over: Go opens its own files with O_CLOEXEC, so the fds we
// inherited stay inheritable.
func Run(path string, args []string, foreground bool) (int, error) {
	sigs := notify(foreground)
	defer signal.Stop(sigs)

	proc, err := os.StartProcess(path, append([]string{path}, args...), &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return 1, fmt.Errorf("start %s: %w", path, err)
	}
	fault.Point(fault.RuncStarted)
	return forwardAndWait(proc, sigs, path)
}

// Wait is Run for a runc at path that is already running as our child,
// pid: started before the Go runtime was (the constructor's early delete).
// It forwards shortSignals from now on.
func Wait(pid int, path string) (int, error) {
	sigs := notify(false)
	defer signal.Stop(sigs)

	proc, err := os.FindProcess(pid)
	if err != nil {
		return 1, fmt.Errorf("wait for %s (pid %d): %w", path, pid, err)
	}
	return forwardAndWait(proc, sigs, path)
}

func notify(foreground bool) chan os.Signal {
	sigs := make(chan os.Signal, 64)
	if foreground {
		signal.Notify(sigs, allSignals...)
	} else {
		signal.Notify(sigs, shortSignals...)
	}
	return sigs
}

func forwardAndWait(proc *os.Process, sigs chan os.Signal, path string) (int, error) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = proc.Signal(s)
			case <-done:
				return
			}
		}
	}()
	st, err := proc.Wait()
	close(done)
	if err != nil {
		return 1, fmt.Errorf("wait for %s: %w", path, err)
	}
	ws := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}
