package main

import (
	"os"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/oci"
)

func TestNetjoinModifier(t *testing.T) {
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
			if err := (netjoinModifier{}).Modify(s); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Linux.Namespaces, c.want) {
				t.Errorf("got %v, want %v", s.Linux.Namespaces, c.want)
			}
		})
	}
}

func TestNetSysctls(t *testing.T) {
	s := &specs.Spec{Linux: &specs.Linux{Sysctl: map[string]string{"net.ipv4.ip_forward": "1", "kernel.shm_rmid_forced": "1"}}}
	if got := netSysctls(s); !reflect.DeepEqual(got, []string{"net.ipv4.ip_forward"}) {
		t.Errorf("netSysctls = %v", got)
	}
}

func TestNetjoinRecord(t *testing.T) {
	lay := layout(t.TempDir())
	if _, found, err := readNetjoin(lay, "/r", "c1"); found || err != nil {
		t.Fatalf("no record: found %v, err %v", found, err)
	}
	nj, err := writeNetjoin(lay, "/r", "c1", "/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := readNetjoin(lay, "/r", "c1")
	if err != nil || !found || got != nj {
		t.Fatalf("read back %+v found %v err %v, want %+v", got, found, err, nj)
	}
	if !netjoinsUnder(lay, "/r") || netjoinsUnder(lay, "/other") {
		t.Error("netjoinsUnder: want a record under /r only")
	}
	if err := os.WriteFile(lay.netjoinRecord("/r", "c1"), []byte("1 2 relative\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readNetjoin(lay, "/r", "c1"); err == nil {
		t.Error("malformed record accepted")
	}
}

// BenchmarkExecLookupMiss is what exec costs a container we did not edit:
// the record lookup that finds nothing.
func BenchmarkExecLookupMiss(b *testing.B) {
	lay := layout(b.TempDir())
	for i := 0; i < b.N; i++ {
		if _, found, err := readNetjoin(lay, "/run/containerd/runc/k8s.io", "0123456789abcdef"); found || err != nil {
			b.Fatal(found, err)
		}
	}
}

// A second create of the same bundle starts from the caller's spec: the
// network namespace entry netjoin removed comes back.
func TestUndoStampNetns(t *testing.T) {
	s := &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "pid"}}}, Annotations: map[string]string{}}
	undoStamp(s, &oci.Stamp{Netns: "/var/run/netns/cni-1"})
	want := []specs.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: "/var/run/netns/cni-1"}}
	if !reflect.DeepEqual(s.Linux.Namespaces, want) {
		t.Errorf("namespaces after undo = %v, want %v", s.Linux.Namespaces, want)
	}
}
