//go:build faults

package fault

import (
	"os"
	"syscall"
)

// Enabled is true: this is the test binary, with the fault switches.
const Enabled = true

// Point dies or stops here if the test asked for it.
func Point(step string) {
	if os.Getenv(EnvKillAt) == step {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	if os.Getenv(EnvStopAt) == step {
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
}
