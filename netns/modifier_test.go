package netns

import (
	"errors"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestInheritModifier(t *testing.T) {
	cases := []struct {
		name string
		in   []specs.LinuxNamespace
		want []specs.LinuxNamespace
	}{
		{"drops the network namespace only",
			[]specs.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: "/var/run/netns/cni-1"}, {Type: "user", Path: "/p"}},
			[]specs.LinuxNamespace{{Type: "pid"}, {Type: "user", Path: "/p"}}},
		{"nothing to drop", []specs.LinuxNamespace{{Type: "pid"}}, []specs.LinuxNamespace{{Type: "pid"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &specs.Spec{Linux: &specs.Linux{Namespaces: c.in}}
			if err := (InheritModifier{}).Modify(s); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Linux.Namespaces, c.want) {
				t.Errorf("got %v, want %v", s.Linux.Namespaces, c.want)
			}
		})
	}
}

// Foreign asks about the first network namespace given by path, and
// returns it with owned's error.
func TestForeign(t *testing.T) {
	errOwner := errors.New("no owner")
	cases := []struct {
		name    string
		linux   *specs.Linux
		owned   bool
		err     error
		foreign bool
		path    string
	}{
		{"no linux section", nil, false, nil, false, ""},
		{"a new network namespace", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "network"}}}, false, nil, false, ""},
		{"the host's", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "pid"}}}, false, nil, false, ""},
		{"owned", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "network", Path: "/n"}}}, true, nil, false, "/n"},
		{"not owned", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "user", Path: "/u"}, {Type: "network", Path: "/n"}}}, false, nil, true, "/n"},
		{"owner unknown", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "network", Path: "/n"}}}, false, errOwner, false, "/n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			foreign, path, err := Foreign(&specs.Spec{Linux: c.linux}, func(p string) (bool, error) {
				if p != c.path {
					t.Errorf("owned(%q), want owned(%q)", p, c.path)
				}
				return c.owned, c.err
			})
			if foreign != c.foreign || path != c.path || !errors.Is(err, c.err) {
				t.Errorf("Foreign = %v, %q, %v; want %v, %q, %v", foreign, path, err, c.foreign, c.path, c.err)
			}
		})
	}
}

// SysfsModifier turns every sysfs mount into a read-only bind of the
// host's /sys, recursively read-only where the runtime knows "rro", and
// masks the host's own kernel filesystems in it, once each.
func TestSysfsModifier(t *testing.T) {
	for _, native := range []bool{false, true} {
		s := &specs.Spec{Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		}, Linux: &specs.Linux{MaskedPaths: []string{"/proc/kcore", "/sys/fs/bpf"}}}
		if err := (SysfsModifier{Native: native}).Modify(s); err != nil {
			t.Fatal(err)
		}
		opts := []string{"rbind", "nosuid", "nodev", "noexec", "ro"}
		if native {
			opts = append(opts, "rro")
		}
		want := []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/sys", Type: "bind", Source: "/sys", Options: opts},
		}
		if !reflect.DeepEqual(s.Mounts, want) {
			t.Errorf("native %v: mounts %v, want %v", native, s.Mounts, want)
		}
		masked := []string{"/proc/kcore", "/sys/fs/bpf", "/sys/kernel/security", "/sys/kernel/debug", "/sys/kernel/tracing", "/sys/kernel/config", "/sys/fs/pstore", "/sys/fs/fuse/connections"}
		if !reflect.DeepEqual(s.Linux.MaskedPaths, masked) {
			t.Errorf("native %v: masked paths %v, want %v", native, s.Linux.MaskedPaths, masked)
		}
	}
	// No sysfs mount: nothing masked.
	s := &specs.Spec{Linux: &specs.Linux{}}
	if err := (SysfsModifier{}).Modify(s); err != nil || s.Linux.MaskedPaths != nil {
		t.Errorf("no sysfs: %v, masked %v", err, s.Linux.MaskedPaths)
	}
}
