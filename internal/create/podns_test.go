package create

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/libuserns"
)

// Only IPC and UTS namespaces joined by a path that the host's user
// namespace owns (CRI-O's pinns ones) are the pod's to replace: not new
// ones (containerd's sandbox), nor ones another user namespace owns
// (containerd's /proc/<sandbox>/ns paths, podman's --ipc container:NAME).
func TestHostOwnedPodNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for user namespaces and mounts")
	}
	m := libuserns.PodMappings(3000000000, 65536)
	nss, err := libuserns.NewPodNamespaces(m, m, true)
	if err != nil {
		t.Fatal(err)
	}
	defer nss.Close()
	dir := t.TempDir()
	podIPC, podUTS := filepath.Join(dir, "ipc"), filepath.Join(dir, "uts")
	for _, p := range []struct {
		ns   *os.File
		path string
	}{{nss.IPC, podIPC}, {nss.UTS, podUTS}} {
		if err := libuserns.Pin(p.ns, p.path); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = libuserns.Unpin(p.path) })
	}
	cases := []struct {
		name string
		ns   []specs.LinuxNamespace
		want map[specs.LinuxNamespaceType]string
		err  bool
	}{
		{"containerd sandbox: new IPC and UTS", []specs.LinuxNamespace{{Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}}, nil, false},
		{"host-owned IPC and UTS (CRI-O)", []specs.LinuxNamespace{{Type: specs.IPCNamespace, Path: "/proc/self/ns/ipc"}, {Type: specs.UTSNamespace, Path: "/proc/self/ns/uts"}},
			map[specs.LinuxNamespaceType]string{specs.IPCNamespace: "/proc/self/ns/ipc", specs.UTSNamespace: "/proc/self/ns/uts"}, false},
		{"owned by another user namespace", []specs.LinuxNamespace{{Type: specs.IPCNamespace, Path: podIPC}, {Type: specs.UTSNamespace, Path: podUTS}}, nil, false},
		{"only UTS host-owned", []specs.LinuxNamespace{{Type: specs.IPCNamespace, Path: podIPC}, {Type: specs.UTSNamespace, Path: "/proc/self/ns/uts"}},
			map[specs.LinuxNamespaceType]string{specs.UTSNamespace: "/proc/self/ns/uts"}, false},
		{"a path of another type", []specs.LinuxNamespace{{Type: specs.IPCNamespace, Path: podUTS}}, nil, true},
		{"no linux namespaces", nil, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := hostOwnedPodNS(&specs.Spec{Linux: &specs.Linux{Namespaces: c.ns}})
			if (err != nil) != c.err {
				t.Fatalf("hostOwnedPodNS: %v, want error %v", err, c.err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("hostOwnedPodNS = %v, want %v", got, c.want)
			}
		})
	}
}

// nsPathModifier changes the path of its type's entry only, and refuses a
// spec without one.
func TestNSPathModifier(t *testing.T) {
	s := &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
		{Type: specs.IPCNamespace, Path: "/ns/ipcns/x"}, {Type: specs.UTSNamespace, Path: "/ns/utsns/x"},
	}}}
	if err := (nsPathModifier{specs.IPCNamespace, "/state/pods/x/ipc"}).Modify(s); err != nil {
		t.Fatal(err)
	}
	want := []specs.LinuxNamespace{{Type: specs.IPCNamespace, Path: "/state/pods/x/ipc"}, {Type: specs.UTSNamespace, Path: "/ns/utsns/x"}}
	if !reflect.DeepEqual(s.Linux.Namespaces, want) {
		t.Errorf("namespaces: %+v, want %+v", s.Linux.Namespaces, want)
	}
	if err := (nsPathModifier{specs.PIDNamespace, "/p"}).Modify(s); err == nil {
		t.Error("a missing entry was not refused")
	}
}
