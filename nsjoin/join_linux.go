package nsjoin

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Plan resolves the container's "container:<ID>" reference, if it has one
// (nil, nil otherwise: see Wanted), pinning the target's namespaces in
// r.PinDir, and decides the join's edits of the spec: the target's PID
// namespace, and the user namespace that owns it (see Join). On error
// nothing stays pinned.
func Plan(s *specs.Spec, r Request, h Host) (*Join, error) {
	ref, err := r.ref(s, h.ValidateID)
	if err != nil || ref == "" {
		return nil, err
	}
	if r.PodIdentity != nil {
		return nil, fmt.Errorf("cannot join the PID namespace of container %s: %w", ref, r.PodIdentity)
	}
	t, err := Resolve(h, Options{Root: r.Root, ID: r.ID, Pod: r.Pod, Cgroup: r.Cgroup, Target: ref, PinDir: r.PinDir})
	if err != nil {
		return nil, err
	}
	j := &Join{target: t, pinDir: r.PinDir, takes: true}
	j.mods = []Modifier{PIDModifier{Path: t.PIDNS}, annotation{r.Keys.PIDNamespace, RefPrefix + ref}}
	if err := j.planUserns(s, &r, h); err != nil {
		if cerr := j.Cleanup(); cerr != nil {
			r.Log.Warnf("container %s: %v", r.ID, cerr)
		}
		return nil, err
	}
	j.logPlan(&r)
	return j, nil
}

// Cleanup drops the pins: the runtime no longer needs them once it has
// created the container (its init has joined the namespaces, and `runc
// exec` enters through the init's /proc/<pid>/ns entries), nor after a
// failed create.
func (j *Join) Cleanup() error { return Release(j.pinDir) }
