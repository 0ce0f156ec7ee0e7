package create

import (
	"errors"
	"os"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/netns"
)

// A stamp is verified with the configured stateDir's key; the container's
// own stamp (verifyOwnStamp: delete, exec, re-create) also with the key of
// the stateDir it names, but only when that directory and its key are
// root-owned and private. A join of another container (verifyStamp) takes
// only the configured key.
func TestVerifyStamp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("stamp keys must be root-owned: needs root")
	}
	node, elsewhere, open, nobodys := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	key := func(dir string) []byte {
		k, err := oci.StampKey(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	nodeKey, otherKey, openKey, nobodysKey := key(node), key(elsewhere), key(open), key(nobodys)
	// t.TempDir's are 0755: a stateDir is 0711.
	for _, dir := range []string{node, elsewhere, nobodys} {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(nobodys, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	signed := func(dir string, key []byte) *oci.Stamp {
		st := &oci.Stamp{Version: oci.StampVersion, Owner: "p", ID: "p", Root: "/run/runc", Bundle: "/b", StateDir: dir, HostID: 1 << 30, Size: 65536}
		st.Sign(key)
		return st
	}
	copied := signed(elsewhere, otherKey)
	copied.ID = "q"
	copied.Sign(otherKey)
	cases := []struct {
		name     string
		stateDir string // configured
		stamp    *oci.Stamp
		ok       bool // verifyStamp
		own      bool // verifyOwnStamp
		foreign  bool
	}{
		{"this node's", node, signed(node, nodeKey), true, true, false},
		{"signed with the key of the private stateDir it names", node, signed(elsewhere, otherKey), false, true, true},
		{"no key in the configured stateDir", t.TempDir(), signed(elsewhere, otherKey), false, true, true},
		{"this node's key, another stateDir named", node, signed(elsewhere, nodeKey), true, true, false},
		{"the stateDir it names is readable by others", node, signed(open, openKey), false, false, false},
		{"the stateDir it names is not root's", node, signed(nobodys, nobodysKey), false, false, false},
		{"the stateDir it names has another key", node, signed(elsewhere, nodeKey[:16]), false, false, false},
		{"written for another container", node, copied, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &Call{Cfg: &config.Config{StateDir: c.stateDir}}
			b := oci.Binding{ID: "p", Root: "/run/runc", Bundle: "/b"}
			err := a.verifyStamp(c.stamp, b, true)
			if (err == nil) != c.ok {
				t.Fatalf("verifyStamp: %v, want ok %v", err, c.ok)
			}
			if err != nil && !errors.Is(err, oci.ErrForgedStamp) && !errors.Is(err, oci.ErrCopiedStamp) && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("verifyStamp: %v: neither forged, copied nor a missing key", err)
			}
			foreign, err := a.verifyOwnStamp(c.stamp, b, true)
			if (err == nil) != c.own || foreign != c.foreign {
				t.Fatalf("verifyOwnStamp: foreign %v, %v; want ok %v, foreign %v", foreign, err, c.own, c.foreign)
			}
		})
	}
}

// A second create of the same bundle starts from the caller's spec: the
// network namespace entry netjoin removed comes back.
func TestUndoStampNetns(t *testing.T) {
	s := &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "pid"}}}, Annotations: map[string]string{}}
	undoStamp(s, &oci.Stamp{Netns: "/var/run/netns/cni-1"})
	want := []specs.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: "/var/run/netns/cni-1"}}
	if !reflect.DeepEqual(s.Linux.Namespaces, want) {
		t.Errorf("namespaces after undo = %v, want %v", s.Linux.Namespaces, want)
	}
}

// A second create of the same bundle starts from the caller's spec: the
// mappings of a joined user namespace added for runc 1.1 go, the caller's
// entry that joins it stays.
func TestUndoStampJoinedMappings(t *testing.T) {
	m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000000, Size: 65536}}
	userns := []specs.LinuxNamespace{{Type: "pid"}, {Type: "user", Path: "/proc/42/ns/user"}}
	for _, joined := range []bool{true, false} {
		s := &specs.Spec{Linux: &specs.Linux{Namespaces: append([]specs.LinuxNamespace(nil), userns...), UIDMappings: m, GIDMappings: m}, Annotations: map[string]string{}}
		undoStamp(s, &oci.Stamp{JoinedMappings: joined})
		if !reflect.DeepEqual(s.Linux.Namespaces, userns) {
			t.Errorf("JoinedMappings %v: namespaces after undo = %v, want %v", joined, s.Linux.Namespaces, userns)
		}
		if got := len(s.Linux.UIDMappings) > 0 || len(s.Linux.GIDMappings) > 0; got == joined {
			t.Errorf("JoinedMappings %v: mappings after undo = %v, %v", joined, s.Linux.UIDMappings, s.Linux.GIDMappings)
		}
	}
}

// The modifier takes out the net.* sysctls and only them; undoStamp puts
// them back, so a second create of the bundle starts from the caller's.
func TestNetSysctlModifierAndUndo(t *testing.T) {
	caller := map[string]string{"net.ipv4.ping_group_range": "0 2147483647", "net/ipv4/conf/eth0.1/forwarding": "1", "kernel.shm_rmid_forced": "1"}
	cases := []struct {
		name string
		in   map[string]string
		want map[string]string
	}{
		{"mixed", caller, map[string]string{"kernel.shm_rmid_forced": "1"}},
		{"only net", map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}, nil},
		{"none", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := map[string]string{}
			for k, v := range c.in {
				in[k] = v
			}
			if len(in) == 0 {
				in = nil
			}
			s := &specs.Spec{Linux: &specs.Linux{Sysctl: in}, Annotations: map[string]string{}}
			stamp := &oci.Stamp{NetSysctls: netns.SysctlsOf(s)}
			if err := (netns.SysctlModifier{}).Modify(s); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Linux.Sysctl, c.want) {
				t.Errorf("sysctls after the modifier = %v, want %v", s.Linux.Sysctl, c.want)
			}
			undoStamp(s, stamp)
			if len(c.in) > 0 && !reflect.DeepEqual(s.Linux.Sysctl, c.in) || len(c.in) == 0 && len(s.Linux.Sysctl) != 0 {
				t.Errorf("sysctls after undo = %v, want %v", s.Linux.Sysctl, c.in)
			}
		})
	}
}

// A second create of a bundle whose IPC and UTS namespaces were pointed
// at the pod's own (podns.go) starts from the caller's paths again.
func TestUndoStampPodNS(t *testing.T) {
	s := &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
		{Type: specs.PIDNamespace},
		{Type: specs.IPCNamespace, Path: "/state/pods/p/ipc"},
		{Type: specs.UTSNamespace, Path: "/state/pods/p/uts"},
		{Type: specs.NetworkNamespace, Path: "/crio/netns/p"},
	}}, Annotations: map[string]string{}}
	undoStamp(s, &oci.Stamp{PodNS: map[string]string{"ipc": "/crio/ipcns/p", "uts": "/crio/utsns/p"}})
	want := []specs.LinuxNamespace{
		{Type: specs.PIDNamespace},
		{Type: specs.IPCNamespace, Path: "/crio/ipcns/p"},
		{Type: specs.UTSNamespace, Path: "/crio/utsns/p"},
		{Type: specs.NetworkNamespace, Path: "/crio/netns/p"},
	}
	if !reflect.DeepEqual(s.Linux.Namespaces, want) {
		t.Errorf("namespaces after undo: %+v; want %+v", s.Linux.Namespaces, want)
	}
}
