//go:build cgo

package libuserns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestMappings: the mappings of a user namespace read through an open
// file of it (OpenUserns, then Mappings: a child joins it), whatever path
// named it; the wrapper's own namespace and one with no maps are refused;
// no child is left once the holders are waited for.
func TestMappings(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for user namespaces")
	}
	uid := []specs.LinuxIDMapping{m(0, 3000000000, 65536), m(65536, 1000, 1)}
	gid := []specs.LinuxIDMapping{m(0, 3100000000, 1000)}
	made, err := NewUserns(uid, gid)
	if err != nil {
		t.Fatal(err)
	}
	defer made.Close()

	// A user namespace with no maps written: a process in it, stopped.
	bare := exec.Command("sleep", "60")
	bare.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := bare.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bare.Process.Kill()
		_ = bare.Wait()
	})

	cases := []struct {
		name     string
		path     string
		uid, gid []specs.LinuxIDMapping
		wantErr  error
	}{
		{name: "a namespace by an fd path", path: fmt.Sprintf("/proc/self/fd/%d", made.Fd()), uid: uid, gid: gid},
		{name: "a process's namespace", path: fmt.Sprintf("/proc/%d/ns/user", bare.Process.Pid), wantErr: ErrNoMapping},
		{name: "our own namespace", path: "/proc/self/ns/user", wantErr: ErrOwnUserns},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns, err := OpenUserns(c.path, kindName)
			if err != nil {
				t.Fatal(err)
			}
			defer ns.Close()
			gotUID, gotGID, err := Mappings(ns)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Mappings(%s) = %v, %v, %v; want %v", c.path, gotUID, gotGID, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Mappings(%s): %v", c.path, err)
			}
			if !Equal(gotUID, c.uid) || !Equal(gotGID, c.gid) {
				t.Errorf("Mappings(%s) = %v, %v; want %v, %v", c.path, gotUID, gotGID, c.uid, c.gid)
			}
		})
	}
	_ = bare.Process.Kill()
	_ = bare.Wait()
	WaitHolders()
	if n := len(pending()); n != 0 {
		t.Errorf("after WaitHolders %d children pending", n)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("child processes left after WaitHolders: %v", kids)
	}
}

// TestOpenUsernsRefuses: OpenUserns refuses what IsUserns refuses, and
// returns no file with the error.
func TestOpenUsernsRefuses(t *testing.T) {
	for _, p := range []string{"/proc/self/ns/net", "/etc/passwd", "/dev/null", "/proc/self", "/nonexistent/ns"} {
		t.Run(p, func(t *testing.T) {
			f, err := OpenUserns(p, kindName)
			if err == nil || f != nil {
				t.Fatalf("OpenUserns(%s) = %v, %v; want an error and no file", p, f, err)
			}
			if want := IsUserns(p, kindName); want == nil || want.Error() != err.Error() {
				t.Errorf("OpenUserns(%s): %v; IsUserns: %v", p, err, want)
			}
		})
	}
}
