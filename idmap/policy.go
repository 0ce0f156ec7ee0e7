package idmap

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Candidate is a bind mount of the spec that is to be idmapped.
type Candidate struct {
	Index     int // in spec.Mounts
	Dest      string
	Recursion Recursion
	// Explicit: the caller asked for it (mount-level mappings, or the idmap
	// / ridmap option). An explicit mount that cannot be idmapped fails
	// the create; an implicit one (ours, for a pool user namespace) stays
	// a plain bind.
	Explicit bool
	UID, GID []specs.LinuxIDMapping
	// Joined: UID and GID are the mappings of the user namespace the
	// container joins by path (an explicit idmap or ridmap option with no
	// mappings anywhere in the spec): the mount is idmapped through that
	// namespace itself, and a runtime with idmap support reads them from
	// the path, as it does for the container.
	Joined bool
	// Propagation is the staged clone's: MS_PRIVATE for a mount whose
	// options (the last one wins, as in runc) say private or unbindable,
	// else MS_SLAVE, a slave of its source's peer group, as runc's own
	// bind of the source would be in the container (Kubernetes'
	// HostToContainer: host mounts made later reach the pod). runc binds
	// the clone and then applies the option. A shared clone (a peer of
	// the source) is never made: its detach after create would propagate
	// the umount of its submounts to the source's peers, unmounting them
	// on the host. So shared/rshared (Bidirectional) receives only, as it
	// would for a pod in a user namespace anyway, whose mounts never
	// propagate back to the host's mount namespace.
	Propagation uintptr
}

// Recursion is how much of a source's mount tree an idmapped clone takes,
// and idmaps: as runc >= 1.2 reads a mount's options, rbind clones the
// submounts, ridmap idmaps them, and idmap only the top mount.
type Recursion int

const (
	TopOnly         Recursion = iota // bind: the source's own mount
	TreeTopIdmapped                  // rbind with idmap or mount mappings: the submounts too, as they are
	Tree                             // rbind with ridmap, or ours on an rbind: the submounts too, idmapped
)

// recursion is the clone mount m asks for; explicit says whether the
// caller asked for the idmap (else it is ours, which idmaps all an rbind
// takes, as the ridmap we give runc >= 1.2 does).
func recursion(m specs.Mount, explicit bool) Recursion {
	switch {
	case !hasOption(m, "rbind"):
		return TopOnly
	case explicit && !hasOption(m, "ridmap"):
		return TreeTopIdmapped
	default:
		return Tree
	}
}

// Linux's MS_PRIVATE and MS_SLAVE (held to golang.org/x/sys/unix by
// TestPropagationConstants), for this portable file.
const (
	msPrivate = 1 << 18
	msSlave   = 1 << 19
)

// propagation maps m's propagation options onto Candidate.Propagation.
func propagation(m specs.Mount) uintptr {
	p := uintptr(msSlave)
	for _, o := range m.Options {
		switch o {
		case "slave", "rslave", "shared", "rshared":
			p = msSlave
		case "private", "rprivate", "unbindable", "runbindable":
			p = msPrivate
		}
	}
	return p
}

// ErrNoMappings: a mount asks for idmap but there is no mapping to use.
var ErrNoMappings = errors.New("idmap requested without mappings")

// IsBind reports whether m is a bind mount (type "bind", or a "bind" /
// "rbind" option, as runc decides).
func IsBind(m specs.Mount) bool {
	if m.Type == "bind" {
		return true
	}
	for _, o := range m.Options {
		if o == "bind" || o == "rbind" {
			return true
		}
	}
	return false
}

func hasOption(m specs.Mount, opts ...string) bool {
	for _, o := range m.Options {
		for _, w := range opts {
			if o == w {
				return true
			}
		}
	}
	return false
}

// Requested reports whether any bind mount of the spec asks for idmap
// itself (mount-level mappings or the idmap / ridmap option).
func Requested(s *specs.Spec) bool {
	for _, m := range s.Mounts {
		if IsBind(m) && (len(m.UIDMappings) > 0 || len(m.GIDMappings) > 0 || hasOption(m, "idmap", "ridmap")) {
			return true
		}
	}
	return false
}

// Joined is the user namespace a container joins by path, with the
// mappings read from it (JoinedUserns says when they are needed).
type Joined struct {
	Path     string
	UID, GID []specs.LinuxIDMapping
}

// JoinedUserns returns the path of the user namespace the spec joins
// (linux.namespaces, type user) when an explicit idmap needs its mappings:
// the spec has no uid/gid mappings of its own and a bind mount asks for
// idmap or ridmap without mount-level mappings. runc >= 1.2 takes the
// joined namespace's mappings for such a mount; "" when none is needed.
func JoinedUserns(s *specs.Spec) string {
	if s.Linux == nil || len(s.Linux.UIDMappings) > 0 || len(s.Linux.GIDMappings) > 0 {
		return ""
	}
	path := ""
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.UserNamespace {
			path = ns.Path
		}
	}
	if path == "" {
		return ""
	}
	for _, m := range s.Mounts {
		if IsBind(m) && len(m.UIDMappings) == 0 && len(m.GIDMappings) == 0 && hasOption(m, "idmap", "ridmap") {
			return path
		}
	}
	return ""
}

// Candidates picks the bind mounts to idmap. pod is the pool user
// namespace's mapping (nil when the container has none of ours): with it,
// every bind mount not listed in skip (container paths) is a candidate.
// Explicit requests are honoured for any container: mount-level mappings,
// or the idmap/ridmap option with the container's own mappings, else
// those of the user namespace it joins by path (joined, nil if none).
func Candidates(s *specs.Spec, pod []specs.LinuxIDMapping, joined *Joined, skip []string) ([]Candidate, error) {
	skipped := make(map[string]bool, len(skip))
	for _, p := range skip {
		skipped[filepath.Clean(p)] = true
	}
	var out []Candidate
	for i, m := range s.Mounts {
		if !IsBind(m) {
			continue
		}
		explicit := len(m.UIDMappings) > 0 || len(m.GIDMappings) > 0 || hasOption(m, "idmap", "ridmap")
		c := Candidate{
			Index:       i,
			Dest:        m.Destination,
			Recursion:   recursion(m, explicit),
			Explicit:    explicit,
			Propagation: propagation(m),
		}
		switch {
		case len(m.UIDMappings) > 0 || len(m.GIDMappings) > 0:
			if len(m.UIDMappings) == 0 || len(m.GIDMappings) == 0 {
				return nil, fmt.Errorf("mount %s: uidMappings and gidMappings must be given together", m.Destination)
			}
			c.UID, c.GID = m.UIDMappings, m.GIDMappings
		case c.Explicit:
			// The idmap option alone: the container's user namespace mappings.
			switch {
			case s.Linux != nil && len(s.Linux.UIDMappings) > 0 && len(s.Linux.GIDMappings) > 0:
				c.UID, c.GID = s.Linux.UIDMappings, s.Linux.GIDMappings
			case joined != nil:
				c.UID, c.GID, c.Joined = joined.UID, joined.GID, true
			case pod != nil:
				c.UID, c.GID = pod, pod
			default:
				return nil, fmt.Errorf("mount %s asks for idmap but neither the mount nor the container has uid/gid mappings: %w; give the mount uidMappings and gidMappings, or the container a user namespace (mappings, or a path to join)", m.Destination, ErrNoMappings)
			}
		case pod != nil && !skipped[filepath.Clean(m.Destination)]:
			c.UID, c.GID = pod, pod
		default:
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// NativeModifier asks a runtime with its own idmap support (runc >= 1.2)
// to idmap the candidates: mount-level mappings and the idmap / ridmap
// option. Explicit mounts are already in that form and stay as they are,
// as does one that takes the joined user namespace's mappings: the
// runtime reads them from the namespace's path itself.
type NativeModifier struct {
	Candidates []Candidate
}

func (n NativeModifier) Modify(s *specs.Spec) error {
	for _, c := range n.Candidates {
		m := &s.Mounts[c.Index]
		if c.Explicit && (len(m.UIDMappings) > 0 || c.Joined) {
			continue
		}
		m.UIDMappings = append([]specs.LinuxIDMapping(nil), c.UID...)
		m.GIDMappings = append([]specs.LinuxIDMapping(nil), c.GID...)
		if !hasOption(*m, "idmap", "ridmap") {
			opt := "idmap"
			if c.Recursion == Tree {
				opt = "ridmap"
			}
			m.Options = append(m.Options, opt)
		}
	}
	return nil
}

// StagedModifier points mounts at host-side idmapped staging mounts (for
// runc 1.1, which ignores mount-level mappings) and removes the fields and
// options that runtime does not know. An rbind stays an rbind: its clone
// holds the source's submounts (Recursion). Staged maps a mount's index to its
// staging path.
type StagedModifier struct {
	Staged map[int]string
}

func (st StagedModifier) Modify(s *specs.Spec) error {
	for i, path := range st.Staged {
		if i < 0 || i >= len(s.Mounts) {
			return fmt.Errorf("staged mount index %d out of range", i)
		}
		m := &s.Mounts[i]
		m.Source = path
		m.UIDMappings, m.GIDMappings = nil, nil
		var opts []string
		for _, o := range m.Options {
			if o != "idmap" && o != "ridmap" {
				opts = append(opts, o)
			}
		}
		// A mount of type bind with neither option is a bind to runc >=
		// 1.2, and an error to runc 1.1: its one clone is bound.
		if !hasOption(specs.Mount{Options: opts}, "bind", "rbind") {
			opts = append(opts, "bind")
		}
		m.Options = opts
	}
	return nil
}

// InRootfs reports where in the container's rootfs (root.path, relative to
// bundle if not absolute) the host path src lies, as a path from the
// container's "/"; ok is false for a path outside it.
func InRootfs(s *specs.Spec, bundle, src string) (inside string, ok bool) {
	if s.Root == nil || s.Root.Path == "" {
		return "", false
	}
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(bundle, p)
		}
		return filepath.Clean(p)
	}
	rel, err := filepath.Rel(abs(s.Root.Path), abs(src))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.Join("/", rel), true
}

// UnderEarlierMount reports the destination of the mount before s.Mounts[i]
// whose inside the source of mount i lies in: a path in the container's
// rootfs that exists only once runc has made that earlier mount. The last
// such mount wins, as it is the one on top. A source outside the rootfs,
// or under no earlier mount, gives "".
func UnderEarlierMount(s *specs.Spec, bundle string, i int) string {
	if i < 0 || i >= len(s.Mounts) {
		return ""
	}
	inside, ok := InRootfs(s, bundle, s.Mounts[i].Source)
	if !ok {
		return ""
	}
	found := ""
	for _, m := range s.Mounts[:i] {
		d := filepath.Join("/", m.Destination)
		if inside == d || strings.HasPrefix(inside, d+"/") {
			found = m.Destination
		}
	}
	return found
}
