package netns

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Sysctls are the values to write into the network namespace at Path
// (nsfs identity ID), keyed by their path under /proc/sys/net; Spec is
// the net.* sysctls as the caller's spec has them (what a stamp keeps,
// for a second create of the bundle). The zero value writes nothing.
type Sysctls struct {
	Path   string
	ID     ID
	Values map[string]string
	Spec   map[string]string
}

// SysctlsOf returns the spec's net.* sysctls, or nil.
func SysctlsOf(s *specs.Spec) map[string]string {
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

// PodDefaults are the network sysctls the wrapper writes into a pod's
// network namespace when the pod's spec does not set them: the pod's root
// may bind ports below 1024 and every group of the pod may ping. They are
// what containerd's enable_unprivileged_ports and enable_unprivileged_icmp
// put into a sandbox's spec (containerd 2 does by default), and what a pod
// whose user namespace owns its network namespace has in effect: its root
// holds CAP_NET_BIND_SERVICE there. The group IDs are the pod's.
var PodDefaults = map[string]string{
	"net.ipv4.ip_unprivileged_port_start": "0",
	"net.ipv4.ping_group_range":           "0 2147483647",
}

// sysctlValues checks the net.* sysctls want and makes them the values the
// host writes, keyed by their path under /proc/sys/net, with each of
// defaults whose file want does not name: ping_group_range's group IDs are
// the pod's, and go through its mapping.
func sysctlValues(want, defaults map[string]string, gidMap []specs.LinuxIDMapping) (map[string]string, error) {
	values, err := hostValues(want, gidMap)
	if err != nil {
		return nil, err
	}
	def, err := hostValues(defaults, gidMap)
	if err != nil {
		return nil, err
	}
	for rel, value := range def {
		if _, set := values[rel]; !set {
			values[rel] = value
		}
	}
	return values, nil
}

// hostValues is sysctlValues without defaults.
func hostValues(want map[string]string, gidMap []specs.LinuxIDMapping) (map[string]string, error) {
	values := map[string]string{}
	for key, value := range want {
		rel, err := sysctlPath(key)
		if err != nil {
			return nil, err
		}
		if rel == "ipv4/ping_group_range" {
			host, err := hostPingGroupRange(value, gidMap)
			if err != nil {
				return nil, fmt.Errorf("sysctl %s=%q: %w", key, value, err)
			}
			value = host
		}
		if _, dup := values[rel]; dup {
			return nil, fmt.Errorf("sysctl %s names /proc/sys/net/%s, as another key of linux.sysctl does: keep one", key, rel)
		}
		values[rel] = value
	}
	return values, nil
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

// SysctlModifier removes the net.* sysctls from the spec: the wrapper
// writes them (Sysctls.Write).
type SysctlModifier struct{}

func (SysctlModifier) Modify(s *specs.Spec) error {
	if s.Linux == nil {
		return nil
	}
	for k := range SysctlsOf(s) {
		delete(s.Linux.Sysctl, k)
	}
	if len(s.Linux.Sysctl) == 0 {
		s.Linux.Sysctl = nil
	}
	return nil
}
