package main

import (
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/netns"
)

// sysfsModifier replaces sysfs mounts with a read-only recursive bind of
// the host's /sys. Mounting sysfs needs CAP_SYS_ADMIN over the network
// namespace's owning user namespace: a pod user namespace joining a
// network namespace created elsewhere (containerd's CNI netns) cannot.
// native: the runtime knows "rro" (recursive read-only, runc >= 1.2);
// runc 1.1 makes only the top mount read-only.
type sysfsModifier struct{ native bool }

func (m sysfsModifier) Modify(s *specs.Spec) error {
	for i := range s.Mounts {
		if s.Mounts[i].Type != "sysfs" {
			continue
		}
		opts := []string{"rbind", "nosuid", "nodev", "noexec", "ro"}
		if m.native {
			opts = append(opts, "rro")
		}
		s.Mounts[i] = specs.Mount{Destination: s.Mounts[i].Destination, Type: "bind", Source: "/sys", Options: opts}
	}
	return nil
}

// ownedBy: owned for foreignNetns, the network namespace at path against
// the user namespace userns.
func ownedBy(userns *os.File) func(string) (bool, error) {
	return func(path string) (bool, error) {
		ns, _, err := netns.Open(path)
		if err != nil {
			return false, err
		}
		defer ns.Close()
		return libuserns.OwnedBy(ns, userns)
	}
}

// foreignNetns reports whether the container joins a network namespace
// that the pod's user namespace does not own.
func foreignNetns(s *specs.Spec, owned func(string) (bool, error)) (bool, string, error) {
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
