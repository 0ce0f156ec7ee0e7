package create

import (
	"encoding/json"
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/admin"
	"github.com/runc-userns/runc-userns/internal/fault"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/netns"
	"github.com/runc-userns/runc-userns/nsjoin"
	"github.com/runc-userns/runc-userns/pool"
)

// plan is what the container gets: every lookup, allocation, pin and
// staging step of creation.plan records its result here and pushes its
// undo. The rest of the create only reads it: the spec edits are pure
// functions of it (modifiers), start starts runc as it says, and rollback
// undoes exactly what it took.
type plan struct {
	marker     *os.File       // the locked in-flight marker (package state)
	poolUserns bool           // the pod's user namespace from the pool (c.want, unless a container:<ID> join takes its target's)
	feat       *runc.Features // the real runtime's
	stamp      *oci.Stamp     // the record of every edit, signed
	pool       *pool.Pool     // the pool the container's range is from, if any
	join       *nsjoin.Join   // a resolved container:<ID> reference
	netjoin    netns.Record   // the network namespace runc starts in (planNetns)
	netSysctls netns.Sysctls  // written into a foreign network namespace before runc starts (planNetns)
	staging    bool           // the container directory is a StageDir (stageContainerDir)
	undo       []func() error

	// What the spec gets besides the stamp and the join's edits.
	userns      *libuserns.Modifier           // the pod's user namespace (planUserns)
	podNS       []nsPathModifier              // the pod's own IPC and UTS namespaces (planPodNS)
	rootfs      string                        // the staged rootfs root.path points at (planUserns)
	foreignNet  *foreignNet                   // a network namespace the pod's user namespace does not own (planNetns)
	mounts      *mountPlan                    // the bind mounts' idmapping (planMounts)
	joinedMaps  *libuserns.Modifier           // a joined user namespace's mappings, for runc 1.1 (planJoinedUserns)
	lockedFlags libuserns.LockedFlagsModifier // the bind mounts' locked flags, for a pool user namespace
}

// plan takes what the container needs from the outside world: the pod's
// range, its pinned user namespace, the idmapped rootfs and bind mounts,
// and records it in c.p, from which the spec edits follow
// (plan.modifiers). Each step pushes its undo.
func (c *creation) plan(s *specs.Spec) error {
	feat, err := runc.ProbeSummary(c.Runtime, c.Cfg.StateDir)
	if err != nil {
		return err
	}
	c.p.feat, c.p.poolUserns = feat, c.want
	c.Phases.Mark("features")
	stamp := &oci.Stamp{Version: oci.StampVersion, ID: c.id, Root: c.root, Bundle: c.bundle, StateDir: c.Cfg.StateDir, Runtime: c.Runtime}
	// The caller's mounts, whichever step below edits them (idmap, sysfs,
	// locked flags): a second create of the bundle starts from these.
	if stamp.Mounts, err = json.Marshal(s.Mounts); err != nil {
		return err
	}
	// What an earlier container of this ID left, before anything is staged
	// again: runc does not have it (AcquireInflight), so its staging is
	// stale, whatever left it (a create killed, a delete lost or run under
	// another config). Detached and removed, not only detached: a staging
	// entry left as a directory where this create stages a file (or the
	// reverse) fails its move_mount with EINVAL. (At the tail only a fast
	// detach runs: state.DetachStaged.)
	if err := admin.RemoveLeftovers(c.lay, c.root, c.id); err != nil {
		return fmt.Errorf("what an earlier container of this ID left in %s: %w; nothing was created", c.lay.ContainerDir(c.root, c.id), err)
	}
	c.p.undo = append(c.p.undo, func() error { return c.lay.RemoveStaged(c.root, c.id) })
	// A container:<ID> reference first: joining the target's PID namespace
	// decides the user namespace too (the target's), and may rule out one
	// from the pool.
	if err := c.planJoin(s, stamp, feat); err != nil {
		return err
	}
	var pod []specs.LinuxIDMapping
	var podNS *os.File
	if c.p.poolUserns {
		ns, err := c.planUserns(s, stamp, feat)
		if err != nil {
			return err
		}
		defer ns.Close()
		podNS, pod = ns, libuserns.PodMappings(stamp.HostID, stamp.Size)
	}
	c.Phases.Mark("rootfs")
	joined, err := c.planJoinedUserns(s, stamp, feat)
	if err != nil {
		return err
	}
	if joined != nil {
		defer joined.ns.Close()
	}
	if err := c.planMounts(s, stamp, feat, pod, podNS, joined); err != nil {
		return err
	}
	if c.p.poolUserns {
		c.p.lockedFlags = libuserns.LockedFlags(s, c.bundle)
	}
	fault.Point(fault.Staged)
	c.Phases.Mark("mounts")
	key, err := oci.StampKey(c.Cfg.StateDir, true)
	if err != nil {
		return err
	}
	stamp.Sign(key)
	c.p.stamp = stamp
	return nil
}
