package create

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/netns"
)

// testApp is a call for container "debug" with the given userns mode.
func testApp(t *testing.T, mode config.Mode) *Call {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return &Call{
		Inv: &oci.Invocation{ID: "debug", Command: "create", Root: t.TempDir()},
		Cfg: &config.Config{StateDir: t.TempDir(), Userns: config.Userns{Mode: mode}},
		Log: log,
	}
}

// pinPod makes pod owner's pin a file, as podIsPooled finds it.
func pinPod(t *testing.T, a *Call, owner string) {
	t.Helper()
	pin := state.Layout(a.Cfg.StateDir).Pin(owner)
	if err := os.MkdirAll(filepath.Dir(pin), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pin, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// runcHas makes container id's runc state under a's runc root, as
// state.RuncHas finds it.
func runcHas(t *testing.T, a *Call, id string) {
	t.Helper()
	dir := filepath.Join(a.Inv.Root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// appSpec is a container spec with its own network and PID namespaces and
// the given annotations.
func appSpec(ann map[string]string) *specs.Spec {
	return &specs.Spec{
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
			{Type: specs.PIDNamespace, Path: "container:t"}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace}, {Type: specs.MountNamespace},
		}},
		Annotations: ann,
	}
}

func containerd(sandbox, ctype string) map[string]string {
	return map[string]string{oci.CRISandboxID: sandbox, oci.CRIContainerType: ctype}
}

func crio(sandbox, ctype string) map[string]string {
	return map[string]string{oci.CRIOSandboxID: sandbox, oci.CRIOContainerType: ctype}
}

func noCaps() (*specs.LinuxCapabilities, error) { return nil, nil }

// An app container of a pod whose sandbox holds a pool user namespace
// joins it whether or not its own spec asks (a containerd handler without
// pod_annotations copies none to containers), whatever the node's mode.
func TestWantUsernsPooledPod(t *testing.T) {
	const pod = "sb"
	own := func(s *specs.Spec) {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
	}
	hostNet := func(s *specs.Spec) {
		_ = netns.InheritModifier{}.Modify(s) // no network namespace entry: the host's
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
		spec   func(*specs.Spec)
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
		{"a container:<ID> join: its target's (nsjoin)", true, config.ModeAnnotation, app, func(s *specs.Spec) {
			s.Linux.Namespaces[0].Path = "container:sb"
		}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := wantUsernsOf(t, c.mode, c.pinned, c.ann, c.spec, noCaps)
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

// wantUsernsOf is wantUserns for container debug with annotations ann, a
// PID namespace of its own and the spec edit makes, under mode; pinned:
// pod sb holds a pool user namespace.
func wantUsernsOf(t *testing.T, mode config.Mode, pinned bool, ann map[string]string, edit func(*specs.Spec), caps capsOf) (bool, error) {
	t.Helper()
	return wantUsernsOfPod(t, mode, pinned, true, ann, edit, caps)
}

// wantUsernsOfPod is wantUsernsOf; sandbox: runc has the pod's sandbox
// container.
func wantUsernsOfPod(t *testing.T, mode config.Mode, pinned, sandbox bool, ann map[string]string, edit func(*specs.Spec), caps capsOf) (bool, error) {
	t.Helper()
	a := testApp(t, mode)
	if pinned {
		pinPod(t, a, "sb")
	}
	if sandbox {
		runcHas(t, a, "sb")
	}
	s := appSpec(ann)
	s.Linux.Namespaces[0].Path = ""
	if edit != nil {
		edit(s)
	}
	req, err := oci.ParseRequest(a.Inv.ID, ann)
	if err != nil {
		t.Fatal(err)
	}
	return a.wantUserns(s, req, caps)
}

// An app container follows its sandbox's verdict (the pod's pin), and a
// privileged container is left on the host's user namespace under mode
// always, refused where auto was asked for.
func TestWantUsernsFollowsSandbox(t *testing.T) {
	const pod = "sb"
	privCaps := func() (*specs.LinuxCapabilities, error) {
		return &specs.LinuxCapabilities{Bounding: []string{"CAP_NET_ADMIN", "CAP_SYS_ADMIN"}}, nil
	}
	badCaps := func() (*specs.LinuxCapabilities, error) { return nil, errors.New("process.capabilities: bad") }
	masked := func(s *specs.Spec) { s.Linux.MaskedPaths = []string{"/proc/kcore"} }
	join := func(s *specs.Spec) { s.Linux.Namespaces[0].Path = "container:t" }
	app := containerd(pod, "container")
	auto := func(m map[string]string) map[string]string {
		out := map[string]string{oci.AnnotationUserns: "auto"}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	cases := []struct {
		name    string
		mode    config.Mode
		pinned  bool
		sandbox bool // runc has the pod's sandbox container (not CRI-O's drop_infra_ctr)
		ann     map[string]string
		caps    capsOf
		edit    func(*specs.Spec)
		want    bool
		err     string
	}{
		{name: "always: app of a pooled pod joins", mode: config.ModeAlways, pinned: true, ann: app, caps: noCaps, want: true},
		{name: "always: app of a pod on the host's user namespace follows it", mode: config.ModeAlways, ann: app, caps: noCaps},
		{name: "always: CRI-O app of a pod on the host's follows it", mode: config.ModeAlways, sandbox: true, ann: crio(pod, "container"), caps: noCaps},
		{name: "always: first CRI-O app of a pod without a sandbox container decides for it", mode: config.ModeAlways, ann: crio(pod, "container"), caps: noCaps, want: true},
		{name: "always: later CRI-O app of a pooled pod without a sandbox container joins", mode: config.ModeAlways, pinned: true, ann: crio(pod, "container"), caps: noCaps, want: true},
		{name: "always: first CRI-O app without a sandbox container, privileged, stays on the host's", mode: config.ModeAlways, ann: crio(pod, "container"), caps: privCaps},
		{name: "always: containerd app of a pod whose sandbox runc does not have follows it", mode: config.ModeAlways, ann: app, caps: noCaps},
		{name: "annotation: CRI-O app without a sandbox container, on the host's network, is refused", mode: config.ModeAnnotation, ann: auto(crio(pod, "container")), caps: noCaps, edit: func(s *specs.Spec) {
			s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(ns specs.LinuxNamespace) bool { return ns.Type == specs.NetworkNamespace })
		}, err: "shares the host's [network] namespace"},
		{name: "always: container:<ID> join in a pooled pod", mode: config.ModeAlways, pinned: true, ann: app, caps: noCaps, edit: join, want: true},
		{name: "always: container:<ID> join in a pod on the host's", mode: config.ModeAlways, ann: app, caps: noCaps, edit: join},
		{name: "always: privileged app of a pooled pod stays on the host's", mode: config.ModeAlways, pinned: true, ann: app, caps: privCaps},
		{name: "always: CAP_SYS_ADMIN with masked paths is not privileged", mode: config.ModeAlways, pinned: true, ann: app, caps: privCaps, edit: masked, want: true},
		{name: "annotation: privileged app of a pooled pod is refused", mode: config.ModeAnnotation, pinned: true, ann: app, caps: privCaps, err: "is privileged, but its pod sb runs in a user namespace"},
		{name: "always: privileged app asking for auto is refused", mode: config.ModeAlways, pinned: true, ann: auto(app), caps: privCaps, err: "asks for runc-userns.io/userns=auto but is privileged"},
		{name: "always: privileged sandbox stays on the host's", mode: config.ModeAlways, ann: containerd(pod, "sandbox"), caps: privCaps},
		{name: "always: privileged standalone stays on the host's", mode: config.ModeAlways, caps: privCaps},
		{name: "always: standalone gets one", mode: config.ModeAlways, caps: noCaps, want: true},
		{name: "annotation: privileged standalone asking for auto is refused", mode: config.ModeAnnotation, ann: auto(nil), caps: privCaps, err: "is privileged"},
		{name: "annotation: unprivileged standalone asking for auto", mode: config.ModeAnnotation, ann: auto(nil), caps: noCaps, want: true},
		{name: "always: capabilities that do not decode", mode: config.ModeAlways, caps: badCaps, err: "process.capabilities: bad"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := wantUsernsOfPod(t, c.mode, c.pinned, c.sandbox, c.ann, c.edit, c.caps)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "container debug") {
					t.Fatalf("wantUserns = %v, %v; want an error with %q naming the container", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("wantUserns = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// The host's namespaces are recognised where /proc/1/ns cannot be read
// (root cannot on some machines): through the wrapper's own, which are
// the host's. A path to another namespace, or a private one, is not the
// host's; no entry at all is.
func TestHostNamespaces(t *testing.T) {
	private := specs.LinuxNamespace{Type: specs.PIDNamespace}
	ipc := specs.LinuxNamespace{Type: specs.IPCNamespace}
	cases := []struct {
		name string
		dirs []string
		nss  []specs.LinuxNamespace
		want []specs.LinuxNamespaceType
	}{
		{"no entries: all the host's", hostNSDirs, nil,
			[]specs.LinuxNamespaceType{specs.NetworkNamespace, specs.PIDNamespace, specs.IPCNamespace}},
		{"private ones", hostNSDirs, []specs.LinuxNamespace{{Type: specs.NetworkNamespace}, private, ipc}, nil},
		{"a path to the host's network namespace, /proc/1 unreadable", []string{t.TempDir(), "/proc/self/ns"},
			[]specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/proc/self/ns/net"}, private, ipc},
			[]specs.LinuxNamespaceType{specs.NetworkNamespace}},
		{"a path to a namespace of another type", []string{t.TempDir(), "/proc/self/ns"},
			[]specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/proc/self/ns/uts"}, private, ipc}, nil},
		{"a path that does not exist", hostNSDirs,
			[]specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/nonexistent/net"}, private, ipc}, nil},
		{"no readable reference at all", []string{t.TempDir()},
			[]specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/proc/self/ns/net"}, private, ipc}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := hostNamespaces(&specs.Spec{Linux: &specs.Linux{Namespaces: c.nss}}, c.dirs)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("hostNamespaces = %v, want %v", got, c.want)
			}
		})
	}
}
