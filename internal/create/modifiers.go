package create

import (
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/netns"
)

// modifier is one edit of the spec: no argv, no environment, no I/O.
type modifier interface {
	Modify(*specs.Spec) error
}

// modifiers are the spec edits the plan calls for, in order: the join's,
// the user namespace and rootfs, the network namespace's, the mounts',
// and last the stamp that records them.
func (p *plan) modifiers() []modifier {
	var mods []modifier
	if p.join != nil {
		for _, m := range p.join.Modifiers() {
			mods = append(mods, m)
		}
	}
	if p.userns != nil {
		mods = append(mods, *p.userns, rootfsModifier(p.rootfs))
	}
	for _, m := range p.podNS {
		mods = append(mods, m)
	}
	if p.joinedMaps != nil {
		mods = append(mods, *p.joinedMaps)
	}
	if n := p.foreignNet; n != nil {
		if n.sysctls {
			mods = append(mods, netns.SysctlModifier{})
		}
		if n.enter {
			mods = append(mods, netns.InheritModifier{})
		}
		mods = append(mods, netns.SysfsModifier{Native: n.native})
	}
	if p.mounts != nil {
		mods = append(mods, p.mounts.modifiers()...)
	}
	if p.lockedFlags != nil {
		mods = append(mods, p.lockedFlags)
	}
	return append(mods, stampModifier{p.stamp})
}

func (mm *mountPlan) modifiers() []modifier {
	mods := []modifier{idmap.NativeModifier{Candidates: mm.native}, idmap.StagedModifier{Staged: mm.staged}}
	for _, m := range mm.moved {
		mods = append(mods, m)
	}
	if len(mm.skipped) > 0 {
		mods = append(mods, annotationModifier{oci.AnnotationIdmapSkipped, strings.Join(mm.skipped, ",")})
	}
	return mods
}

type rootfsModifier string

func (r rootfsModifier) Modify(s *specs.Spec) error {
	s.Root.Path = string(r)
	return nil
}

// sourceModifier points mount index at source.
type sourceModifier struct {
	index  int
	source string
}

func (m sourceModifier) Modify(s *specs.Spec) error {
	if m.index < 0 || m.index >= len(s.Mounts) {
		return fmt.Errorf("mount index %d out of range", m.index)
	}
	s.Mounts[m.index].Source = m.source
	return nil
}

type annotationModifier struct{ key, value string }

func (m annotationModifier) Modify(s *specs.Spec) error {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[m.key] = m.value
	return nil
}

type stampModifier struct{ *oci.Stamp }

func (m stampModifier) Modify(s *specs.Spec) error {
	v := m.Encode()
	if len(v) > oci.MaxStampValue {
		// A second create of the bundle would refuse to read it back.
		return fmt.Errorf("the record of this create's edits (%s) would take %d bytes, more than %d, mostly the caller's %d mounts and net.* sysctls: give the container fewer mounts (or shorter options), or run it without a pool user namespace and idmapped mounts", oci.AnnotationStamp, len(v), oci.MaxStampValue, len(s.Mounts))
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[oci.AnnotationStamp] = v
	return nil
}
