package netns

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestSysctlPath(t *testing.T) {
	cases := []struct {
		key, want, err string
	}{
		{"net.ipv4.ip_unprivileged_port_start", "ipv4/ip_unprivileged_port_start", ""},
		{"net.ipv4.ping_group_range", "ipv4/ping_group_range", ""},
		{"net/ipv4/conf/eth0.100/forwarding", "ipv4/conf/eth0.100/forwarding", ""},
		{"net.core.somaxconn", "core/somaxconn", ""},
		{"net", "", "not a file under /proc/sys/net"},
		{"net.", "", "not a file under /proc/sys/net"},
		{"net/", "", "not a file under /proc/sys/net"},
		{"kernel.shm_rmid_forced", "", "not a file under /proc/sys/net"},
		{"netfilter.x", "", "not a file under /proc/sys/net"},
		{"net..ipv4", "", `component ""`},
		{"net/ipv4//x", "", `component ""`},
		{"net/../kernel/core_pattern", "", `component ".."`},
		{"net/ipv4/./x", "", `component "."`},
		{"net/ipv4/x/", "", `component ""`},
		{"/net/ipv4/x", "", "not a file under /proc/sys/net"},
		{"net.ipv4.x\x00y", "", "not a file under /proc/sys/net"},
	}
	for _, c := range cases {
		got, err := sysctlPath(c.key)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("sysctlPath(%q) = %q, %v; want %q", c.key, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "fix the key")):
			t.Errorf("sysctlPath(%q) = %q, %v; want an error with %q", c.key, got, err, c.err)
		}
	}
}

func TestHostPingGroupRange(t *testing.T) {
	pod := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 2147483648, Size: 65536}}
	cases := []struct {
		value, want, err string
		m                []specs.LinuxIDMapping
	}{
		{"0 2147483647", "2147483648 2147549183", "", pod}, // containerd 2's default: all of the pod's groups
		{"0 0", "2147483648 2147483648", "", pod},
		{"100 200", "2147483748 2147483848", "", pod},
		{"\t5   70000 ", "2147483653 2147549183", "", pod},
		{"1 0", "1 0", "", pod}, // the kernel's default: no group
		{"70000 80000", "1 0", "", pod},
		{"0 4294967295", "2147483648 2147549183", "", pod},
		{"10 20", "1010 1020", "", []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 65536}}},
		{"0 20", "1000 1010", "", []specs.LinuxIDMapping{{ContainerID: 10, HostID: 1000, Size: 100}}},
		{"0", "", "two group IDs", pod},
		{"0 1 2", "", "two group IDs", pod},
		{"-1 5", "", "two group IDs", pod},
		{"0 4294967296", "", "two group IDs", pod},
		{"a b", "", "two group IDs", pod},
		{"0 1", "", "2 extents", append(pod, pod...)},
	}
	for _, c := range cases {
		got, err := hostPingGroupRange(c.value, c.m)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("hostPingGroupRange(%q) = %q, %v; want %q", c.value, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("hostPingGroupRange(%q) = %q, %v; want an error with %q", c.value, got, err, c.err)
		}
	}
}

// FuzzNetSysctl: for any key a spec can carry, sysctlPath gives a plain
// relative path under /proc/sys/net or refuses; for any value,
// hostPingGroupRange gives "1 0" or a range inside the pod's host IDs.
func FuzzNetSysctl(f *testing.F) {
	for _, s := range []string{"net.ipv4.ping_group_range", "net/ipv4/conf/eth0.100/forwarding", "net/../x", "net..a", "kernel.x", "net"} {
		f.Add(s, "0 2147483647", uint32(2147483648), uint32(65536), uint32(0))
	}
	f.Add("net.ipv4.ping_group_range", "1 0", uint32(1000), uint32(1), uint32(5))
	f.Add("net.ipv4.ping_group_range", "\t4294967295 4294967295\n", uint32(4294901760), uint32(65535), uint32(0))
	f.Fuzz(func(t *testing.T, key, value string, hostID, size, containerID uint32) {
		if rel, err := sysctlPath(key); err == nil {
			if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
				t.Fatalf("sysctlPath(%q) = %q", key, rel)
			}
			for _, c := range strings.Split(rel, "/") {
				if c == "" || c == "." || c == ".." {
					t.Fatalf("sysctlPath(%q) = %q: component %q", key, rel, c)
				}
			}
		}
		if size == 0 || uint64(hostID)+uint64(size) > 1<<32 || uint64(containerID)+uint64(size) > 1<<32 {
			return // not a mapping the kernel takes
		}
		m := []specs.LinuxIDMapping{{ContainerID: containerID, HostID: hostID, Size: size}}
		out, err := hostPingGroupRange(value, m)
		if err != nil || out == "1 0" {
			return
		}
		var low, high uint64
		if n, _ := fmt.Sscanf(out, "%d %d", &low, &high); n != 2 {
			t.Fatalf("hostPingGroupRange(%q) = %q", value, out)
		}
		if low > high || low < uint64(hostID) || high > uint64(hostID)+uint64(size)-1 {
			t.Fatalf("hostPingGroupRange(%q) = %q: outside the pod's host IDs %d-%d", value, out, hostID, uint64(hostID)+uint64(size)-1)
		}
	})
}

// SysctlModifier takes out the net.* sysctls and only them, and leaves no
// empty map behind.
func TestSysctlValues(t *testing.T) {
	pod := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 2147483648, Size: 65536}}
	podDefaults := map[string]string{
		"ipv4/ip_unprivileged_port_start": "0",
		"ipv4/ping_group_range":           "2147483648 2147549183",
	}
	cases := []struct {
		name           string
		want, defaults map[string]string
		values         map[string]string
		err            string
	}{
		{name: "none", values: map[string]string{}},
		{name: "the spec's, no defaults", want: map[string]string{"net.core.somaxconn": "1024"},
			values: map[string]string{"core/somaxconn": "1024"}},
		{name: "defaults alone", defaults: PodDefaults, values: podDefaults},
		{name: "the spec's beside the defaults", want: map[string]string{"net.core.somaxconn": "1024"}, defaults: PodDefaults,
			values: map[string]string{"core/somaxconn": "1024", "ipv4/ip_unprivileged_port_start": "0", "ipv4/ping_group_range": "2147483648 2147549183"}},
		{name: "the spec's value wins", want: map[string]string{"net.ipv4.ip_unprivileged_port_start": "1024", "net.ipv4.ping_group_range": "1 0"}, defaults: PodDefaults,
			values: map[string]string{"ipv4/ip_unprivileged_port_start": "1024", "ipv4/ping_group_range": "1 0"}},
		{name: "the spec's value wins, slash form", want: map[string]string{"net/ipv4/ip_unprivileged_port_start": "80"}, defaults: PodDefaults,
			values: map[string]string{"ipv4/ip_unprivileged_port_start": "80", "ipv4/ping_group_range": "2147483648 2147549183"}},
		{name: "two keys, one file", want: map[string]string{"net.core.somaxconn": "1", "net/core/somaxconn": "2"}, err: "keep one"},
		{name: "bad key", want: map[string]string{"net/../kernel/x": "1"}, defaults: PodDefaults, err: "fix the key"},
		{name: "bad range", want: map[string]string{"net.ipv4.ping_group_range": "x"}, defaults: PodDefaults, err: "two group IDs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sysctlValues(c.want, c.defaults, pod)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("sysctlValues = %v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.values) {
				t.Fatalf("sysctlValues = %v, %v; want %v", got, err, c.values)
			}
		})
	}
}

func TestSysctlModifier(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]string
		want map[string]string
	}{
		{"mixed", map[string]string{"net.ipv4.ping_group_range": "0 2147483647", "net/ipv4/conf/eth0.1/forwarding": "1", "kernel.shm_rmid_forced": "1"}, map[string]string{"kernel.shm_rmid_forced": "1"}},
		{"only net", map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}, nil},
		{"none", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &specs.Spec{Linux: &specs.Linux{Sysctl: c.in}}
			if err := (SysctlModifier{}).Modify(s); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Linux.Sysctl, c.want) {
				t.Errorf("sysctls after the modifier = %v, want %v", s.Linux.Sysctl, c.want)
			}
		})
	}
}
