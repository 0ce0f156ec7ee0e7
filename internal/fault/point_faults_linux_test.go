//go:build faults

package fault

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// envChild marks the copy of this test binary that TestPointKills starts:
// only that copy calls Point armed, and it starts nothing itself.
const envChild = "RUNC_USERNS_FAULT_TEST_CHILD"

// TestPointKills: armed at a step, Point kills the process there, and
// only there.
func TestPointKills(t *testing.T) {
	if step := os.Getenv(envChild); step != "" {
		Point("not-" + step) // another step: goes on
		Point(step)          // dies here
		os.Exit(3)
	}
	for _, tc := range []struct {
		name, step string
		killed     bool
	}{
		{name: "armed", step: Allocated, killed: true},
		{name: "unarmed", step: "", killed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPointKills$")
			cmd.Env = append(os.Environ(), envChild+"="+Allocated, EnvKillAt+"="+tc.step)
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child: %v, want an exit status", err)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if got := ws.Signaled() && ws.Signal() == syscall.SIGKILL; got != tc.killed {
				t.Fatalf("child with %s=%q: %v, killed %v, want killed %v", EnvKillAt, tc.step, ee, got, tc.killed)
			}
			if !tc.killed && ws.ExitStatus() != 3 {
				t.Fatalf("unarmed child: %v, want exit status 3 (past Point)", ee)
			}
		})
	}
}

// TestPointWithTag: Enabled says the switches are in.
func TestPointWithTag(t *testing.T) {
	if !Enabled {
		t.Fatal("built with the tag faults, but Enabled is false")
	}
}
