package oci

import (
	"errors"
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/libuserns"
)

// check is one named rule the edited spec must satisfy before it is
// written; its message states the rule.
type check struct {
	name string
	// pool: the rule applies to containers in a pool user namespace only.
	pool bool
	fn   func(*specs.Spec, *Stamp) error
}

var checks = []check{
	{"staged mounts", false, func(s *specs.Spec, st *Stamp) error {
		for _, m := range s.Mounts {
			if strings.HasPrefix(m.Source, st.StateDir+"/") && (len(m.UIDMappings) > 0 || len(m.GIDMappings) > 0) {
				return fmt.Errorf("mount %s: a staged idmapped mount must not carry mappings for the runtime to apply again", m.Destination)
			}
		}
		return nil
	}},
	{"pod mapping", true, func(s *specs.Spec, st *Stamp) error {
		want := libuserns.PodMappings(st.HostID, st.Size)
		if !st.Mappings {
			want = nil // the runtime reads them from the pinned namespace
		}
		if !libuserns.Equal(s.Linux.UIDMappings, want) || !libuserns.Equal(s.Linux.GIDMappings, want) {
			return fmt.Errorf("uid and gid mappings must both be exactly %q", libuserns.FormatMappings(want))
		}
		return nil
	}},
	{"no host root", true, func(s *specs.Spec, _ *Stamp) error {
		if libuserns.MapsHostRoot(s.Linux.UIDMappings) || libuserns.MapsHostRoot(s.Linux.GIDMappings) {
			return errors.New("a pool mapping must never map host uid or gid 0")
		}
		return nil
	}},
	{"one user namespace", true, func(s *specs.Spec, st *Stamp) error {
		n := 0
		for _, ns := range s.Linux.Namespaces {
			if ns.Type == specs.UserNamespace {
				n++
				if ns.Path != st.UsernsPath {
					return fmt.Errorf("the user namespace must be the pod's pin %s, not %q", st.UsernsPath, ns.Path)
				}
			}
		}
		if n != 1 {
			return fmt.Errorf("the spec must have exactly one user namespace entry, has %d", n)
		}
		return nil
	}},
	{"staged rootfs", true, func(s *specs.Spec, st *Stamp) error {
		if s.Root == nil || s.Root.Path != st.Staged {
			return fmt.Errorf("root.path must be the idmapped staging mount %s", st.Staged)
		}
		return nil
	}},
}

// Validate runs every check on a spec the wrapper edited, against the
// stamp that records the edits, and reports the first rule broken.
func Validate(s *specs.Spec, st *Stamp) error {
	for _, c := range checks {
		if c.pool && st.Owner == "" {
			continue
		}
		if c.pool && s.Linux == nil {
			return errors.New("invalid edited spec: no linux section")
		}
		if err := c.fn(s, st); err != nil {
			return fmt.Errorf("invalid edited spec (%s): %w", c.name, err)
		}
	}
	return nil
}
