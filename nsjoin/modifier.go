package nsjoin

import (
	"fmt"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Modifier is one edit of a spec: no argv, no environment, no I/O (the
// wrapper's spec modifier contract). A Join's edits are Modifiers.
type Modifier interface {
	Modify(*specs.Spec) error
}

// PIDModifier points the spec's PID namespace at Path (a pin made by
// Resolve). It edits nothing but the pid entry of linux.namespaces, which
// it adds when there is none. The user namespace is the caller's to set
// (see Target.Userns).
type PIDModifier struct {
	Path string
}

// Modify implements Modifier: no I/O, no allocation.
func (m PIDModifier) Modify(s *specs.Spec) error {
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
