package create

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/libuserns"
)

// The spec edits are a pure function of the plan: the same plan gives the
// same spec, and each part of the plan gives its edit and no other.
func TestPlanModifiers(t *testing.T) {
	podMap := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 31, Size: 65536}}
	spec := func() *specs.Spec {
		return &specs.Spec{
			Root: &specs.Root{Path: "rootfs"},
			Mounts: []specs.Mount{
				{Destination: "/sys", Type: "sysfs", Source: "sysfs"},
				{Destination: "/v", Type: "bind", Source: "/vol", Options: []string{"rbind"}},
				{Destination: "/n", Type: "bind", Source: "/b/rootfs/mnt/x", Options: []string{"bind"}},
			},
			Linux: &specs.Linux{
				Namespaces: []specs.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: "/run/netns/cni"}},
				Sysctl:     map[string]string{"net.ipv4.ip_forward": "1", "kernel.msgmax": "8192"},
			},
		}
	}
	stamp := &oci.Stamp{Version: oci.StampVersion, ID: "c", Owner: "c"}
	cases := []struct {
		name string
		plan plan
		want func(s *specs.Spec)
	}{
		{"nothing but the stamp", plan{stamp: stamp}, func(s *specs.Spec) {}},
		{"a pool user namespace with its mappings, the staged rootfs", plan{stamp: stamp,
			userns: &libuserns.Modifier{Path: "/state/pods/c/userns", UID: podMap, GID: podMap}, rootfs: "/state/c/rootfs"},
			func(s *specs.Spec) {
				s.Root.Path = "/state/c/rootfs"
				s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: "user", Path: "/state/pods/c/userns"})
				s.Linux.UIDMappings, s.Linux.GIDMappings = podMap, podMap
			}},
		{"a joined user namespace's mappings, for runc 1.1: the caller's entry kept, the mappings added", plan{stamp: stamp,
			joinedMaps: &libuserns.Modifier{Path: "/proc/42/ns/user", UID: podMap, GID: podMap}},
			func(s *specs.Spec) {
				s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: "user", Path: "/proc/42/ns/user"})
				s.Linux.UIDMappings, s.Linux.GIDMappings = podMap, podMap
			}},
		{"a foreign network namespace, entered for runc", plan{stamp: stamp, foreignNet: &foreignNet{sysctls: true, enter: true}},
			func(s *specs.Spec) {
				s.Linux.Namespaces = s.Linux.Namespaces[:1]
				s.Linux.Sysctl = map[string]string{"kernel.msgmax": "8192"}
				s.Mounts[0] = specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys", Options: []string{"rbind", "rprivate", "nosuid", "nodev", "noexec", "ro"}}
				for _, p := range []string{"kernel/security", "kernel/debug", "kernel/tracing", "kernel/config", "fs/bpf", "fs/pstore", "fs/fuse/connections"} {
					s.Linux.MaskedPaths = append(s.Linux.MaskedPaths, "/sys/"+p)
				}
			}},
		{"bind mounts staged, moved and skipped", plan{stamp: stamp, mounts: &mountPlan{
			staged:  map[int]string{1: "/state/c/mounts/1"},
			moved:   []sourceModifier{{2, "/state/c/rootfs/mnt/x"}},
			skipped: []string{"/n"},
		}}, func(s *specs.Spec) {
			s.Mounts[1].Source = "/state/c/mounts/1"
			s.Mounts[2].Source = "/state/c/rootfs/mnt/x"
			s.Annotations = map[string]string{oci.AnnotationIdmapSkipped: "/n"}
		}},
		{"bind mounts idmapped by the runtime", plan{stamp: stamp, mounts: &mountPlan{
			native: []idmap.Candidate{{Index: 1, Dest: "/v", Recursion: idmap.Tree, UID: podMap, GID: podMap}},
		}}, func(s *specs.Spec) {
			s.Mounts[1].Options = []string{"rbind", "ridmap"}
			s.Mounts[1].UIDMappings, s.Mounts[1].GIDMappings = podMap, podMap
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, again, want := spec(), spec(), spec()
			for _, s := range []*specs.Spec{got, again} {
				for _, m := range c.plan.modifiers() {
					if err := m.Modify(s); err != nil {
						t.Fatal(err)
					}
				}
			}
			c.want(want)
			if want.Annotations == nil {
				want.Annotations = map[string]string{}
			}
			want.Annotations[oci.AnnotationStamp] = stamp.Encode()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("spec after the plan's edits:\n got %+v\nwant %+v", got, want)
			}
			if !reflect.DeepEqual(got, again) {
				t.Error("the same plan edited the same spec differently")
			}
		})
	}
}

// A stamp too large to be read back by a second create is refused when
// written, not when the bundle is created again.
func TestStampModifierSize(t *testing.T) {
	big := &oci.Stamp{Version: 1, Mounts: json.RawMessage(`"` + strings.Repeat("m", oci.MaxStampValue) + `"`)}
	s := &specs.Spec{}
	if err := (stampModifier{big}).Modify(s); err == nil || !strings.Contains(err.Error(), "give the container fewer mounts") {
		t.Fatalf("Modify: %v, want it refused", err)
	}
	if _, ok := s.Annotations[oci.AnnotationStamp]; ok {
		t.Fatal("the oversize stamp was written")
	}
	small := &oci.Stamp{Version: 1}
	if err := (stampModifier{small}).Modify(s); err != nil || s.Annotations[oci.AnnotationStamp] == "" {
		t.Fatalf("Modify: %v, annotations %v", err, s.Annotations)
	}
}
