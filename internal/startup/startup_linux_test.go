package startup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func TestHeap(t *testing.T) {
	start, end, err := Heap()
	if errors.Is(err, syscall.EINVAL) {
		t.Skip("MADV_POPULATE_WRITE needs Linux >= 5.14")
	}
	if err != nil {
		t.Fatalf("Heap: %v", err)
	}
	page := uintptr(syscall.Getpagesize())
	switch {
	case start%page != 0 || end%page != 0:
		t.Fatalf("range %#x-%#x is not page-aligned", start, end)
	case end <= start || end-start > Window:
		t.Fatalf("range %#x-%#x: want 1 page to %d bytes", start, end, Window)
	case (end-1)/chunk != start/chunk:
		t.Fatalf("range %#x-%#x crosses a %d-byte runtime chunk", start, end, chunk)
	}
	// Every page of the range is now in the page tables (mincore: resident).
	vec := make([]byte, (end-start)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore %#x-%#x: %v", start, end, e)
	}
	for i, v := range vec {
		if v&1 == 0 {
			t.Fatalf("page %d of %d (%#x) is not resident", i, len(vec), start+uintptr(i)*page)
		}
	}
}

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
