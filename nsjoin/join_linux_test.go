package nsjoin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPlanWithoutReference(t *testing.T) {
	r := planRequest(UsernsUnset, "", true)
	r.Root, r.PinDir = "/run/runc", testPinDir
	j, err := Plan(pidSpec(str("/proc/42/ns/pid")), *r, newHost())
	if j != nil || err != nil {
		t.Errorf("Plan = %v, %v; want nil, nil", j, err)
	}
	r.Root = t.TempDir()
	_, err = Plan(pidSpec(str("container:debug")), *r, newHost())
	if !errors.Is(err, ErrSelf) {
		t.Errorf("Plan of itself = %v, want ErrSelf", err)
	}
}

// TestPlanRefusesUntrustedPod: a join of a container whose pod annotations
// no CRI writes is refused, after the reference is read.
func TestPlanRefusesUntrustedPod(t *testing.T) {
	r := planRequest(UsernsUnset, "", true)
	r.Root, r.PinDir = t.TempDir(), filepath.Join(t.TempDir(), "debug")
	r.PodIdentity = errors.New("io.kubernetes.cri.sandbox-id is present but empty")
	_, err := Plan(pidSpec(str("container:t")), *r, newHost())
	if err == nil || err.Error() != "cannot join the PID namespace of container t: io.kubernetes.cri.sandbox-id is present but empty" || !errors.Is(err, r.PodIdentity) {
		t.Errorf("Plan = %v", err)
	}
}

func TestReleaseIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	if err := Release(filepath.Join(dir, "never")); err != nil {
		t.Errorf("Release of nothing: %v", err)
	}
	if err := os.WriteFile(PIDNSPin(dir), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := Release(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(PIDNSPin(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pin file left: %v", err)
	}
}

// TestPlan: a join of a target in another user namespace, end to end: its
// edits, and no pin left after a refusal or Cleanup.
func TestPlan(t *testing.T) {
	requireRoot(t)
	p := spawn(t, unix.CLONE_NEWUSER|unix.CLONE_NEWPID)
	request := func(t *testing.T, h *fakeHost, userns UsernsChoice) *Request {
		r := planRequest(userns, "", true)
		r.Root, r.PinDir = t.TempDir(), filepath.Join(t.TempDir(), "debug")
		writeState(t, h.fakeLookup, r.Root, "target", p.pid, p.start, Pod{}, "NEWUSER", "NEWPID")
		return r
	}

	t.Run("refused: the pins go", func(t *testing.T) {
		h := newHost()
		r := request(t, h, UsernsHost)
		j, err := Plan(pidSpec(str("container:target")), *r, h)
		if err == nil || !strings.Contains(err.Error(), "it asks for runc-userns.io/userns=host") {
			t.Fatalf("Plan = %v, %v; want the host user namespace refused", j, err)
		}
		checkReleased(t, r.PinDir)
	})

	t.Run("joined", func(t *testing.T) {
		h := newHost()
		r := request(t, h, UsernsUnset)
		s := pidSpec(str(""))
		r.PIDNamespace = "container:target"
		j, err := Plan(s, *r, h)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Cleanup()
		if !j.TakesUserns() || j.Userns() != UsernsPin(r.PinDir) {
			t.Errorf("TakesUserns, Userns = %v, %q", j.TakesUserns(), j.Userns())
		}
		for _, m := range j.Modifiers() {
			if err := m.Modify(s); err != nil {
				t.Fatal(err)
			}
		}
		if path, _ := pidNamespace(s); path != PIDNSPin(r.PinDir) || !sameInode(t, path, fmt.Sprintf("/proc/%d/ns/pid", p.pid)) {
			t.Errorf("pid namespace path %q", path)
		}
		if got := s.Annotations[keyPIDNamespace]; got != "container:target" {
			t.Errorf("recorded reference %q", got)
		}
		if len(s.Linux.UIDMappings) != 1 || s.Linux.UIDMappings[0].HostID != 3221225472 {
			t.Errorf("uid mappings %v", s.Linux.UIDMappings)
		}
		if err := j.Cleanup(); err != nil {
			t.Fatal(err)
		}
		checkReleased(t, r.PinDir)
	})
}
