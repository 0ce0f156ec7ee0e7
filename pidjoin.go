package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/nsjoin"
)

// pidJoin is a resolved "container:<ID>" PID namespace reference of the
// container being created: the target's PID namespace is pinned under the
// container's pin directory until Cleanup (once runc has created the
// container, or after a failed create) or releasePIDJoin (delete, for a
// create killed before it could clean up).
type pidJoin struct {
	target *nsjoin.Target
	pinDir string
	mods   []modifier
	takes  bool
}

// Modifiers point the spec's PID namespace at the pin, record the
// reference in the pid-namespace annotation (so that a second create of
// the same bundle resolves it again rather than reusing a stale pin), and,
// when the target runs in a user namespace the pool will not give this
// container anyway, join that user namespace with its mappings.
func (j *pidJoin) Modifiers() []modifier { return j.mods }

// TakesUserns reports whether the join decides the container's user
// namespace, so the caller must not give it one from the pool: the
// container joins the target's (or stays in ours with it). It is false
// only when the pool would give it the very namespace the target runs in:
// an app container of a pool pod joining a container of the same pod,
// which then joins the pod's range as usual (idmapped rootfs included).
func (j *pidJoin) TakesUserns() bool { return j.takes }

// Cleanup drops the pins: runc no longer needs them once it has created
// the container, nor after a failed create.
func (j *pidJoin) Cleanup() error { return nsjoin.Release(j.pinDir) }

// releasePIDJoin drops the pins a container's create made in pinDir, if
// any; idempotent, for delete. pinDir itself stays.
func releasePIDJoin(pinDir string) error { return nsjoin.Release(pinDir) }

// wantsPIDJoin reports whether the spec refers to another container's PID
// namespace (or tries to and gets it wrong): such a spec must go through
// resolvePIDJoin, never straight to runc.
func wantsPIDJoin(s *specs.Spec, req oci.Request) bool {
	if strings.TrimSpace(req.PIDNamespace) != "" {
		return true
	}
	path, _ := pidNamespace(s)
	return nsjoin.LooksLikeRef(path)
}

// pidNamespace returns the path of the spec's pid namespace entry and
// whether there is one.
func pidNamespace(s *specs.Spec) (string, bool) {
	if s.Linux == nil {
		return "", false
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.PIDNamespace {
			return ns.Path, true
		}
	}
	return "", false
}

// pidJoinRef returns the ID of the container whose PID namespace the spec
// asks to join, from the annotation or a "container:<ID>" pid namespace
// path, or "" for none. A pin of ours (ours reports it: what an earlier
// create of the same bundle put in the spec) yields to the annotation.
func pidJoinRef(s *specs.Spec, req oci.Request, ours func(string) bool) (string, error) {
	var annID string
	if v := strings.TrimSpace(req.PIDNamespace); v != "" {
		id, err := nsjoin.ParseAnnotation(v, oci.ValidateID)
		if err != nil {
			return "", fmt.Errorf("%s: %w", oci.AnnotationPIDNamespace, err)
		}
		annID = id
	}
	path, hasEntry := pidNamespace(s)
	pathID, isRef, err := nsjoin.ParseRef(path, oci.ValidateID)
	if err != nil {
		return "", fmt.Errorf("linux.namespaces pid path: %w", err)
	}
	switch {
	case annID == "" && !isRef:
		return "", nil
	case annID == "":
		return pathID, nil
	case isRef && pathID != annID:
		return "", fmt.Errorf("%s=%s%s but the spec's pid namespace path is %q: they must name the same container", oci.AnnotationPIDNamespace, nsjoin.RefPrefix, annID, path)
	case isRef || path == "" && hasEntry || ours(path):
		return annID, nil
	case !hasEntry:
		return "", fmt.Errorf("%s=%s%s but the spec shares the host's PID namespace (no pid entry in linux.namespaces): remove one or the other", oci.AnnotationPIDNamespace, nsjoin.RefPrefix, annID)
	}
	return "", fmt.Errorf("%s=%s%s but the spec already joins the PID namespace at %q: remove one or the other", oci.AnnotationPIDNamespace, nsjoin.RefPrefix, annID, path)
}

// resolvePIDJoin resolves the container's "container:<ID>" reference, if
// it has one (nil, nil otherwise), pinning the target's namespaces in
// pinDir. root is runc's --root; withMappings: the runtime needs the uid
// and gid mappings beside a user namespace path (runc < 1.2).
func (a *app) resolvePIDJoin(s *specs.Spec, req oci.Request, root, pinDir string, withMappings bool) (*pidJoin, error) {
	ref, err := pidJoinRef(s, req, ourPin(a.cfg.StateDir))
	if err != nil || ref == "" {
		return nil, err
	}
	if err := oci.CheckPodIdentity(a.inv.ID, s.Annotations); err != nil {
		return nil, fmt.Errorf("cannot join the PID namespace of container %s: %w", ref, err)
	}
	t, err := nsjoin.Resolve(joinLookup{a}, nsjoin.Options{
		Root:   root,
		ID:     a.inv.ID,
		Pod:    joinPod(req.Pod),
		Cgroup: oci.PodCgroup(cgroupsPath(s)),
		Target: ref,
		PinDir: pinDir,
	})
	if err != nil {
		return nil, err
	}
	j := &pidJoin{target: t, pinDir: pinDir, takes: true}
	j.mods = []modifier{nsjoin.PIDModifier{Path: t.PIDNS}, annotationModifier{oci.AnnotationPIDNamespace, nsjoin.RefPrefix + ref}}
	if err := j.planUserns(a, s, req, withMappings); err != nil {
		if cerr := j.Cleanup(); cerr != nil {
			a.log.Warnf("container %s: %v", a.inv.ID, cerr)
		}
		return nil, err
	}
	switch {
	case !j.takes:
		a.log.Infof("container %s: joins the PID namespace of container %s (init PID %d, pinned at %s), in its pod's user namespace", a.inv.ID, t.ID, t.PID, t.PIDNS)
	case t.Userns != "":
		a.log.Infof("container %s: joins the PID namespace of container %s (init PID %d, pinned at %s) and its user namespace %s; nothing taken from the pool", a.inv.ID, t.ID, t.PID, t.PIDNS, t.Userns)
	default:
		a.log.Infof("container %s: joins the PID namespace of container %s (init PID %d, pinned at %s); no user namespace of its own", a.inv.ID, t.ID, t.PID, t.PIDNS)
	}
	return j, nil
}

// planUserns decides the container's user namespace: a container can join
// a PID namespace only together with the user namespace that owns it (or
// it cannot mount its /proc), so it is the target's.
func (j *pidJoin) planUserns(a *app, s *specs.Spec, req oci.Request, withMappings bool) error {
	t := j.target
	what := "cannot join the PID namespace of container " + t.ID
	if t.Userns == "" {
		if req.Userns == oci.UsernsAuto {
			return fmt.Errorf("%s: it asks for %s=auto, but container %s runs in the host's user namespace, and a container joins a PID namespace only together with the user namespace that owns it: drop the annotation, or give container %s a user namespace", what, oci.AnnotationUserns, t.ID, t.ID)
		}
		return nil
	}
	if want, err := a.wantUserns(s, req); err == nil && want && !req.Pod.Sandbox && t.Userns == state.Layout(a.cfg.StateDir).Pin(req.Pod.Owner) {
		j.takes = false // the pool gives it the same namespace
		return nil
	}
	if req.Userns == oci.UsernsHost {
		return fmt.Errorf("%s: it asks for %s=host (no user namespace), but container %s runs in user namespace %s, which a container joining its PID namespace must join too: drop the annotation", what, oci.AnnotationUserns, t.ID, t.Userns)
	}
	if err := usernsConflict(s, t, ourPin(a.cfg.StateDir)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	uid, err := libuserns.ParseMappings(bytes.NewReader(t.UIDMap))
	if err != nil {
		return fmt.Errorf("%s: its uid_map: %w", what, err)
	}
	gid, err := libuserns.ParseMappings(bytes.NewReader(t.GIDMap))
	if err != nil {
		return fmt.Errorf("%s: its gid_map: %w", what, err)
	}
	if len(uid) == 0 || len(gid) == 0 {
		return fmt.Errorf("%s: its user namespace %s has no uid or gid mapping", what, t.Userns)
	}
	m := libuserns.Modifier{Path: t.Userns}
	if withMappings {
		m.UID, m.GID = uid, gid
	}
	j.mods = append(j.mods, m)
	return j.planSysfs(a, s)
}

// planSysfs: like a pool container, one that joins the target's user
// namespace and a network namespace that namespace does not own (a CNI
// netns) cannot mount sysfs, and runc < 1.3 cannot even join it.
func (j *pidJoin) planSysfs(a *app, s *specs.Spec) error {
	t := j.target
	foreign, netns, err := foreignNetns(s, func(p string) (bool, error) {
		userns, err := libuserns.OpenPinned(t.Userns)
		if err != nil {
			return false, err
		}
		defer userns.Close()
		return ownedBy(userns)(p)
	})
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", netns, err)
	}
	if !foreign {
		return nil
	}
	feat, err := runc.ProbeSummary(a.runtime, a.cfg.StateDir)
	if err != nil {
		return err
	}
	if feat.JoinsUsernsFirst {
		return fmt.Errorf("cannot join the PID namespace of container %s: its user namespace %s must be joined too, and the network namespace %s is not that namespace's, which runc %s cannot enter after joining it (runc >= 1.3 can): upgrade runc, or use the target's network namespace", t.ID, t.Userns, netns, feat.Version)
	}
	a.log.Infof("container %s: joins network namespace %s, which the user namespace of container %s does not own: sysfs becomes a read-only bind of the host's /sys", a.inv.ID, netns, t.ID)
	j.mods = append(j.mods, sysfsModifier{native: feat.NativeIdmap})
	return nil
}

// usernsConflict refuses a spec that asks for a user namespace of its own
// when the target runs in another: a new one, or one joined by a path
// that is neither the target's nor a pin an earlier create of the same
// bundle made (ours reports those).
func usernsConflict(s *specs.Spec, t *nsjoin.Target, ours func(string) bool) error {
	if s.Linux == nil {
		return nil
	}
	entry := false
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != specs.UserNamespace {
			continue
		}
		entry = true
		switch {
		case ours(ns.Path) || ns.Path == t.Userns || ns.Path != "" && sameFile(ns.Path, t.Userns):
		case ns.Path == "":
			return fmt.Errorf("its spec asks for a new user namespace, but container %s runs in user namespace %s, which a container joining its PID namespace must join: remove the user namespace from the spec", t.ID, t.Userns)
		default:
			return fmt.Errorf("its spec joins user namespace %s, but container %s runs in user namespace %s, which a container joining its PID namespace must join: remove the user namespace from the spec", ns.Path, t.ID, t.Userns)
		}
	}
	if !entry && (len(s.Linux.UIDMappings) > 0 || len(s.Linux.GIDMappings) > 0) {
		return fmt.Errorf("its spec has uid/gid mappings for a user namespace of its own, but container %s runs in user namespace %s, which a container joining its PID namespace must join: remove the mappings", t.ID, t.Userns)
	}
	return nil
}

// podUsernsPins names the paths that may already pin a target's user
// namespace: its pod's pin under our state dir, and the one its stamp
// records if this node wrote the stamp. nsjoin uses one only if it is the
// target's namespace (same inode).
func (a *app) podUsernsPins(id string, annotations map[string]string) []string {
	var out []string
	if owner := oci.PodOf(id, annotations).Owner; oci.ValidateID(owner) == nil {
		out = append(out, state.Layout(a.cfg.StateDir).Pin(owner))
	}
	if v, ok := annotations[oci.AnnotationStamp]; ok {
		if st, err := oci.DecodeStamp(v); err == nil && st.UsernsPath != "" && a.verifyStamp(st) == nil {
			out = append(out, st.UsernsPath)
		}
	}
	return out
}

// ourPin reports whether a path is a pin nsjoin makes in a container's
// directory under stateDir (<stateDir>/containers/<root>/<id>/pidns or
// userns): left in a spec by an earlier create of the same bundle, under
// this or another container ID, and replaced by a fresh one.
func ourPin(stateDir string) func(string) bool {
	base := filepath.Join(stateDir, "containers")
	return func(p string) bool {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return false
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return false
		}
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) != 3 || parts[0] == ".." || parts[0] == "." || parts[1] == ".." || parts[1] == "." {
			return false
		}
		dir := filepath.Join(base, parts[0], parts[1])
		return p == nsjoin.PIDNSPin(dir) || p == nsjoin.UsernsPin(dir)
	}
}
