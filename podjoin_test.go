package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/netns"
)

// An app container of a pod whose sandbox holds a pool user namespace
// joins it whether or not its own spec asks (CRI-O copies no pod
// annotation to containers), whatever the node's mode.
func TestWantUsernsPooledPod(t *testing.T) {
	const pod = "sb"
	own := func(s *specs.Spec) *specs.Spec {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
		return s
	}
	hostNet := func(s *specs.Spec) *specs.Spec {
		_ = netns.InheritModifier{}.Modify(s) // no network namespace entry: the host's
		return s
	}
	app := map[string]string{oci.CRISandboxID: pod, oci.CRIContainerType: "container"}
	crio := map[string]string{oci.CRIOSandboxID: pod, oci.CRIOContainerType: "container"}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range m {
			out[a] = b
		}
		return out
	}
	cases := []struct {
		name   string
		pinned bool
		mode   config.Mode
		ann    map[string]string
		spec   func(*specs.Spec) *specs.Spec
		want   bool
		err    string
	}{
		{"app, pod pooled", true, config.ModeAnnotation, app, nil, true, ""},
		{"CRI-O app, pod pooled", true, config.ModeAnnotation, crio, nil, true, ""},
		{"app, pod pooled, mode off", true, config.ModeOff, app, nil, true, ""},
		{"app asks auto, pod pooled", true, config.ModeAnnotation, with(app, oci.AnnotationUserns, "auto"), nil, true, ""},
		{"app, pod not pooled", false, config.ModeAnnotation, app, nil, false, ""},
		{"app with its own user namespace", true, config.ModeAnnotation, app, own, false, ""},
		{"app asks host, pod pooled", true, config.ModeAnnotation, with(app, oci.AnnotationUserns, "host"), nil, false, "asks for the host's user namespace"},
		{"app on the host's network, pod pooled", true, config.ModeAnnotation, app, hostNet, false, "shares the host's [network] namespace"},
		{"the sandbox itself", true, config.ModeAnnotation, map[string]string{oci.CRISandboxID: pod, oci.CRIContainerType: "sandbox"}, nil, false, ""},
		{"no pod annotations", true, config.ModeAnnotation, nil, nil, false, ""},
		{"a container:<ID> join: its target's (nsjoin)", true, config.ModeAnnotation, app, func(s *specs.Spec) *specs.Spec {
			s.Linux.Namespaces[0].Path = "container:sb"
			return s
		}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := testApp(t, c.mode)
			if c.pinned {
				pin := state.Layout(a.cfg.StateDir).Pin(pod)
				if err := os.MkdirAll(filepath.Dir(pin), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(pin, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s := appSpec(c.ann)
			s.Linux.Namespaces[0].Path = "" // its own PID namespace
			if c.spec != nil {
				s = c.spec(s)
			}
			req, err := oci.ParseRequest(a.inv.ID, c.ann)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.wantUserns(s, req)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "container debug") || !strings.Contains(err.Error(), "pod "+pod) {
					t.Fatalf("wantUserns = %v, %v; want an error with %q naming the container and pod", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("wantUserns = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}
