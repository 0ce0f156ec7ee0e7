package oci

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestValidate: an edited spec that keeps every rule passes; one that
// breaks a rule is refused with that rule's name and message.
func TestValidate(t *testing.T) {
	pod := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 2147483648, Size: 65536}}
	stamp := func() *Stamp {
		return &Stamp{Owner: "p", StateDir: "/run/ru", HostID: 2147483648, Size: 65536,
			UsernsPath: "/run/ru/pods/p/userns", Mappings: true, Staged: "/run/ru/containers/h/c/rootfs"}
	}
	good := func() *specs.Spec {
		return &specs.Spec{
			Root: &specs.Root{Path: "/run/ru/containers/h/c/rootfs"},
			Linux: &specs.Linux{
				Namespaces:  []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.UserNamespace, Path: "/run/ru/pods/p/userns"}},
				UIDMappings: pod, GIDMappings: pod,
			},
			Mounts: []specs.Mount{{Destination: "/v", Source: "/run/ru/containers/h/c/mounts/0", Type: "bind"}},
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*specs.Spec, *Stamp)
		wants string // "" passes
	}{
		{"as edited", func(*specs.Spec, *Stamp) {}, ""},
		{"not a pool container: only the staged-mounts rule", func(s *specs.Spec, st *Stamp) {
			*st = Stamp{StateDir: "/run/ru"}
			s.Linux = nil
		}, ""},
		{"a staged mount with mappings", func(s *specs.Spec, _ *Stamp) { s.Mounts[0].UIDMappings = pod }, "(staged mounts)"},
		{"no linux section", func(s *specs.Spec, _ *Stamp) { s.Linux = nil }, "no linux section"},
		{"another mapping", func(s *specs.Spec, _ *Stamp) {
			s.Linux.GIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 3000000000, Size: 65536}}
		}, "(pod mapping)"},
		{"mappings left to the pin, but present", func(_ *specs.Spec, st *Stamp) { st.Mappings = false }, "(pod mapping)"},
		{"host root mapped", func(s *specs.Spec, st *Stamp) {
			st.HostID = 0
			s.Linux.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 65536}}
			s.Linux.GIDMappings = s.Linux.UIDMappings
		}, "(no host root)"},
		{"another user namespace", func(s *specs.Spec, _ *Stamp) { s.Linux.Namespaces[1].Path = "/proc/1/ns/user" }, "(one user namespace)"},
		{"two user namespaces", func(s *specs.Spec, _ *Stamp) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, s.Linux.Namespaces[1])
		}, "(one user namespace)"},
		{"root.path not the staging mount", func(s *specs.Spec, _ *Stamp) { s.Root.Path = "rootfs" }, "(staged rootfs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, st := good(), stamp()
			tc.edit(s, st)
			err := Validate(s, st)
			switch {
			case tc.wants == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wants != "" && (err == nil || !strings.Contains(err.Error(), tc.wants)):
				t.Fatalf("Validate = %v, want an error with %q", err, tc.wants)
			}
		})
	}
}
