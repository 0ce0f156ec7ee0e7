package nsjoin

import (
	"encoding/json"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

const pinPath = "/run/runc-userns/containers/abc/debug/pidns"

func nsEntry(t specs.LinuxNamespaceType, path string) specs.LinuxNamespace {
	return specs.LinuxNamespace{Type: t, Path: path}
}

func TestModifier(t *testing.T) {
	cases := []struct {
		name    string
		in      *specs.Spec
		want    []specs.LinuxNamespace
		wantErr bool
	}{
		{
			name: "reference replaced in place",
			in: &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
				nsEntry(specs.MountNamespace, ""), nsEntry(specs.PIDNamespace, "container:t"), nsEntry(specs.NetworkNamespace, "/proc/9/ns/net"),
			}}},
			want: []specs.LinuxNamespace{nsEntry(specs.MountNamespace, ""), nsEntry(specs.PIDNamespace, pinPath), nsEntry(specs.NetworkNamespace, "/proc/9/ns/net")},
		},
		{
			name: "new PID namespace becomes the join",
			in:   &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{nsEntry(specs.PIDNamespace, "")}}},
			want: []specs.LinuxNamespace{nsEntry(specs.PIDNamespace, pinPath)},
		},
		{
			name: "no pid entry: appended",
			in:   &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{nsEntry(specs.MountNamespace, "")}}},
			want: []specs.LinuxNamespace{nsEntry(specs.MountNamespace, ""), nsEntry(specs.PIDNamespace, pinPath)},
		},
		{
			name: "no linux section",
			in:   &specs.Spec{},
			want: []specs.LinuxNamespace{nsEntry(specs.PIDNamespace, pinPath)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := json.Marshal(c.in)
			if err := (PIDModifier{Path: pinPath}).Modify(c.in); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.in.Linux.Namespaces, c.want) {
				t.Errorf("namespaces = %v, want %v", c.in.Linux.Namespaces, c.want)
			}
			// Nothing else moved.
			var orig specs.Spec
			_ = json.Unmarshal(before, &orig)
			got := *c.in
			l := *got.Linux
			l.Namespaces = nil
			if orig.Linux != nil {
				orig.Linux.Namespaces = nil
			}
			if reflect.DeepEqual(l, specs.Linux{}) {
				got.Linux = orig.Linux
			} else {
				got.Linux = &l
			}
			if !reflect.DeepEqual(got, orig) {
				t.Errorf("the modifier changed more than the pid entry: %+v", got)
			}
		})
	}
}

func TestModifierRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"", "container:t", "relative/pidns"} {
		s := &specs.Spec{}
		if err := (PIDModifier{Path: p}).Modify(s); err == nil {
			t.Errorf("PIDModifier{%q} succeeded", p)
		}
	}
}
