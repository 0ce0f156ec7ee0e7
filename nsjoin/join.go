package nsjoin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
)

// Request is the joining container's side of a "container:<ID>" join:
// plain values the caller works out from its spec and annotations, the
// node's configuration and the runtime's features.
type Request struct {
	// ID is the joining container's; Root the runtime's --root
	// (absolute), of which the target must be a container too.
	ID, Root string
	// PinDir is the joining container's directory, where the pins are
	// made (see Options.PinDir). Every container's is
	// <PinBase>/<x>/<id>: a pin an earlier create of the same bundle left
	// in the spec, under this or another container ID, is recognised by
	// that and replaced by a fresh one.
	PinDir, PinBase string
	// PIDNamespace is the value of the pid-namespace annotation, "" for
	// none.
	PIDNamespace string
	// Keys are the annotations' keys, which errors name.
	Keys Keys
	// Userns is what the container's userns annotation asks.
	Userns UsernsChoice
	// Pod is the container's pod. PodIdentity, when not nil, says why its
	// pod annotations are not ones a CRI implementation writes
	// (oci.CheckPodIdentity): a join is then refused.
	Pod         Pod
	PodIdentity error
	// Cgroup is the cgroup parent its spec names ("" for none:
	// oci.PodCgroup).
	Cgroup string
	// PoolUserns is the pin of the user namespace the wrapper's pool
	// gives the container anyway (its pod's, for an app container of a
	// pool pod), or "" when the pool gives it none, or a new one.
	PoolUserns string
	// Features are the runtime's.
	Features Features
	// Log gets the join's info and warning lines; not nil.
	Log logrus.FieldLogger
}

// Keys are the wrapper's annotation keys.
type Keys struct {
	// PIDNamespace is the pid-namespace annotation's, under which a join
	// records the reference it resolved.
	PIDNamespace string
	// Userns is the userns annotation's.
	Userns string
}

// UsernsChoice is what a container's userns annotation asks.
type UsernsChoice int

const (
	// UsernsUnset: no annotation, the node's mode decides.
	UsernsUnset UsernsChoice = iota
	// UsernsAuto: a user namespace from the pool ("auto").
	UsernsAuto
	// UsernsHost: no user namespace ("host").
	UsernsHost
)

// Features is what a join needs to know of the runtime.
type Features struct {
	// WithMappings: the runtime needs the uid and gid mappings beside a
	// user namespace path (runc < 1.2).
	WithMappings bool
	// JoinsUsernsFirst: the runtime joins a user namespace given by path
	// before the other namespaces given by path (runc < 1.3), so it cannot
	// join a network namespace the joined user namespace does not own.
	JoinsUsernsFirst bool
	// Version is the runtime's version, for errors.
	Version string
	// Sysfs is the edit that replaces sysfs mounts with a read-only bind
	// of the host's /sys, as the runtime supports it.
	Sysfs Modifier
}

// Join is a resolved "container:<ID>" PID namespace reference of the
// container being created: the target's PID namespace is pinned under the
// container's pin directory until Cleanup (once the runtime has created
// the container, or after a failed create) or Release (delete, for a
// create killed before it could clean up).
type Join struct {
	target *Target
	pinDir string
	mods   []Modifier
	takes  bool
}

// Modifiers point the spec's PID namespace at the pin, record the
// reference in the pid-namespace annotation (so that a second create of
// the same bundle resolves it again rather than reusing a stale pin), and,
// when the target runs in a user namespace the pool will not give this
// container anyway, join that user namespace with its mappings.
func (j *Join) Modifiers() []Modifier { return j.mods }

// TakesUserns reports whether the join decides the container's user
// namespace, so the caller must not give it one from the pool: the
// container joins the target's (or stays in ours with it). It is false
// only when the pool would give it the very namespace the target runs in:
// an app container of a pool pod joining a container of the same pod,
// which then joins the pod's range as usual (idmapped rootfs included).
func (j *Join) TakesUserns() bool { return j.takes }

// Userns is the user namespace the container joins with the target's PID
// namespace ("" for the caller's own): a pin the caller records, so that
// a second create of the bundle removes it from the spec.
func (j *Join) Userns() string { return j.target.Userns }

// Wanted reports whether the spec refers to another container's PID
// namespace (or tries to and gets it wrong), given the value of the
// pid-namespace annotation: such a spec must go through Plan, never
// straight to the runtime.
func Wanted(s *specs.Spec, annotation string) bool {
	if strings.TrimSpace(annotation) != "" {
		return true
	}
	path, _ := pidNamespace(s)
	return LooksLikeRef(path)
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

// ref returns the ID of the container whose PID namespace the spec asks
// to join, from the annotation or a "container:<ID>" pid namespace path,
// or "" for none. A pin of ours (what an earlier create of the same
// bundle put in the spec) yields to the annotation.
func (r *Request) ref(s *specs.Spec, validID func(string) error) (string, error) {
	key := r.Keys.PIDNamespace
	var annID string
	if v := strings.TrimSpace(r.PIDNamespace); v != "" {
		id, err := ParseAnnotation(v, validID)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		annID = id
	}
	path, hasEntry := pidNamespace(s)
	pathID, isRef, err := ParseRef(path, validID)
	if err != nil {
		return "", fmt.Errorf("linux.namespaces pid path: %w", err)
	}
	switch {
	case annID == "" && !isRef:
		return "", nil
	case annID == "":
		return pathID, nil
	case isRef && pathID != annID:
		return "", fmt.Errorf("%s=%s%s but the spec's pid namespace path is %q: they must name the same container", key, RefPrefix, annID, path)
	case isRef || path == "" && hasEntry || ourPin(r.PinBase)(path):
		return annID, nil
	case !hasEntry:
		return "", fmt.Errorf("%s=%s%s but the spec shares the host's PID namespace (no pid entry in linux.namespaces): remove one or the other", key, RefPrefix, annID)
	}
	return "", fmt.Errorf("%s=%s%s but the spec already joins the PID namespace at %q: remove one or the other", key, RefPrefix, annID, path)
}

// logPlan says what the container joins.
func (j *Join) logPlan(r *Request) {
	t := j.target
	switch {
	case !j.takes:
		r.Log.Infof("container %s: joins the PID namespace of container %s (init PID %d, pinned at %s), in its pod's user namespace", r.ID, t.ID, t.PID, t.PIDNS)
	case t.Userns != "":
		r.Log.Infof("container %s: joins the PID namespace of container %s (init PID %d, pinned at %s) and its user namespace %s; nothing taken from the pool", r.ID, t.ID, t.PID, t.PIDNS, t.Userns)
	default:
		r.Log.Infof("container %s: joins the PID namespace of container %s (init PID %d, pinned at %s); no user namespace of its own", r.ID, t.ID, t.PID, t.PIDNS)
	}
}

// planUserns decides the container's user namespace: a container can join
// a PID namespace only together with the user namespace that owns it (or
// it cannot mount its /proc), so it is the target's.
func (j *Join) planUserns(s *specs.Spec, r *Request, h Host) error {
	t := j.target
	what := "cannot join the PID namespace of container " + t.ID
	if t.Userns == "" {
		if r.Userns == UsernsAuto {
			return fmt.Errorf("%s: it asks for %s=auto, but container %s runs in the host's user namespace, and a container joins a PID namespace only together with the user namespace that owns it: drop the annotation, or give container %s a user namespace", what, r.Keys.Userns, t.ID, t.ID)
		}
		return nil
	}
	if r.PoolUserns != "" && t.Userns == r.PoolUserns {
		j.takes = false // the pool gives it the same namespace
		return nil
	}
	if r.Userns == UsernsHost {
		return fmt.Errorf("%s: it asks for %s=host (no user namespace), but container %s runs in user namespace %s, which a container joining its PID namespace must join too: drop the annotation", what, r.Keys.Userns, t.ID, t.Userns)
	}
	if err := usernsConflict(s, t, ourPin(r.PinBase)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	uid, err := h.ParseMappings(t.UIDMap)
	if err != nil {
		return fmt.Errorf("%s: its uid_map: %w", what, err)
	}
	gid, err := h.ParseMappings(t.GIDMap)
	if err != nil {
		return fmt.Errorf("%s: its gid_map: %w", what, err)
	}
	if len(uid) == 0 || len(gid) == 0 {
		return fmt.Errorf("%s: its user namespace %s has no uid or gid mapping", what, t.Userns)
	}
	if !r.Features.WithMappings {
		uid, gid = nil, nil
	}
	j.mods = append(j.mods, h.UsernsModifier(t.Userns, uid, gid))
	return j.planSysfs(s, r, h)
}

// planSysfs: like a pool container, one that joins the target's user
// namespace and a network namespace that namespace does not own (a CNI
// netns) cannot mount sysfs, and runc < 1.3 cannot even join it.
func (j *Join) planSysfs(s *specs.Spec, r *Request, h Host) error {
	t := j.target
	foreign, netns, err := h.ForeignNetns(s, t.Userns)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", netns, err)
	}
	if !foreign {
		return nil
	}
	f := r.Features
	if f.JoinsUsernsFirst {
		return fmt.Errorf("cannot join the PID namespace of container %s: its user namespace %s must be joined too, and the network namespace %s is not that namespace's, which runc %s cannot enter after joining it (runc >= 1.3 can): upgrade runc, or use the target's network namespace", t.ID, t.Userns, netns, f.Version)
	}
	r.Log.Infof("container %s: joins network namespace %s, which the user namespace of container %s does not own: sysfs becomes a read-only bind of the host's /sys", r.ID, netns, t.ID)
	j.mods = append(j.mods, f.Sysfs)
	return nil
}

// usernsConflict refuses a spec that asks for a user namespace of its own
// when the target runs in another: a new one, or one joined by a path
// that is neither the target's nor a pin an earlier create of the same
// bundle made (ours reports those).
func usernsConflict(s *specs.Spec, t *Target, ours func(string) bool) error {
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
		case ours(ns.Path) || ns.Path == t.Userns || ns.Path != "" && samePath(ns.Path, t.Userns):
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

// samePath reports whether two paths name the same file.
func samePath(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// ourPin reports whether a path is a pin Resolve makes in a container's
// pin directory under base (<base>/<x>/<id>/pidns or userns): left in a
// spec by an earlier create of the same bundle, under this or another
// container ID, and replaced by a fresh one.
func ourPin(base string) func(string) bool {
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
		return p == PIDNSPin(dir) || p == UsernsPin(dir)
	}
}

// annotation sets a spec annotation.
type annotation struct{ key, value string }

func (m annotation) Modify(s *specs.Spec) error {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[m.key] = m.value
	return nil
}
