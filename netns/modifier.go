package netns

import (
	"path"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Foreign reports whether the spec joins a network namespace by path that
// owned says the container's user namespace does not own, and which path.
// owned is asked about the first network namespace path only, and its
// error is returned with that path.
func Foreign(s *specs.Spec, owned func(path string) (bool, error)) (foreign bool, path string, err error) {
	if s.Linux == nil {
		return false, "", nil
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != specs.NetworkNamespace || ns.Path == "" {
			continue
		}
		ok, err := owned(ns.Path)
		if err != nil {
			return false, ns.Path, err
		}
		return !ok, ns.Path, nil
	}
	return false, "", nil
}

// InheritModifier removes the network namespace entry: runc inherits the
// namespace the wrapper entered (Enter) instead of joining it.
type InheritModifier struct{}

func (InheritModifier) Modify(s *specs.Spec) error {
	if s.Linux == nil {
		return nil
	}
	kept := s.Linux.Namespaces[:0]
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != specs.NetworkNamespace {
			kept = append(kept, ns)
		}
	}
	s.Linux.Namespaces = kept
	return nil
}

// SysfsModifier replaces sysfs mounts with a read-only recursive bind of
// the host's /sys. Mounting sysfs needs CAP_SYS_ADMIN over the network
// namespace's owning user namespace: a pod user namespace joining a
// network namespace created elsewhere (containerd's CNI netns) cannot.
// Native: the runtime knows "rro" (recursive read-only, runc >= 1.2);
// runc 1.1 makes only the top mount read-only. The host's sysfs is more
// than a pod's own would show: the kernel filesystems mounted in it that
// a pod has no use for are masked (HostOnlySysfs, through the runtime's
// maskedPaths, which skips what does not exist).
//
// The bind is rprivate, whatever linux.rootfsPropagation says. With
// rshared (containerd's, for a Bidirectional volume) runc makes every
// mount of the container's new mount namespace shared before it mounts
// the spec, so a bind of /sys would join the peer group of that
// namespace's /sys: the tmpfs runc puts on the bind's fs/cgroup would
// propagate onto /sys/fs/cgroup there and hide the cgroup v1 hierarchies
// runc binds from next ("stat /sys/fs/cgroup/cpu/...: no such file or
// directory", runc 1.1 and 1.5 alike). A pod's own sysfs receives no host
// mounts either, and so host mounts made below /sys after the create,
// which maskedPaths could not mask, never reach the pod.
type SysfsModifier struct{ Native bool }

// HostOnlySysfs are the paths below /sys where a host mounts kernel
// filesystems of its own (LSM policy, debug and trace interfaces, BPF
// pins, configfs, pstore, FUSE connections).
var HostOnlySysfs = []string{"kernel/security", "kernel/debug", "kernel/tracing", "kernel/config", "fs/bpf", "fs/pstore", "fs/fuse/connections"}

func (m SysfsModifier) Modify(s *specs.Spec) error {
	for i := range s.Mounts {
		if s.Mounts[i].Type != "sysfs" {
			continue
		}
		opts := []string{"rbind", "rprivate", "nosuid", "nodev", "noexec", "ro"}
		if m.Native {
			opts = append(opts, "rro")
		}
		dest := s.Mounts[i].Destination
		s.Mounts[i] = specs.Mount{Destination: dest, Type: "bind", Source: "/sys", Options: opts}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		for _, p := range HostOnlySysfs {
			if p = path.Join(dest, p); !slices.Contains(s.Linux.MaskedPaths, p) {
				s.Linux.MaskedPaths = append(s.Linux.MaskedPaths, p)
			}
		}
	}
	return nil
}
