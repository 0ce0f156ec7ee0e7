package startup

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestProcs: a fresh process of this test binary, whose init is the
// package's, runs on one P unless its environment sets GOMAXPROCS.
func TestProcs(t *testing.T) {
	if os.Getenv("STARTUP_TEST_PRINT_PROCS") == "1" {
		fmt.Print(runtime.GOMAXPROCS(0))
		os.Exit(0)
	}
	for _, tc := range []struct {
		name, env, want string
	}{
		{"unset", "", "1"},
		{"set by the caller", "GOMAXPROCS=3", "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestProcs$")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOMAXPROCS=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "STARTUP_TEST_PRINT_PROCS=1")
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
			if string(out) != tc.want {
				t.Fatalf("GOMAXPROCS in a process with %q: %q, want %s", tc.env, out, tc.want)
			}
		})
	}
}
