package create

import (
	"bytes"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/fault"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/netns"
	"github.com/runc-userns/runc-userns/nsjoin"
)

// planJoin resolves the container's container:<ID> reference, if it has
// one (nsjoin): the target's PID namespace, and the user namespace that
// owns it, which rules out one from the pool unless it is the very one
// the pool gives. Its pins are mounts in the container directory.
func (c *creation) planJoin(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features) error {
	if !nsjoin.Wanted(s, c.req.PIDNamespace) {
		return nil
	}
	if err := c.stageContainerDir(0); err != nil {
		return err
	}
	join, err := nsjoin.Plan(s, c.joinRequest(s, feat), joinHost{c.Call})
	if err != nil || join == nil {
		return err
	}
	c.p.join = join
	c.p.undo = append(c.p.undo, join.Cleanup)
	fault.Point(fault.Joined)
	if join.TakesUserns() {
		c.p.poolUserns = false
		// Recorded so that a second create of the bundle undoes it
		// (undoStamp) and resolves the reference afresh.
		stamp.UsernsPath = join.Userns()
	}
	return nil
}

// joinRequest is nsjoin's view of this create: what its spec and
// annotations ask, the pool's part (c.want) and the runtime's features.
func (c *creation) joinRequest(s *specs.Spec, feat *runc.Features) nsjoin.Request {
	r := nsjoin.Request{
		ID:           c.id,
		Root:         c.root,
		PinDir:       c.lay.ContainerDir(c.root, c.id),
		PinBase:      c.lay.ContainersDir(),
		PIDNamespace: c.req.PIDNamespace,
		Keys:         nsjoin.Keys{PIDNamespace: oci.AnnotationPIDNamespace, Userns: oci.AnnotationUserns},
		Pod:          joinPod(c.req.Pod),
		PodIdentity:  oci.CheckPodIdentity(c.id, s.Annotations),
		Cgroup:       oci.PodCgroup(cgroupsPath(s)),
		Features: nsjoin.Features{
			WithMappings:     !feat.NativeIdmap,
			JoinsUsernsFirst: feat.JoinsUsernsFirst,
			Version:          feat.Version,
			Sysfs:            netns.SysfsModifier{Native: feat.NativeIdmap},
		},
		Log: c.Log,
	}
	switch c.req.Userns {
	case oci.UsernsAuto:
		r.Userns = nsjoin.UsernsAuto
	case oci.UsernsHost:
		r.Userns = nsjoin.UsernsHost
	}
	// An app container of a pool pod gets the pod's user namespace from
	// the pool; a sandbox a new one.
	if c.want && !c.req.Pod.Sandbox {
		r.PoolUserns = c.lay.Pin(c.req.Pod.Owner)
	}
	return r
}

// joinHost adapts internal/runc, internal/oci, libuserns and the state
// directory to nsjoin.Host.
type joinHost struct{ a *Call }

func (joinHost) ValidateID(id string) error { return oci.ValidateID(id) }

// State reads runc's state.json and exec.fifo of container id of root.
func (joinHost) State(root, id string) (*nsjoin.State, error) {
	st, err := runc.ReadState(root, id)
	if err != nil {
		return nil, err
	}
	ann := st.Annotations()
	return &nsjoin.State{
		InitPID:      st.InitPID,
		InitStart:    st.InitStart,
		Annotations:  ann,
		Pod:          joinPod(oci.PodOf(id, ann)),
		Cgroup:       st.Config.Cgroups.PodCgroup(),
		PIDNamespace: st.HasNamespace("NEWPID"),
		Created:      runc.Created(root, id),
	}, nil
}

// UsernsPins names the paths that may already pin a target's user
// namespace: its pod's pin under our state dir, and the one its stamp
// records if this node wrote the stamp. nsjoin uses one only if it is the
// target's namespace (same inode).
func (h joinHost) UsernsPins(id string, annotations map[string]string) []string {
	var out []string
	if owner := oci.PodOf(id, annotations).Owner; oci.ValidateID(owner) == nil {
		out = append(out, state.Layout(h.a.Cfg.StateDir).Pin(owner))
	}
	if v, ok := annotations[oci.AnnotationStamp]; ok {
		root, _ := filepath.Abs(h.a.Inv.Root)
		if st, err := oci.DecodeStamp(v); err == nil && st.UsernsPath != "" && h.a.verifyStamp(st, oci.Binding{ID: id, Root: root}, false) == nil {
			out = append(out, st.UsernsPath)
		}
	}
	return out
}

func (joinHost) ParseMappings(idMap []byte) ([]specs.LinuxIDMapping, error) {
	return libuserns.ParseMappings(bytes.NewReader(idMap))
}

func (joinHost) UsernsModifier(path string, uid, gid []specs.LinuxIDMapping) nsjoin.Modifier {
	return libuserns.Modifier{Path: path, UID: uid, GID: gid}
}

// ForeignNetns: whether the spec joins a network namespace the user
// namespace pinned at userns does not own (netns.Foreign).
func (joinHost) ForeignNetns(s *specs.Spec, userns string) (bool, string, error) {
	return netns.Foreign(s, func(p string) (bool, error) {
		ns, err := libuserns.OpenPinned(userns)
		if err != nil {
			return false, err
		}
		defer ns.Close()
		return ownedBy(ns)(p)
	})
}

// joinPod is nsjoin's view of a container's pod: its sandbox's ID, or
// none for a container of no pod.
func joinPod(p oci.Pod) nsjoin.Pod {
	if p.InPod {
		return nsjoin.Pod{ID: p.Owner}
	}
	return nsjoin.Pod{}
}
