package libuserns

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

const pin = "/run/runc-userns/pods/p/userns"

var podMap = PodMappings(3000000000, 65536)

func ns(t specs.LinuxNamespaceType, path string) specs.LinuxNamespace {
	return specs.LinuxNamespace{Type: t, Path: path}
}

// k8sSpec is a container spec as containerd writes it, without userns.
func k8sSpec() *specs.Spec {
	return &specs.Spec{
		Version:  "1.1.0",
		Process:  &specs.Process{Args: []string{"sh"}, Cwd: "/"},
		Root:     &specs.Root{Path: "rootfs"},
		Hostname: "h",
		Mounts:   []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				ns(specs.PIDNamespace, ""),
				ns(specs.IPCNamespace, "/proc/42/ns/ipc"),
				ns(specs.NetworkNamespace, "/proc/42/ns/net"),
				ns(specs.MountNamespace, ""),
			},
			CgroupsPath: "kubepods.slice:cri-containerd:c1",
			MaskedPaths: []string{"/proc/kcore"},
		},
		Annotations: map[string]string{"io.kubernetes.cri.container-type": "container"},
	}
}

// without returns s with the fields the modifier owns cleared, for
// checking that nothing else moved.
func without(t *testing.T, s *specs.Spec) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var c specs.Spec
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Linux != nil {
		c.Linux.Namespaces, c.Linux.UIDMappings, c.Linux.GIDMappings = nil, nil, nil
		if reflect.DeepEqual(*c.Linux, specs.Linux{}) {
			c.Linux = nil // a section the modifier had to create
		}
	}
	out, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestModify(t *testing.T) {
	other := []specs.LinuxIDMapping{m(0, 100000, 65536)}
	cases := []struct {
		name   string
		spec   func() *specs.Spec
		mod    Modifier
		wantNS []specs.LinuxNamespace
		// The mappings must be the modifier's (none when it has none).
		wantErr string
	}{
		{
			name:   "nil linux",
			spec:   func() *specs.Spec { return &specs.Spec{Version: "1.1.0"} },
			mod:    Modifier{Path: pin, UID: podMap, GID: podMap},
			wantNS: []specs.LinuxNamespace{ns(specs.UserNamespace, pin)},
		},
		{
			name: "user namespace is appended: existing entries keep their index",
			spec: k8sSpec,
			mod:  Modifier{Path: pin, UID: podMap, GID: podMap},
			wantNS: []specs.LinuxNamespace{
				ns(specs.PIDNamespace, ""),
				ns(specs.IPCNamespace, "/proc/42/ns/ipc"),
				ns(specs.NetworkNamespace, "/proc/42/ns/net"),
				ns(specs.MountNamespace, ""),
				ns(specs.UserNamespace, pin),
			},
		},
		{
			name: "an existing user namespace entry is replaced in place",
			spec: func() *specs.Spec {
				s := k8sSpec()
				s.Linux.Namespaces = append(s.Linux.Namespaces, ns(specs.UserNamespace, ""))
				s.Linux.UIDMappings, s.Linux.GIDMappings = other, other
				return s
			},
			mod: Modifier{Path: pin, UID: podMap, GID: podMap},
			wantNS: []specs.LinuxNamespace{
				ns(specs.PIDNamespace, ""),
				ns(specs.IPCNamespace, "/proc/42/ns/ipc"),
				ns(specs.NetworkNamespace, "/proc/42/ns/net"),
				ns(specs.MountNamespace, ""),
				ns(specs.UserNamespace, pin),
			},
		},
		{
			name: "an entry for another path is replaced",
			spec: func() *specs.Spec {
				s := k8sSpec()
				s.Linux.Namespaces = append([]specs.LinuxNamespace{ns(specs.UserNamespace, "/proc/1/ns/user")}, s.Linux.Namespaces[:1]...)
				return s
			},
			mod:    Modifier{Path: pin, UID: podMap, GID: podMap},
			wantNS: []specs.LinuxNamespace{ns(specs.UserNamespace, pin), ns(specs.PIDNamespace, "")},
		},
		{
			name: "different uid and gid mappings",
			spec: k8sSpec,
			mod:  Modifier{Path: pin, UID: podMap, GID: other},
			wantNS: []specs.LinuxNamespace{
				ns(specs.PIDNamespace, ""),
				ns(specs.IPCNamespace, "/proc/42/ns/ipc"),
				ns(specs.NetworkNamespace, "/proc/42/ns/net"),
				ns(specs.MountNamespace, ""),
				ns(specs.UserNamespace, pin),
			},
		},
		{
			name: "neither mapping (runc >= 1.2 reads them from the namespace)",
			spec: k8sSpec,
			mod:  Modifier{Path: pin},
			wantNS: []specs.LinuxNamespace{
				ns(specs.PIDNamespace, ""),
				ns(specs.IPCNamespace, "/proc/42/ns/ipc"),
				ns(specs.NetworkNamespace, "/proc/42/ns/net"),
				ns(specs.MountNamespace, ""),
				ns(specs.UserNamespace, pin),
			},
		},
		{
			name: "neither mapping drops the spec's own",
			spec: func() *specs.Spec {
				s := k8sSpec()
				s.Linux.Namespaces = []specs.LinuxNamespace{ns(specs.UserNamespace, "")}
				s.Linux.UIDMappings, s.Linux.GIDMappings = other, other
				return s
			},
			mod:    Modifier{Path: pin, UID: []specs.LinuxIDMapping{}},
			wantNS: []specs.LinuxNamespace{ns(specs.UserNamespace, pin)},
		},
		{name: "no path", spec: k8sSpec, mod: Modifier{UID: podMap, GID: podMap}, wantErr: "path"},
		{name: "no path, no mappings", spec: k8sSpec, mod: Modifier{}, wantErr: "path"},
		{name: "no uid mapping", spec: k8sSpec, mod: Modifier{Path: pin, GID: podMap}, wantErr: "mappings"},
		{name: "no gid mapping", spec: k8sSpec, mod: Modifier{Path: pin, UID: podMap, GID: []specs.LinuxIDMapping{}}, wantErr: "mappings"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.spec()
			before := without(t, s)
			orig := c.spec()
			err := c.mod.Modify(s)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Modify = %v, want an error mentioning %q", err, c.wantErr)
				}
				if !reflect.DeepEqual(s, orig) {
					t.Errorf("a failed Modify changed the spec: %+v", s.Linux)
				}
				return
			}
			if err != nil {
				t.Fatalf("Modify: %v", err)
			}
			if !reflect.DeepEqual(s.Linux.Namespaces, c.wantNS) {
				t.Errorf("namespaces = %v, want %v", s.Linux.Namespaces, c.wantNS)
			}
			if !Equal(s.Linux.UIDMappings, c.mod.UID) || !Equal(s.Linux.GIDMappings, c.mod.GID) {
				t.Errorf("mappings = %v / %v, want %v / %v", s.Linux.UIDMappings, s.Linux.GIDMappings, c.mod.UID, c.mod.GID)
			}
			if after := without(t, s); after != before {
				t.Errorf("Modify changed more than the user namespace and mappings:\n%s\nwas\n%s", after, before)
			}
			if !HasUserns(s) {
				t.Errorf("HasUserns is false after Modify")
			}
			// The spec must not share the modifier's slices.
			if len(c.mod.UID) > 0 {
				s.Linux.UIDMappings[0].HostID, s.Linux.GIDMappings[0].HostID = 7, 7
				if c.mod.UID[0].HostID == 7 || c.mod.GID[0].HostID == 7 {
					t.Errorf("the spec's mappings alias the modifier's")
				}
			}
		})
	}
}

func TestHasUserns(t *testing.T) {
	cases := []struct {
		name string
		spec *specs.Spec
		want bool
	}{
		{"nil linux", &specs.Spec{}, false},
		{"empty linux", &specs.Spec{Linux: &specs.Linux{}}, false},
		{"other namespaces", k8sSpec(), false},
		{"uid mappings only", &specs.Spec{Linux: &specs.Linux{UIDMappings: podMap}}, true},
		{"gid mappings only", &specs.Spec{Linux: &specs.Linux{GIDMappings: podMap}}, true},
		{"new user namespace", &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{ns(specs.UserNamespace, "")}}}, true},
		{"joined user namespace", &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{ns(specs.PIDNamespace, ""), ns(specs.UserNamespace, "/proc/1/ns/user")}}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := HasUserns(c.spec); got != c.want {
				t.Errorf("HasUserns = %v, want %v", got, c.want)
			}
		})
	}
}

func TestPrivileged(t *testing.T) {
	all := &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN", "CAP_NET_ADMIN", "CAP_SYS_ADMIN"}}
	defaults := &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN", "CAP_NET_RAW", "CAP_SETUID"}}
	masked := &specs.Spec{Linux: &specs.Linux{MaskedPaths: []string{"/proc/kcore"}}}
	cases := []struct {
		name string
		spec *specs.Spec
		caps *specs.LinuxCapabilities
		want bool
	}{
		{"privileged (containerd, CRI-O)", &specs.Spec{Linux: &specs.Linux{}}, all, true},
		{"privileged, no linux", &specs.Spec{}, all, true},
		{"no capabilities", &specs.Spec{Linux: &specs.Linux{}}, nil, false},
		{"default capabilities, nothing masked", &specs.Spec{Linux: &specs.Linux{}}, defaults, false},
		{"CAP_SYS_ADMIN added, paths masked", masked, all, false},
		{"CAP_SYS_ADMIN only effective", &specs.Spec{Linux: &specs.Linux{}}, &specs.LinuxCapabilities{Effective: []string{"CAP_SYS_ADMIN"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Privileged(c.spec, c.caps); got != c.want {
				t.Errorf("Privileged = %v, want %v", got, c.want)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	cases := []struct {
		name   string
		spec   func() *specs.Spec
		path   string
		wantNS []specs.LinuxNamespace
	}{
		{
			name: "undoes Modify",
			spec: func() *specs.Spec {
				s := k8sSpec()
				if err := (Modifier{Path: pin, UID: podMap, GID: podMap}).Modify(s); err != nil {
					panic(err)
				}
				return s
			},
			path:   pin,
			wantNS: k8sSpec().Linux.Namespaces,
		},
		{
			name: "only the entry for that path",
			spec: func() *specs.Spec {
				s := k8sSpec()
				s.Linux.Namespaces = []specs.LinuxNamespace{ns(specs.UserNamespace, pin), ns(specs.UserNamespace, "/other"), ns(specs.PIDNamespace, "")}
				s.Linux.UIDMappings, s.Linux.GIDMappings = podMap, podMap
				return s
			},
			path:   pin,
			wantNS: []specs.LinuxNamespace{ns(specs.UserNamespace, "/other"), ns(specs.PIDNamespace, "")},
		},
		{
			name: "the only namespace",
			spec: func() *specs.Spec {
				return &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{ns(specs.UserNamespace, pin)}, UIDMappings: podMap, GIDMappings: podMap}}
			},
			path:   pin,
			wantNS: []specs.LinuxNamespace{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.spec()
			Remove(s, c.path)
			if len(s.Linux.Namespaces) != len(c.wantNS) || (len(c.wantNS) > 0 && !reflect.DeepEqual(s.Linux.Namespaces, c.wantNS)) {
				t.Errorf("namespaces = %v, want %v", s.Linux.Namespaces, c.wantNS)
			}
			if len(s.Linux.UIDMappings) != 0 || len(s.Linux.GIDMappings) != 0 {
				t.Errorf("mappings left: %v / %v", s.Linux.UIDMappings, s.Linux.GIDMappings)
			}
		})
	}
	t.Run("nil linux", func(t *testing.T) {
		s := &specs.Spec{}
		Remove(s, pin)
		if s.Linux != nil {
			t.Errorf("Remove created a linux section")
		}
	})
	t.Run("Modify then Remove leaves the spec as it was", func(t *testing.T) {
		s := k8sSpec()
		if err := (Modifier{Path: pin, UID: podMap, GID: podMap}).Modify(s); err != nil {
			t.Fatal(err)
		}
		Remove(s, pin)
		want, _ := json.Marshal(k8sSpec())
		if got, _ := json.Marshal(s); string(got) != string(want) {
			t.Errorf("after Modify and Remove:\n%s\nwant\n%s", got, want)
		}
	})
}
