package nsjoin

import (
	"fmt"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Modifier points the spec's PID namespace at Path (a pin made by
// Resolve). It edits nothing but the pid entry of linux.namespaces, which
// it adds when there is none. The user namespace is the caller's to set
// (see Target.Userns).
type Modifier struct {
	Path string
}

// Modify implements the spec modifier contract: no I/O, no allocation.
func (m Modifier) Modify(s *specs.Spec) error {
	if m.Path == "" || !filepath.IsAbs(m.Path) {
		return fmt.Errorf("nsjoin: modifier needs an absolute PID namespace path, not %q", m.Path)
	}
	if s.Linux == nil {
		s.Linux = &specs.Linux{}
	}
	found := false
	for i := range s.Linux.Namespaces {
		if s.Linux.Namespaces[i].Type == specs.PIDNamespace {
			s.Linux.Namespaces[i].Path = m.Path
			found = true
		}
	}
	if !found {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: m.Path})
	}
	return nil
}
