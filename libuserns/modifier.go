package libuserns

import (
	"errors"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Modifier puts a container in the user namespace pinned at Path. runc 1.1
// needs the namespace's mappings in the spec too (it computes the host
// root's IDs from them); runc >= 1.2 reads them from the namespace itself
// and warns when both are given, so UID and GID are left empty for it.
type Modifier struct {
	Path     string
	UID, GID []specs.LinuxIDMapping
}

// Modify implements the spec modifier contract: no I/O, no allocation.
func (m Modifier) Modify(s *specs.Spec) error {
	if m.Path == "" || len(m.UID) != len(m.GID) && (len(m.UID) == 0 || len(m.GID) == 0) {
		return errors.New("libuserns: modifier needs a namespace path, and both mappings or neither")
	}
	if s.Linux == nil {
		s.Linux = &specs.Linux{}
	}
	ns := specs.LinuxNamespace{Type: specs.UserNamespace, Path: m.Path}
	replaced := false
	for i := range s.Linux.Namespaces {
		if s.Linux.Namespaces[i].Type == specs.UserNamespace {
			s.Linux.Namespaces[i] = ns
			replaced = true
		}
	}
	if !replaced {
		// Appended, never inserted: the entries before it keep their
		// indexes, so fields this runtime-spec version does not know
		// survive the rewrite (oci's merge walks arrays by index). Order
		// does not matter to runtimes: runc joins namespaces in its own
		// order.
		s.Linux.Namespaces = append(s.Linux.Namespaces, ns)
	}
	s.Linux.UIDMappings = append([]specs.LinuxIDMapping(nil), m.UID...)
	s.Linux.GIDMappings = append([]specs.LinuxIDMapping(nil), m.GID...)
	if len(m.UID) == 0 {
		s.Linux.UIDMappings, s.Linux.GIDMappings = nil, nil
	}
	return nil
}

// Privileged reports whether a spec is what CRI runtimes make of a
// privileged container (Kubernetes privileged: true, docker --privileged):
// CAP_SYS_ADMIN in the bounding set (caps, the spec's
// process.capabilities) and no masked paths (linux.maskedPaths, which
// every unprivileged container of containerd and CRI-O has). Such a
// container is host root on purpose: its devices, its network namespace
// and /sys are the host's, where a capability held in a user namespace
// counts for nothing.
func Privileged(s *specs.Spec, caps *specs.LinuxCapabilities) bool {
	if caps == nil || !slices.Contains(caps.Bounding, "CAP_SYS_ADMIN") {
		return false
	}
	return s.Linux == nil || len(s.Linux.MaskedPaths) == 0
}

// HasUserns reports whether the spec already asks for a user namespace or
// carries mappings: the caller's choices win over ours.
func HasUserns(s *specs.Spec) bool {
	if s.Linux == nil {
		return false
	}
	if len(s.Linux.UIDMappings) > 0 || len(s.Linux.GIDMappings) > 0 {
		return true
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.UserNamespace {
			return true
		}
	}
	return false
}

// Remove undoes Modify for the namespace at path: the entry and the
// mappings go.
func Remove(s *specs.Spec, path string) {
	if s.Linux == nil {
		return
	}
	kept := s.Linux.Namespaces[:0]
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.UserNamespace && ns.Path == path {
			continue
		}
		kept = append(kept, ns)
	}
	s.Linux.Namespaces = kept
	s.Linux.UIDMappings = nil
	s.Linux.GIDMappings = nil
}
