package create

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
)

// stageRootfs mounts an idmapped view of the rootfs at the container's
// staging path: an idmapped clone of a directory rootfs, or for an overlay
// rootfs (what containerd's shim and podman hand us) an equivalent
// overlay over idmapped layers. root is the pod root's host ID.
func (c *creation) stageRootfs(src string, ns *os.File, root int) (string, error) {
	staged := c.lay.StagedRootfs(c.root, c.id)
	if err := c.stageContainerDir(root); err != nil {
		return "", err
	}
	if err := os.Mkdir(staged, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	ov, err := idmap.OverlayAt(src)
	switch {
	case err == nil:
		if err := idmap.StageOverlay(ov, staged, c.lay.LayersDir(c.root, c.id), int(ns.Fd()), root, root); err != nil {
			return "", fmt.Errorf("idmap overlay rootfs %s: %w", src, err)
		}
	case errors.Is(err, idmap.ErrNotOverlay):
		err := idmap.Mount(src, staged, int(ns.Fd()), idmap.Tree)
		if errors.Is(err, idmap.ErrUnsupported) && c.Cfg.Userns.RootfsChown {
			return staged, c.chownRootfs(src, staged, root)
		}
		if errors.Is(err, idmap.ErrUnsupported) {
			return "", fmt.Errorf("idmap rootfs: %w; put the rootfs on a filesystem that supports idmapped mounts (see runc-userns doctor PATH), or enable userns.rootfsChown in %s to chown it to the pod's range instead", err, configName(c.Cfg))
		}
		if err != nil {
			return "", fmt.Errorf("idmap rootfs: %w", err)
		}
	default:
		return "", fmt.Errorf("rootfs %s: %w", src, err)
	}
	return staged, nil
}

// stageContainerDir makes the container directory, once and before
// anything is mounted below it, a mount of its own (idmap.StageDir): the
// staged rootfs, bind mounts and overlay layers and a container:<ID>
// target's pins all sit below it, and the create's tail detaches them
// with one umount (state.DetachStaged), which waits for one RCU grace
// period rather than one for each staging directory. Only host root and,
// with gid not 0, the pod's root (host gid gid) can reach it
// (state.MkdirPrivate); a later call with the pod's gid opens it to the
// pod's root, whose runc mounts the staged rootfs.
func (c *creation) stageContainerDir(gid int) error {
	if c.p.staging {
		if gid == 0 {
			return nil
		}
		return state.MkdirPrivate(c.Cfg.StateDir, c.lay.ContainerDir(c.root, c.id), gid)
	}
	dir := c.lay.ContainerDir(c.root, c.id)
	if err := state.MkdirPrivate(c.Cfg.StateDir, dir, gid); err != nil {
		return err
	}
	if err := idmap.StageDir(dir); err != nil {
		return err
	}
	c.p.staging = true
	return nil
}

// chownRootfs is the opt-in fallback for a rootfs that cannot be idmapped.
func (c *creation) chownRootfs(src, staged string, root int) error {
	start := time.Now()
	n, err := idmap.ShiftOwners(src, uint32(root), c.Cfg.Userns.SlotSize)
	if err != nil {
		return err
	}
	c.Log.Warnf("container %s: rootfs %s (%s) cannot be idmapped: chowned %d entries to the pod's range in %s (userns.rootfsChown); the image stays owned by that range", c.id, src, idmap.FSType(src), n, time.Since(start).Round(time.Millisecond))
	return idmap.BindClone(src, staged)
}

// joinedUserns is the user namespace a container joins by path, opened
// once, with the mappings read from that open file (planJoinedUserns).
type joinedUserns struct {
	idmap.Joined
	ns *os.File
}

// planJoinedUserns: a container that joins a user namespace by path, has
// no uid/gid mappings in its spec, and asks for an idmap or ridmap bind
// mount without mappings of its own (idmap.JoinedUserns) gets the joined
// namespace's mappings for that mount, as runc >= 1.2 gives them. The
// path, which a pod author may influence, is opened once
// (libuserns.OpenUserns: an nsfs user namespace) and the mappings are
// read from that open namespace (libuserns.Mappings), which is also what
// idmaps the mounts for runc 1.1 (planMounts); the wrapper never resolves
// the path again. They pass the rule of the caller's own mappings: none
// into the pool. runc 1.1 needs them in linux.uidMappings and gidMappings
// too, or refuses to run in a joined namespace ("no uid mappings
// found"): they are added there, and the stamp says so, for a second
// create of the bundle to take them out again (undoStamp). runc >= 1.2
// reads them from the path itself and gets the spec as it is.
func (c *creation) planJoinedUserns(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features) (*joinedUserns, error) {
	if c.p.join != nil && c.p.join.TakesUserns() {
		return nil, nil // nsjoin's: the target's user namespace, with its mappings
	}
	path := idmap.JoinedUserns(s)
	if path == "" {
		return nil, nil
	}
	what := "an idmap bind mount without uid/gid mappings takes those of the user namespace the container joins, " + path
	const mappings = "give the mount uidMappings and gidMappings (or the container linux.uidMappings and gidMappings)"
	ns, err := libuserns.OpenUserns(path, oci.FileKind)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; give the path of a user namespace (/proc/<pid>/ns/user or a bind mount of one), or %s", what, err, mappings)
	}
	uid, gid, err := libuserns.Mappings(ns)
	if err != nil {
		ns.Close()
		var hint string
		switch {
		case errors.Is(err, libuserns.ErrNoMapping):
			hint = "write the namespace's uid_map and gid_map before the container is created, or " + mappings
		case errors.Is(err, libuserns.ErrOwnUserns):
			hint = "an idmapped mount through it would map nothing (the kernel refuses it): join another user namespace, or " + mappings
		case errors.Is(err, os.ErrPermission):
			hint = "runc-userns may join only a user namespace made below its own: join such a namespace, or " + mappings
		default:
			hint = mappings
		}
		return nil, fmt.Errorf("%s, whose mappings cannot be read or used: %w; %s", what, err, hint)
	}
	src := "the user namespace it joins, " + path + ","
	if err := c.checkMappingsOutsidePool([]mappingSource{{src + " uid_map", uid}, {src + " gid_map", gid}}); err != nil {
		ns.Close()
		return nil, err
	}
	c.Log.Infof("container %s: joins user namespace %s with no mappings in its spec: its idmap bind mounts without mappings take that namespace's (uid_map %q, gid_map %q)", c.id, path, libuserns.FormatMappings(uid), libuserns.FormatMappings(gid))
	if !feat.NativeIdmap {
		c.p.joinedMaps = &libuserns.Modifier{Path: path, UID: uid, GID: gid}
		stamp.JoinedMappings = true
	}
	return &joinedUserns{Joined: idmap.Joined{Path: path, UID: uid, GID: gid}, ns: ns}, nil
}

// mountPlan is what planMounts decided for the bind mounts.
type mountPlan struct {
	native         []idmap.Candidate // idmapped by the runtime
	staged         map[int]string    // mount index -> its idmapped staging mount
	moved          []sourceModifier  // sources that follow the rootfs to its staging path
	skipped        []string          // destinations left plain binds
	mountsDirReady bool              // the staging directory of the bind mounts exists
}

// planMounts idmaps the bind mounts: every one of a pool container whose
// filesystem allows it, and every one the caller asked for. A runtime with
// native idmap support gets a spec edit; runc 1.1 gets host-side staging
// mounts. An implicit mount whose filesystem cannot be idmapped stays a
// plain bind, logged and recorded; an explicit one fails the create. A
// source that lies under an earlier mount of the spec is runc's to resolve
// (laterSource).
func (c *creation) planMounts(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features, pod []specs.LinuxIDMapping, podNS *os.File, joined *joinedUserns) error {
	var jm *idmap.Joined
	if joined != nil {
		jm = &joined.Joined
	}
	cands, err := idmap.Candidates(s, pod, jm, c.req.IdmapSkip)
	if err != nil || len(cands) == 0 {
		return err
	}
	namespaces := map[string]*os.File{}
	defer func() {
		for _, f := range namespaces {
			f.Close()
		}
	}()
	nsFor := func(cd idmap.Candidate) (int, error) {
		uid, gid := cd.UID, cd.GID
		if cd.Joined {
			// The joined namespace itself, as opened once: the
			// mappings were read from it.
			return int(joined.ns.Fd()), nil
		}
		if podNS != nil && libuserns.Equal(uid, pod) && libuserns.Equal(gid, pod) {
			return int(podNS.Fd()), nil
		}
		key := libuserns.FormatMappings(uid) + "/" + libuserns.FormatMappings(gid)
		if f, ok := namespaces[key]; ok {
			return int(f.Fd()), nil
		}
		f, err := libuserns.NewUserns(uid, gid)
		if err != nil {
			return -1, err
		}
		namespaces[key] = f
		return int(f.Fd()), nil
	}
	mm := &mountPlan{staged: map[int]string{}}
	for _, cd := range cands {
		src := s.Mounts[cd.Index].Source
		if !filepath.IsAbs(src) {
			src = filepath.Join(c.bundle, src)
		}
		if under := idmap.UnderEarlierMount(s, c.bundle, cd.Index); under != "" {
			if err := c.laterSource(mm, s, stamp, feat, cd, src, under); err != nil {
				return err
			}
			continue
		}
		fd, err := nsFor(cd)
		if err == nil {
			err = c.idmapMount(mm, feat, cd, src, fd)
		}
		switch {
		case err == nil:
		case errors.Is(err, idmap.ErrNoSource):
			return fmt.Errorf("mount %s: its source %s does not exist (no such file or directory): create it, or fix the mount's source", cd.Dest, src)
		case errors.Is(err, idmap.ErrUnsupported) && !cd.Explicit:
			c.Log.Warnf("container %s: bind mount %s stays a plain bind (not idmapped, files keep their host owners): %v", c.id, cd.Dest, err)
			mm.skipped = append(mm.skipped, cd.Dest)
		default:
			return fmt.Errorf("mount %s: %w", cd.Dest, err)
		}
	}
	c.p.mounts = mm
	return nil
}

// idmapMount idmaps the bind cd (source src) through the user namespace
// fd: probed for a runtime that does it itself, staged on the host for
// runc 1.1.
func (c *creation) idmapMount(mm *mountPlan, feat *runc.Features, cd idmap.Candidate, src string, fd int) error {
	if feat.NativeIdmap {
		err := idmap.Probe(src, fd, cd.Recursion)
		if err == nil {
			mm.native = append(mm.native, cd)
		}
		return err
	}
	if !mm.mountsDirReady {
		if err := c.stageContainerDir(0); err != nil {
			return err
		}
		if err := os.Mkdir(c.lay.MountsDir(c.root, c.id), 0o711); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		mm.mountsDirReady = true
	}
	dst := c.lay.StagedMount(c.root, c.id, cd.Index)
	err := idmap.MountPropagating(src, dst, fd, cd.Recursion, cd.Propagation)
	if err == nil {
		mm.staged[cd.Index] = dst
	}
	return err
}

// laterSource handles a bind whose source src lies in the rootfs under
// under, an earlier mount of the spec: it exists only once runc has made
// that mount, and what the host has at that path (if anything) is not
// what the container gets. A runtime with idmap support resolves it in
// mount order: an explicit idmap is left to it as it is; ours is not made
// (the bind shows what the mount above shows, idmapped if that one is),
// and the source follows the rootfs to its staging path. runc 1.1 cannot
// run it (noLaterSource).
func (c *creation) laterSource(mm *mountPlan, s *specs.Spec, stamp *oci.Stamp, feat *runc.Features, cd idmap.Candidate, src, under string) error {
	switch {
	case !feat.NativeIdmap:
		return noLaterSource(cd, src, under, c.Runtime)
	case cd.Explicit:
		mm.native = append(mm.native, cd)
		return nil
	}
	c.Log.Warnf("container %s: bind mount %s is left to runc as a plain bind (not idmapped by runc-userns): its source %s lies under %s, an earlier mount of the spec, which runc resolves in mount order", c.id, cd.Dest, src, under)
	mm.skipped = append(mm.skipped, cd.Dest)
	if inside, ok := idmap.InRootfs(s, c.bundle, src); ok && stamp.Staged != "" {
		// The rootfs runc makes that earlier mount in is the staged one.
		mm.moved = append(mm.moved, sourceModifier{cd.Index, filepath.Join(stamp.Staged, inside)})
	}
	return nil
}

// noLaterSource refuses a bind to idmap on a runc without idmap support
// whose source lies under an earlier mount of the spec.
func noLaterSource(cd idmap.Candidate, src, under, runtime string) error {
	if cd.Explicit {
		return fmt.Errorf("mount %s asks for idmap, but its source %s lies under %s, an earlier mount of the same spec, and exists only once runc has made that mount; runc-userns idmaps mounts on the host for a runc without idmap support (%s), before runc runs, so it cannot idmap this one: use runc >= 1.2, which idmaps it itself in mount order, or a source outside the container's rootfs", cd.Dest, src, under, runtime)
	}
	return fmt.Errorf("mount %s: its source %s lies under %s, an earlier mount of the same spec, and exists only once runc has made that mount; in a user namespace, a runc without idmap support (%s) opens every bind source on the host before it mounts anything, so it cannot bind this one: use runc >= 1.2, or a source outside the container's rootfs", cd.Dest, src, under, runtime)
}
