//go:build cgo

package libuserns

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHolderReaping: NewUserns does not wait for its holder, but neither
// leaves it behind: the next call and ReapHolders reap the holders that
// have exited without waiting for a live one, WaitHolders waits for all.
func TestHolderReaping(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for user namespaces")
	}
	WaitHolders()
	for i := 1; i <= 4; i++ {
		newNS(t)
		if n := len(pending()); n < 1 || n > i {
			t.Fatalf("after %d calls %d holders pending; want 1 to %d", i, n, i)
		}
	}
	// Once they have exited (zombies), the next call reaps them
	// all; its own holder may still be running.
	pids := pending()
	waitState(t, pids, "exited")
	newNS(t)
	if n := len(pending()); n != 1 {
		t.Errorf("after the holders exited, a new call left %d pending; want only its own", n)
	}
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Errorf("holder %d was not reaped", pid)
		}
	}
	WaitHolders()
	if n := len(pending()); n != 0 {
		t.Errorf("after WaitHolders %d holders pending", n)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("child processes left after WaitHolders: %v", kids)
	}

	// A live holder (stopped before it could exit: SIGSTOP is the one
	// signal besides SIGKILL it cannot block) stays pending through
	// ReapHolders, which returns at once, and WaitHolders reaps it once it
	// goes on. On one CPU the holder mostly has not run yet when
	// NewUserns returns; a round where it had exited already is tried
	// again.
	onOneCPU(t)
	for try := 0; ; try++ {
		newNS(t)
		pid := pending()[0]
		_ = unix.Kill(pid, unix.SIGSTOP)
		// A holder already on its way out exits rather than stops: the
		// SIGSTOP can land after it read "running" here. Either way it is
		// one of the two within 5 s; an exited one means another try.
		if st := stopOrExit(t, pid); st == "exited" || st == "gone" {
			WaitHolders()
			if try == 20 {
				t.Fatal("every holder exited before it could be stopped (20 tries): this test's premise, a holder that runs after NewUserns returns on one CPU, does not hold here")
			}
			continue
		}
		t.Logf("holder %d stopped on try %d", pid, try)
		ReapHolders()
		if got := pending(); len(got) != 1 || got[0] != pid {
			t.Errorf("ReapHolders with holder %d stopped: pending %v; want it alone", pid, got)
		}
		_ = unix.Kill(pid, unix.SIGCONT)
		WaitHolders()
		if n := len(pending()); n != 0 {
			t.Errorf("after WaitHolders %d holders pending", n)
		}
		break
	}
}

// newNS makes a user namespace and closes it: what is left is its holder.
func newNS(t *testing.T) {
	t.Helper()
	m := PodMappings(3000000000, 65536)
	f, err := NewUserns(m, m)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// onOneCPU keeps the test's goroutine on its thread and that thread on
// CPU 0 until the test ends. A holder inherits the affinity: it mostly
// runs only once the thread has moved on from NewUserns.
func onOneCPU(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	var was, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.SchedSetaffinity(0, &was) })
	one.Set(0)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
}

// pending lists the PIDs of the holders not reaped yet.
func pending() []int {
	holders.Lock()
	defer holders.Unlock()
	pids := make([]int, len(holders.list))
	for i, h := range holders.list {
		pids[i] = int(h.pid)
	}
	return pids
}

// waitState waits up to 5 s for each of pids to be in state st
// (childState's).
func waitState(t *testing.T, pids []int, st string) {
	t.Helper()
	for _, pid := range pids {
		deadline := time.Now().Add(5 * time.Second)
		for childState(t, pid) != st {
			if time.Now().After(deadline) {
				t.Fatalf("holder %d not %s within 5 s (%s)", pid, st, childState(t, pid))
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// stopOrExit waits until the child pid is stopped, has exited or is gone,
// at most 5 s, and says which.
func stopOrExit(t *testing.T, pid int) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st := childState(t, pid); st != "running" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("holder %d neither stopped nor exited within 5 s of SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHolderExits: every holder exits on its own once NewUserns has
// returned, however soon the caller's stack is reused. A holder once read
// its pipe's fds from the caller's stack frame: when the next call's pipe
// had the same read end but another write end, a holder that had not run
// yet closed the wrong fd and blocked on its own write end for good. Each
// round sets that up (the thread on one CPU, so that the first holder
// mostly runs only after the second call) and WaitHolders must return.
func TestHolderExits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for user namespaces")
	}
	onOneCPU(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for i := 0; i < 100; i++ {
		// The lowest free fd: the next pipe's read end.
		a, err := unix.Dup(int(null.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(a)
		newNS(t) // its pipe was a, a+1
		// The next pipe: read end a again, write end not a+1.
		if err := unix.Dup3(int(null.Fd()), a+1, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		newNS(t)
		unix.Close(a + 1)
	}
	left := pending()
	done := make(chan struct{})
	go func() {
		WaitHolders()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		var stuck []string
		for _, pid := range left {
			if st := childState(t, pid); st != "gone" && st != "exited" {
				stuck = append(stuck, fmt.Sprintf("%d (%s)", pid, st))
				// They hold this test's stdout: go test would wait.
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		<-done
		t.Fatalf("holders still running 20 s after NewUserns returned (killed): %v", stuck)
	}
}

// childState says what holder pid, our child, is doing, as waitid(2)
// tells without reaping it (WNOWAIT): "exited" (a zombie), "stopped",
// "running", or "gone" once reaped.
func childState(t *testing.T, pid int) string {
	t.Helper()
	for _, w := range []struct {
		options int
		state   string
	}{{unix.WEXITED, "exited"}, {unix.WSTOPPED, "stopped"}} {
		// Linux zeroes info when no child is in that state.
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, w.options|unix.WNOWAIT|unix.WNOHANG|unix.WALL, nil)
		if errors.Is(err, unix.ECHILD) {
			return "gone"
		}
		if err != nil {
			t.Fatalf("waitid %d: %v", pid, err)
		}
		if info.Signo == int32(unix.SIGCHLD) {
			return w.state
		}
	}
	return "running"
}
