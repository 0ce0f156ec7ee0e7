package runc

import (
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Run gives runc's exit status, or 128+N when signal N killed it.
func TestRunStatus(t *testing.T) {
	cases := []struct {
		name   string
		script string
		want   int
	}{
		{"success", "exit 0", 0},
		{"failure", "exit 3", 3},
		{"killed", "kill -KILL $$", 128 + 9},
		{"terminated", "kill -TERM $$", 128 + 15},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, err := Run("/bin/sh", "", []string{"-c", c.script}, false); err != nil || got != c.want {
				t.Errorf("Run = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

// runc gets the caller's argv[0] (it names itself after it), or its own
// path when the caller gave none.
func TestRunArgv0(t *testing.T) {
	cases := []struct{ argv0, want string }{
		{"", "/bin/sh"},
		{"runc", "runc"},
		{"/usr/local/bin/runc-userns", "/usr/local/bin/runc-userns"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			script := `test "$(tr '\0' '\n' </proc/$$/cmdline | head -n 1)" = "` + c.want + `"`
			if got, err := Run("/bin/sh", c.argv0, []string{"-c", script}, false); err != nil || got != 0 {
				t.Errorf("Run with argv0 %q: status %d, %v; want argv[0] %q", c.argv0, got, err, c.want)
			}
		})
	}
}

// A signal sent to us while runc runs reaches runc, which exits in its own
// way; its status is what we return. The child sends the signal to its
// parent itself, after its trap is set, so the test cannot race it; and it
// leaves no process behind (a trap runs once the loop's short sleep ends;
// exec makes the sleep the process the signal kills).
func TestForwardSignal(t *testing.T) {
	cases := []struct {
		name       string
		sig        string
		script     string
		foreground bool
		want       int
	}{
		{"trapped", "TERM", `trap "exit 7" TERM; kill -TERM $PPID; for i in $(seq 300); do sleep 0.01; done; exit 1`, false, 7},
		{"default action", "USR1", `kill -USR1 $PPID; exec sleep 5`, false, 128 + int(syscall.SIGUSR1)},
		// Not one of ShortSignals: only a foreground run forwards it
		// (os/signal, notifyForwarder).
		{"foreground", "ALRM", `kill -ALRM $PPID; exec sleep 5`, true, 128 + int(syscall.SIGALRM)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Run("/bin/sh", "", []string{"-c", c.script}, c.foreground)
			if err != nil || got != c.want {
				t.Errorf("Run with SIG%s sent to the parent = %d, %v; want %d (the signal forwarded)", c.sig, got, err, c.want)
			}
		})
	}
}

// A signal that comes before runc runs is held and sent once it does; one
// that comes after runc has exited is dropped, not taken by us (SIGTERM's,
// SIGALRM's default action would end the test binary). Each signal is
// sent to the test's own thread (tgkill, the thread locked), so it is
// handled before the call returns. The C handler stays installed for the
// process: the os/signal case uses signals it never takes.
func TestForwardHoldsAndDrops(t *testing.T) {
	cases := []struct {
		name          string
		foreground    bool // notifyForwarder: every signal, through os/signal
		before, after syscall.Signal
	}{
		{"C handler", false, syscall.SIGUSR2, syscall.SIGTERM},
		{"os/signal", true, syscall.SIGALRM, syscall.SIGALRM},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			fwd := newForwarder(c.foreground)
			if _, ok := fwd.(*notifyForwarder); ok != c.foreground {
				t.Logf("forwarding through %T (no cgo)", fwd)
			}
			if err := unix.Tgkill(unix.Getpid(), unix.Gettid(), c.before); err != nil {
				t.Fatal(err)
			}
			// A child that dies of c.before (its default action), and of
			// nothing else before 5 s.
			pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "5"}, &syscall.ProcAttr{})
			if err != nil {
				fwd.stop()
				t.Fatal(err)
			}
			got, err := forwardAndWait(pid, fwd, "/bin/sleep")
			if want := 128 + int(c.before); err != nil || got != want {
				t.Errorf("%v sent before the child ran: forwardAndWait = %d, %v; want %d (held, then forwarded)", c.before, got, err, 128+int(c.before))
			}
			if err := unix.Tgkill(unix.Getpid(), unix.Gettid(), c.after); err != nil {
				t.Fatal(err)
			}
			// Still here: dropped.
		})
	}
}
