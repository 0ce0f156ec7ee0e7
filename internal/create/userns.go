package create

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/admin"
	"github.com/runc-userns/runc-userns/internal/fault"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/pool"
)

// planUserns takes the pod's range and user namespace (and the pod's own
// IPC and UTS namespaces, podns.go) and stages the idmapped rootfs.
func (c *creation) planUserns(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features) (*os.File, error) {
	owner := c.req.Pod.Owner
	hostns, err := hostOwnedPodNS(s)
	if err != nil {
		return nil, err
	}
	ns, err := c.podUserns(owner, s, len(hostns) > 0)
	if err != nil {
		return nil, err
	}
	alloc := c.alloc
	mapping := libuserns.PodMappings(alloc.HostID, alloc.Size)
	if s.Root == nil || s.Root.Path == "" {
		ns.Close()
		return nil, errors.New("spec has no root.path")
	}
	src := s.Root.Path
	if !filepath.IsAbs(src) {
		src = filepath.Join(c.bundle, src)
	}
	fault.Point(fault.Pinned)
	c.Phases.Mark("pin")
	if err := c.planPodNS(stamp, hostns); err != nil {
		ns.Close()
		return nil, err
	}
	staged, err := c.stageRootfs(src, ns, int(alloc.HostID))
	if err != nil {
		ns.Close()
		return nil, err
	}
	stamp.Owner, stamp.HostID, stamp.Size = owner, alloc.HostID, alloc.Size
	stamp.UsernsPath, stamp.Mappings = c.lay.Pin(owner), !feat.NativeIdmap
	stamp.Rootfs, stamp.Staged = s.Root.Path, staged
	c.p.userns, c.p.rootfs = &libuserns.Modifier{Path: stamp.UsernsPath}, staged
	if stamp.Mappings {
		c.p.userns.UID, c.p.userns.GID = mapping, mapping
	}
	if err := c.planNetns(s, stamp, feat, ns, mapping); err != nil {
		ns.Close()
		return nil, err
	}
	return ns, nil
}

// podUserns takes the pod's range and opens its pinned user namespace,
// which the container that takes the range for the pod pins (its
// sandbox, or the first container of a pod without one), with the pod's
// cgroup parent beside it. For a pod without a sandbox container the
// range and the pins are taken and given back under the pods lock
// (state.Layout.LockPods): its containers' creates and deletes may race,
// and any of them may be the one that pins or unpins. podNS: the pod gets
// IPC and UTS namespaces of its own (podns.go).
func (c *creation) podUserns(owner string, s *specs.Spec, podNS bool) (*os.File, error) {
	infraless := c.infraless(s, c.req.Pod)
	if infraless {
		unlock, err := c.lay.LockPods()
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	alloc, creator, err := c.takeRange(owner, s, infraless)
	if err != nil {
		return nil, err
	}
	c.alloc = alloc
	mapping := libuserns.PodMappings(alloc.HostID, alloc.Size)
	ns, err := c.ensurePin(owner, alloc, mapping, creator, podNS)
	if err != nil {
		return nil, err
	}
	if creator {
		// What the pod's other containers must share (checkMembership).
		// No fsync, as for the mapping file.
		if err := oci.ReplaceFile(c.lay.PodCgroup(owner), []byte(oci.PodCgroup(cgroupsPath(s))+"\n"), 0o644); err != nil {
			ns.Close()
			return nil, err
		}
	}
	if infraless && creator {
		c.Log.Infof("container %s: its pod %s has no sandbox container (CRI-O's drop_infra_ctr): the container takes the pod's range, which the pod's last container returns", c.id, owner)
	}
	return ns, nil
}

// takeRange opens the pool and takes pod owner's range for this
// container: the sandbox allocates it, another container of the pod joins
// it. In a pod without a sandbox container (infraless) the first
// container allocates it and the others join. creator: this container
// took the range for the pod and pins it. The create's undo leaves it
// again.
func (c *creation) takeRange(owner string, s *specs.Spec, infraless bool) (alloc pool.Allocation, creator bool, err error) {
	if err := oci.ValidateID(owner); err != nil {
		return pool.Allocation{}, false, fmt.Errorf("pod sandbox id: %w", err)
	}
	p, err := admin.OpenPool(c.Cfg, c.Cfg.StateDir)
	if err != nil {
		return pool.Allocation{}, false, err
	}
	c.p.pool = p
	c.markInflight(p)
	switch {
	case c.req.Pod.Sandbox:
		alloc, err = p.Allocate(owner, c.root, c.id)
		creator = true
	case infraless:
		if err := oci.CheckPodIdentity(c.id, s.Annotations); err != nil {
			return pool.Allocation{}, false, err
		}
		// Under the pods lock: no other container of the pod takes or
		// returns the range meanwhile.
		_, held, gerr := p.Get(owner)
		if gerr != nil {
			return pool.Allocation{}, false, gerr
		}
		if held {
			if err := c.checkMembership(owner, s); err != nil {
				return pool.Allocation{}, false, err
			}
			alloc, err = p.Join(owner, c.id)
		} else {
			alloc, err = p.Allocate(owner, c.root, c.id)
			creator = true
		}
	default:
		if err := c.checkMembership(owner, s); err != nil {
			return pool.Allocation{}, false, err
		}
		alloc, err = p.Join(owner, c.id)
		if errors.Is(err, pool.ErrUnknownOwner) {
			err = fmt.Errorf("its pod %s has no user namespace from runc-userns (its sandbox container was created without %s=auto, under another runc root, or is gone): recreate the pod with the annotation: %w", owner, oci.AnnotationUserns, err)
		}
	}
	if err != nil {
		return pool.Allocation{}, false, err
	}
	c.p.undo = append(c.p.undo, func() error { return c.leave(owner) })
	fault.Point(fault.Allocated)
	c.Phases.Mark("pool")
	return alloc, creator, nil
}

// markInflight has the pool record the claim in the container's in-flight
// marker, which the create holds from its start (creation.do).
func (c *creation) markInflight(p *pool.Pool) {
	f := c.p.marker
	h := admin.PoolHooks(c.Cfg.StateDir, c.Log)
	h.Claim = func(a pool.Allocation, member string) error {
		if member != c.id {
			return nil
		}
		return state.WriteInflight(f.Name(), state.InflightRecord{Owner: a.Owner, HostID: a.HostID, Size: a.Size, Root: a.Root, Member: member})
	}
	p.SetHooks(h)
}

// checkMembership: a container whose annotations put it in pod owner (not
// its sandbox) joins the pod's range only if its identity annotations are
// ones a CRI writes and its cgroup parent is the one the pod's sandbox
// recorded (or, for a pod pinned by an earlier release, the one in its
// sandbox's runc state). On CRI-O a pod author can write a sandbox's
// annotations, and with them claim another pod; the cgroup parent comes
// from kubelet.
func (c *creation) checkMembership(owner string, s *specs.Spec) error {
	if err := oci.CheckPodIdentity(c.id, s.Annotations); err != nil {
		return err
	}
	var want string
	rec, err := os.ReadFile(c.lay.PodCgroup(owner))
	switch {
	case err == nil:
		want = strings.TrimSuffix(string(rec), "\n")
	case errors.Is(err, os.ErrNotExist):
		// A pod pinned by an earlier release: its sandbox's runc state
		// says. (A pod not pooled at all fails in Join.)
		st, serr := runc.ReadState(c.root, owner)
		if errors.Is(serr, os.ErrNotExist) {
			if _, ok, _ := c.p.pool.Get(owner); !ok {
				return nil // Join refuses it, naming the pod
			}
		}
		if serr != nil {
			return fmt.Errorf("container %s: its annotations put it in pod %s, whose cgroup parent cannot be told (no record at %s, and its sandbox's runc state: %v): recreate the pod", c.id, owner, c.lay.PodCgroup(owner), serr)
		}
		want = st.Config.Cgroups.PodCgroup()
	default:
		return fmt.Errorf("pod %s: %w", owner, err)
	}
	if want == "" {
		return nil // its sandbox named no cgroup: nothing to compare
	}
	if got := oci.PodCgroup(cgroupsPath(s)); got != want {
		return fmt.Errorf("container %s: its annotations put it in pod %s, but its cgroup parent %q is not the pod's (%q, from its sandbox's linux.cgroupsPath): the containers of a pod share their sandbox's cgroup parent, and annotations alone do not prove membership (on CRI-O a pod author can write them on a sandbox); nothing was taken. Give it the pod's cgroup parent, or leave out the pod annotations", c.id, owner, got, want)
	}
	return nil
}

// cgroupsPath is the spec's linux.cgroupsPath ("" without one).
func cgroupsPath(s *specs.Spec) string {
	if s.Linux == nil {
		return ""
	}
	return s.Linux.CgroupsPath
}

// ensurePin returns the pod's user namespace, creating and pinning it for
// the container that pins the pod (creator), with the pod's own IPC and
// UTS namespaces when its spec joins them by path (podNS, podns.go). The
// mapping file beside the pin says which range it maps, so a pin left
// from an earlier allocation is never reused for another.
func (c *creation) ensurePin(owner string, alloc pool.Allocation, mapping []specs.LinuxIDMapping, creator, podNS bool) (*os.File, error) {
	pin, mapFile := c.lay.Pin(owner), c.lay.Mapping(owner)
	want := fmt.Sprintf("%d %d\n", alloc.HostID, alloc.Size)
	hostIDs := fmt.Sprintf("host IDs %d-%d", alloc.HostID, uint64(alloc.HostID)+uint64(alloc.Size)-1)
	if ns, err := libuserns.OpenPinned(pin); err == nil {
		if got, _ := os.ReadFile(mapFile); string(got) == want && (!creator || !podNS || c.podNSPinned(owner)) {
			return ns, nil
		}
		ns.Close()
		if !creator {
			return nil, fmt.Errorf("pod %s: the user namespace pinned at %s does not map the pod's range (%s): recreate the pod", owner, pin, hostIDs)
		}
		if err := c.lay.UnpinPod(owner); err != nil {
			return nil, err
		}
	} else if !creator {
		return nil, fmt.Errorf("pod %s: its user namespace pin: %w (the sandbox is gone or was not created by runc-userns): recreate the pod", owner, err)
	} else if !errors.Is(err, os.ErrNotExist) {
		// Not a pin (a plain file a create killed before its mount left,
		// say): the creator makes a new one in its place.
		if err := c.lay.UnpinPod(owner); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(c.lay.PodDir(owner), 0o711); err != nil {
		return nil, err
	}
	nss, err := libuserns.NewPodNamespaces(mapping, mapping, podNS)
	if err != nil {
		return nil, err
	}
	defer func() {
		if nss.IPC != nil {
			nss.IPC.Close()
			nss.UTS.Close()
		}
	}()
	// No fsync: the mapping file means something only while the pin (a
	// mount, gone at reboot) exists.
	if err := oci.ReplaceFile(mapFile, []byte(want), 0o644); err != nil {
		nss.User.Close()
		return nil, err
	}
	// The pod's IPC and UTS namespaces first: a pinned user namespace
	// with its mapping is what a later create takes for a complete pod.
	if podNS {
		for _, p := range []struct {
			ns   *os.File
			path string
		}{{nss.IPC, c.lay.PodIPC(owner)}, {nss.UTS, c.lay.PodUTS(owner)}} {
			if err := libuserns.Pin(p.ns, p.path); err != nil {
				nss.User.Close()
				return nil, err
			}
		}
	}
	if err := libuserns.Pin(nss.User, pin); err != nil {
		nss.User.Close()
		return nil, err
	}
	return nss.User, nil
}

// podNSPinned reports whether pod owner's IPC and UTS namespaces are
// pinned.
func (c *creation) podNSPinned(owner string) bool {
	for _, k := range podNSKinds {
		ns, err := libuserns.OpenPinnedType(k.pin(c.lay, owner), k.nstype)
		if err != nil {
			return false
		}
		ns.Close()
	}
	return true
}

// leave takes the container out of its pod's range; the last one out
// returns the range to the pool and unpins the pod's namespaces, under
// the pods lock (state.Layout.LockPods).
func (c *creation) leave(owner string) error {
	unlock, err := c.lay.LockPods()
	if err != nil {
		return err
	}
	defer unlock()
	freed, err := c.p.pool.Leave(owner, c.id)
	if err != nil || !freed {
		return err
	}
	return c.lay.UnpinPod(owner)
}
