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

// Run starts the real runc as a child, forwards every signal to it, waits,
// and returns the exit status the caller should exit with. The child
// inherits everything Exec would hand over: Go opens its own files with
// O_CLOEXEC, so the fds we inherited stay inheritable.
func Run(path string, args []string) (int, error) {
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs)
	defer signal.Stop(sigs)

	proc, err := os.StartProcess(path, append([]string{path}, args...), &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return 1, fmt.Errorf("start %s: %w", path, err)
	}
	fault.Point(fault.RuncStarted)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				sig, ok := s.(syscall.Signal)
				// SIGCHLD is about runc itself; SIGURG is the Go runtime's
				// preemption signal, not the caller's.
				if !ok || sig == unix.SIGCHLD || sig == unix.SIGURG {
					continue
				}
				_ = proc.Signal(sig)
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
