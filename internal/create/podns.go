package create

import (
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
)

// A pool pod's IPC and UTS namespaces. CRI-O makes each pod's IPC and UTS
// namespaces itself (pinns) and gives every container of the pod their
// paths; the host's user namespace owns them. From inside the pod's user
// namespace runc 1.1 may not join them (setns: EPERM), and runc >= 1.2,
// which joins them first, cannot mount mqueue in the IPC namespace nor set
// the pod's hostname in the UTS namespace. So a pool pod whose spec joins
// IPC or UTS namespaces by a path that the host's user namespace owns gets
// namespaces of its own, made together
// with its user namespace and owned by it (libuserns.NewPodNamespaces),
// pinned beside it (state.Layout PodIPC, PodUTS) by the container that
// pins the pod, and joined by every container of the pod instead of
// CRI-O's: the containers still share one IPC namespace and one hostname,
// as CRI-O intends. They go with the pod's user namespace (UnpinPod).
// containerd's pods are untouched: its sandbox makes new ones inside the
// pod's user namespace and its containers join them through
// /proc/<pid>/ns, which that user namespace owns.

// podNSKinds are the namespace types a pool pod gets of its own, with
// their kernel type and the pin of the pod's.
var podNSKinds = []struct {
	typ    specs.LinuxNamespaceType
	nstype int
	pin    func(state.Layout, string) string
}{
	{specs.IPCNamespace, unix.CLONE_NEWIPC, state.Layout.PodIPC},
	{specs.UTSNamespace, unix.CLONE_NEWUTS, state.Layout.PodUTS},
}

// joinedPath is the path of the spec's namespace entry of type t, or ""
// (none, or a new namespace).
func joinedPath(s *specs.Spec, t specs.LinuxNamespaceType) string {
	if s.Linux == nil {
		return ""
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == t {
			return ns.Path
		}
	}
	return ""
}

// hostOwned reports whether the namespace of kind k that the spec joins
// by path is owned by the host's user namespace (the wrapper's own: it
// runs in the host's), as CRI-O's pinns namespaces are. Only those are
// swapped for the pod's own: one owned by the pod's user namespace
// (containerd's /proc/<sandbox>/ns paths) needs nothing, and one owned by
// any other user namespace (another container's, as podman's
// --ipc container:NAME gives) is runc's to join or refuse, never quietly
// replaced by a namespace the caller did not ask to share.
func hostOwned(path string, nstype int) (bool, error) {
	ns, err := libuserns.OpenNS(path, nstype)
	if err != nil {
		return false, err
	}
	defer ns.Close()
	self, err := os.Open("/proc/self/ns/user")
	if err != nil {
		return false, err
	}
	defer self.Close()
	return libuserns.OwnedBy(ns, self)
}

// hostOwnedPodNS lists the namespace kinds among IPC and UTS that the spec
// joins by a path the host's user namespace owns (CRI-O's pinns ones):
// the pod gets its own of those (ensurePin, planPodNS).
func hostOwnedPodNS(s *specs.Spec) (map[specs.LinuxNamespaceType]string, error) {
	var out map[specs.LinuxNamespaceType]string
	for _, k := range podNSKinds {
		path := joinedPath(s, k.typ)
		if path == "" {
			continue
		}
		host, err := hostOwned(path, k.nstype)
		if err != nil {
			return nil, fmt.Errorf("%s namespace: %w", k.typ, err)
		}
		if host {
			if out == nil {
				out = map[specs.LinuxNamespaceType]string{}
			}
			out[k.typ] = path
		}
	}
	return out, nil
}

// planPodNS points each IPC or UTS namespace the spec joins by a path the
// host's user namespace owns (hostns, from hostOwnedPodNS) at the pod's
// own, which the container that pinned the pod made (ensurePin), and
// records the caller's path in the stamp.
func (c *creation) planPodNS(stamp *oci.Stamp, hostns map[specs.LinuxNamespaceType]string) error {
	owner := c.req.Pod.Owner
	for _, k := range podNSKinds {
		path, ok := hostns[k.typ]
		if !ok {
			continue
		}
		pin := k.pin(c.lay, owner)
		own, err := libuserns.OpenPinnedType(pin, k.nstype)
		if err != nil {
			return fmt.Errorf("container %s joins %s namespace %s, which the host's user namespace owns, and its pod %s has no %s namespace of its own (%w): the container that made the pod's user namespace joined none by such a path; recreate the pod", c.id, k.typ, path, owner, k.typ, err)
		}
		own.Close()
		if stamp.PodNS == nil {
			stamp.PodNS = map[string]string{}
		}
		stamp.PodNS[string(k.typ)] = path
		c.p.podNS = append(c.p.podNS, nsPathModifier{k.typ, pin})
		c.Log.Debugf("container %s: joins its pod's %s namespace %s instead of %s, which the host's user namespace owns", c.id, k.typ, pin, path)
	}
	return nil
}

// nsPathModifier points the spec's namespace entry of type typ at path.
type nsPathModifier struct {
	typ  specs.LinuxNamespaceType
	path string
}

func (m nsPathModifier) Modify(s *specs.Spec) error {
	for i := range s.Linux.Namespaces {
		if s.Linux.Namespaces[i].Type == m.typ {
			s.Linux.Namespaces[i].Path = m.path
			return nil
		}
	}
	return fmt.Errorf("no %s namespace entry to point at %s", m.typ, m.path)
}
