package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/netns"
)

// Network sysctls of a pool container that joins a network namespace its
// pod's user namespace does not own (containerd's CNI netns; containerd 2
// puts net.ipv4.ip_unprivileged_port_start and net.ipv4.ping_group_range
// on every sandbox). runc writes sysctls from inside the container's user
// namespace, and root there has no CAP_NET_ADMIN over that network
// namespace: the write fails with EPERM on every runc version. So create
// removes them from the spec (the stamp keeps them, for a second create of
// the bundle) and writes them into the namespace itself, from the host,
// just before runc starts: what runc does for a pod without a user
// namespace, with the same privilege, in a namespace-scoped file only.

// netSysctls are the values to write into the network namespace at path
// (nsfs identity id), keyed by their path under /proc/sys/net; spec is
// the net.* sysctls as the caller's spec has them (what the stamp keeps).
// The zero value writes nothing.
type netSysctls struct {
	path   string
	id     netns.ID
	values map[string]string
	spec   map[string]string
}

// netSysctlsOf returns the spec's net.* sysctls, or nil.
func netSysctlsOf(s *specs.Spec) map[string]string {
	if s.Linux == nil {
		return nil
	}
	var out map[string]string
	for k, v := range s.Linux.Sysctl {
		if strings.HasPrefix(k, "net.") || strings.HasPrefix(k, "net/") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// planNetSysctls checks the spec's net.* sysctls and makes them the values
// the host writes into the namespace at path: ping_group_range's group IDs
// are the pod's, and go through its mapping. The zero value when there
// are none.
func planNetSysctls(s *specs.Spec, path string, gidMap []specs.LinuxIDMapping) (netSysctls, error) {
	want := netSysctlsOf(s)
	if len(want) == 0 {
		return netSysctls{}, nil
	}
	f, id, err := netns.Open(path)
	if err != nil {
		return netSysctls{}, err
	}
	f.Close()
	ns := netSysctls{path: path, id: id, values: map[string]string{}, spec: want}
	for key, value := range want {
		rel, err := sysctlPath(key)
		if err != nil {
			return netSysctls{}, err
		}
		if rel == "ipv4/ping_group_range" {
			host, err := hostPingGroupRange(value, gidMap)
			if err != nil {
				return netSysctls{}, fmt.Errorf("sysctl %s=%q: %w", key, value, err)
			}
			value = host
		}
		if _, dup := ns.values[rel]; dup {
			return netSysctls{}, fmt.Errorf("sysctl %s names /proc/sys/net/%s, as another key of linux.sysctl does: keep one", key, rel)
		}
		ns.values[rel] = value
	}
	return ns, nil
}

// sysctlPath is the file of a net.* sysctl key under /proc/sys/net, as runc
// finds it: dots separate the components, unless the key uses slashes
// (then dots may be part of a name, as in an interface eth0.100). Only a
// plain relative path is accepted: no empty, "." or ".." component.
func sysctlPath(key string) (string, error) {
	p := key
	if !strings.Contains(p, "/") {
		p = strings.ReplaceAll(p, ".", "/")
	}
	rel, ok := strings.CutPrefix(p, "net/")
	if !ok || rel == "" || strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("sysctl %q is not a file under /proc/sys/net: fix the key", key)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return "", fmt.Errorf("sysctl %q is not a plain path under /proc/sys/net (component %q): fix the key", key, c)
		}
	}
	return rel, nil
}

// hostPingGroupRange turns net.ipv4.ping_group_range as the pod means it
// ("low high", the pod's group IDs) into what host root writes for the
// same groups: the kernel reads the IDs in the writer's user namespace.
// The part of the range the pod's mapping does not cover is dropped (no
// such group can exist in the pod); an empty range is the kernel's "1 0",
// no group.
func hostPingGroupRange(value string, gidMap []specs.LinuxIDMapping) (string, error) {
	f := strings.Fields(value)
	if len(f) != 2 {
		return "", errors.New(`want "low high", two group IDs`)
	}
	low, err1 := strconv.ParseUint(f[0], 10, 32)
	high, err2 := strconv.ParseUint(f[1], 10, 32)
	if err1 != nil || err2 != nil {
		return "", errors.New(`want "low high", two group IDs`)
	}
	if len(gidMap) != 1 {
		return "", fmt.Errorf("the pod's group mapping has %d extents, not one", len(gidMap))
	}
	m := gidMap[0]
	first, last := uint64(m.ContainerID), uint64(m.ContainerID)+uint64(m.Size)-1
	low, high = max(low, first), min(high, last)
	if m.Size == 0 || low > high {
		return "1 0", nil
	}
	return fmt.Sprintf("%d %d", uint64(m.HostID)+low-first, uint64(m.HostID)+high-first), nil
}

// write enters the namespace on a locked thread and writes each value, in
// key order, through a /proc/sys/net opened there (the sysctl tables of a
// lookup are those of the caller's network namespace).
func (n netSysctls) write() error {
	if n.path == "" {
		return nil
	}
	restore, _, err := netns.Enter(n.path, n.id)
	if err != nil {
		return fmt.Errorf("enter network namespace %s to write its sysctls: %w", n.path, err)
	}
	err = n.writeHere()
	if rerr := restore(); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

func (n netSysctls) writeHere() error {
	dir, err := os.Open("/proc/sys/net")
	if err != nil {
		return err
	}
	defer dir.Close()
	keys := make([]string, 0, len(n.values))
	for k := range n.values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, rel := range keys {
		fd, err := unix.Openat2(int(dir.Fd()), rel, &unix.OpenHow{
			Flags:   unix.O_WRONLY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		})
		if err != nil {
			return fmt.Errorf("sysctl /proc/sys/net/%s in network namespace %s: open: %w (is it a network sysctl this kernel has in a network namespace?)", rel, n.path, err)
		}
		f := os.NewFile(uintptr(fd), "/proc/sys/net/"+rel)
		_, err = f.WriteString(n.values[rel])
		f.Close()
		if err != nil {
			return fmt.Errorf("sysctl /proc/sys/net/%s=%q in network namespace %s: %w", rel, n.values[rel], n.path, err)
		}
	}
	return nil
}

// netSysctlModifier removes the net.* sysctls from the spec: the wrapper
// writes them.
type netSysctlModifier struct{}

func (netSysctlModifier) Modify(s *specs.Spec) error {
	if s.Linux == nil {
		return nil
	}
	for k := range netSysctlsOf(s) {
		delete(s.Linux.Sysctl, k)
	}
	if len(s.Linux.Sysctl) == 0 {
		s.Linux.Sysctl = nil
	}
	return nil
}
