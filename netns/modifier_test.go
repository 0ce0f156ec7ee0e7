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
		opts := []string{"rbind", "rprivate", "nosuid", "nodev", "noexec", "ro"}
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

// The bind of /sys is rprivate and carries no other propagation option,
// whatever the root's propagation and the caller's sysfs options say: with
// rootfsPropagation rshared (containerd's, for a Bidirectional volume) a
// shared bind would carry runc's /sys/fs/cgroup tmpfs back onto the /sys
// runc binds the cgroup v1 hierarchies from.
func TestSysfsModifierPropagation(t *testing.T) {
	for _, c := range []struct {
		name     string
		rootProp string
		opts     []string
	}{
		{"runc spec", "", []string{"nosuid", "noexec", "nodev", "ro"}},
		{"Bidirectional volume", "rshared", []string{"nosuid", "noexec", "nodev", "ro"}},
		{"HostToContainer volume", "rslave", []string{"nosuid", "noexec", "nodev", "ro"}},
		{"private root", "rprivate", nil},
		{"sysfs asks for rshared", "rshared", []string{"rshared", "ro"}},
		{"sysfs asks for shared", "", []string{"shared"}},
		{"sysfs asks for rslave", "rshared", []string{"rslave", "rw"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, native := range []bool{false, true} {
				s := &specs.Spec{
					Mounts: []specs.Mount{{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: c.opts}},
					Linux:  &specs.Linux{RootfsPropagation: c.rootProp},
				}
				if err := (SysfsModifier{Native: native}).Modify(s); err != nil {
					t.Fatal(err)
				}
				var prop []string
				for _, o := range s.Mounts[0].Options {
					switch o {
					case "shared", "rshared", "slave", "rslave", "private", "rprivate", "unbindable", "runbindable":
						prop = append(prop, o)
					}
				}
				if !reflect.DeepEqual(prop, []string{"rprivate"}) {
					t.Errorf("native %v: propagation options %v of %v, want [rprivate]", native, prop, s.Mounts[0].Options)
				}
				if s.Linux.RootfsPropagation != c.rootProp {
					t.Errorf("native %v: rootfsPropagation %q, want the caller's %q", native, s.Linux.RootfsPropagation, c.rootProp)
				}
			}
		})
	}
}
