package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/nsjoin"
)

const testPinDir = "/run/runc-userns/containers/abc/debug"

// pidSpec is a spec whose pid namespace entry has path (nil: no entry).
func pidSpec(path *string) *specs.Spec {
	s := &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.MountNamespace}}}}
	if path != nil {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: *path})
	}
	return s
}

func str(s string) *string { return &s }

func TestPIDJoinRef(t *testing.T) {
	ownPin := nsjoin.PIDNSPin(testPinDir)
	otherPin := nsjoin.PIDNSPin("/run/runc-userns/containers/def/debug-2")
	cases := []struct {
		name       string
		annotation string
		path       *string
		want       string
		wants      bool // wantsPIDJoin
		wantErr    string
	}{
		{name: "nothing", path: str("")},
		{name: "no pid entry, no annotation", path: nil},
		{name: "containerd TARGET mode path", path: str("/proc/42/ns/pid")},
		{name: "reference in the spec", path: str("container:t"), want: "t", wants: true},
		{name: "annotation, new PID namespace in the spec", annotation: "container:t", path: str(""), want: "t", wants: true},
		{name: "annotation with blanks", annotation: " container:t ", path: str(""), want: "t", wants: true},
		{name: "annotation and the same reference", annotation: "container:t", path: str("container:t"), want: "t", wants: true},
		{name: "annotation and the pin of an earlier create", annotation: "container:t", path: str(ownPin), want: "t", wants: true},
		{name: "annotation and the pin of a create under another ID", annotation: "container:t", path: str(otherPin), want: "t", wants: true},
		{name: "annotation and a file next to our pins", annotation: "container:t", path: str("/run/runc-userns/containers/abc/debug/rootfs"), wants: true, wantErr: "already joins the PID namespace"},
		{name: "annotation and another reference", annotation: "container:t", path: str("container:u"), wants: true, wantErr: `runc-userns.io/pid-namespace=container:t but the spec's pid namespace path is "container:u"`},
		{name: "annotation and a real path", annotation: "container:t", path: str("/proc/42/ns/pid"), wants: true, wantErr: `but the spec already joins the PID namespace at "/proc/42/ns/pid"`},
		{name: "annotation and the host's PID namespace", annotation: "container:t", path: nil, wants: true, wantErr: "but the spec shares the host's PID namespace"},
		{name: "malformed annotation", annotation: "t", path: str(""), wants: true, wantErr: "runc-userns.io/pid-namespace: invalid PID namespace reference"},
		{name: "malformed reference in the spec", path: str("container:../x"), wants: true, wantErr: "linux.namespaces pid path: invalid PID namespace reference"},
		{name: "capitalised reference in the spec", path: str("Container:x"), wants: true, wantErr: "in lower case"},
		{name: "empty reference in the spec", path: str("container:"), wants: true, wantErr: "must not be empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := pidSpec(c.path)
			req := oci.Request{PIDNamespace: c.annotation}
			if got := wantsPIDJoin(s, req); got != c.wants {
				t.Errorf("wantsPIDJoin = %v, want %v", got, c.wants)
			}
			got, err := pidJoinRef(s, req, ourPin("/run/runc-userns"))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("pidJoinRef = %q, %v; want an error mentioning %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("pidJoinRef = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestWantsPIDJoinWithoutLinux(t *testing.T) {
	if wantsPIDJoin(&specs.Spec{}, oci.Request{}) {
		t.Error("a spec without a linux section asks for a join")
	}
	if !wantsPIDJoin(&specs.Spec{}, oci.Request{PIDNamespace: "container:t"}) {
		t.Error("the annotation alone does not ask for a join")
	}
}

func TestUsernsConflict(t *testing.T) {
	dir := t.TempDir()
	targetNS := filepath.Join(dir, "target-userns")
	alias := filepath.Join(dir, "alias")
	other := filepath.Join(dir, "other")
	for _, p := range []string{targetNS, other} {
		if err := os.WriteFile(p, nil, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(targetNS, alias); err != nil {
		t.Fatal(err)
	}
	ownPin := nsjoin.UsernsPin(testPinDir)
	target := &nsjoin.Target{ID: "t", Userns: targetNS}
	user := func(path string) specs.LinuxNamespace {
		return specs.LinuxNamespace{Type: specs.UserNamespace, Path: path}
	}
	m := libuserns.PodMappings(3221225472, 65536)
	cases := []struct {
		name    string
		spec    *specs.Spec
		wantErr string
	}{
		{name: "no linux section", spec: &specs.Spec{}},
		{name: "no user namespace", spec: &specs.Spec{Linux: &specs.Linux{}}},
		{name: "the target's", spec: &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{user(targetNS)}, UIDMappings: m, GIDMappings: m}}},
		{name: "the target's by another name", spec: &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{user(alias)}}}},
		{name: "the pin of an earlier create", spec: &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{user(ownPin)}, UIDMappings: m, GIDMappings: m}}},
		{name: "a new one", spec: &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{user("")}, UIDMappings: m, GIDMappings: m}}, wantErr: "its spec asks for a new user namespace, but container t runs in user namespace " + targetNS},
		{name: "another one", spec: &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{user(other)}}}, wantErr: "its spec joins user namespace " + other},
		{name: "a missing one", spec: &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{user("/nonexistent")}}}, wantErr: "its spec joins user namespace /nonexistent"},
		{name: "mappings without an entry", spec: &specs.Spec{Linux: &specs.Linux{UIDMappings: m}}, wantErr: "its spec has uid/gid mappings"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := usernsConflict(c.spec, target, ourPin("/run/runc-userns"))
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("usernsConflict = %v, want an error mentioning %q", err, c.wantErr)
			}
		})
	}
}

// testApp is an app for container "debug" with the given userns mode.
func testApp(t *testing.T, mode config.Mode) *app {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return &app{
		inv: &oci.Invocation{ID: "debug", Command: "create"},
		cfg: &config.Config{StateDir: t.TempDir(), Userns: config.Userns{Mode: mode}},
		log: log,
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

// TestPlanUserns: the joining container's user namespace is the target's,
// whichever way it gets it.
func TestPlanUserns(t *testing.T) {
	const mapText = "         0 3221225472      65536\n"
	podMap := libuserns.PodMappings(3221225472, 65536)
	appOf := func(pod string) map[string]string {
		return map[string]string{oci.CRISandboxID: pod, oci.CRIContainerType: "container"}
	}
	withAuto := func(m map[string]string) map[string]string {
		m[oci.AnnotationUserns] = "auto"
		return m
	}
	cases := []struct {
		name         string
		mode         config.Mode
		ann          map[string]string
		targetUserns string // "pod" for the pod's pin under the app's state dir, "own" for a pin of the join
		withMappings bool
		takes        bool
		userns       bool // a user namespace modifier was added
		wantErr      string
	}{
		{name: "target in our user namespace", ann: appOf("p"), takes: true},
		{name: "target in our user namespace, mode always", mode: config.ModeAlways, ann: appOf("p"), takes: true},
		{name: "auto, target in our user namespace", ann: withAuto(appOf("p")), wantErr: "it asks for runc-userns.io/userns=auto, but container t runs in the host's user namespace"},
		{name: "pool pod, joiner without auto", ann: appOf("p"), targetUserns: "pod", withMappings: true, takes: true, userns: true},
		{name: "pool pod, joiner without auto, runc >= 1.2", ann: appOf("p"), targetUserns: "pod", takes: true, userns: true},
		{name: "pool pod, app with auto: the pool gives the same namespace", ann: withAuto(appOf("p")), targetUserns: "pod"},
		{name: "pool pod, mode always: the pool gives the same namespace", mode: config.ModeAlways, ann: appOf("p"), targetUserns: "pod"},
		{name: "pool pod, joiner asks for host", ann: map[string]string{oci.AnnotationUserns: "host"}, targetUserns: "pod", wantErr: "it asks for runc-userns.io/userns=host (no user namespace)"},
		{name: "standalone target with auto, standalone joiner with auto", ann: withAuto(map[string]string{}), targetUserns: "own", withMappings: true, takes: true, userns: true},
		{name: "sandbox with auto joins a pool target", ann: withAuto(map[string]string{oci.CRISandboxID: "p", oci.CRIContainerType: "sandbox"}), targetUserns: "pod", takes: true, userns: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := testApp(t, c.mode)
			s := appSpec(c.ann)
			req, err := oci.ParseRequest("debug", s.Annotations)
			if err != nil {
				t.Fatal(err)
			}
			pinDir := filepath.Join(a.cfg.StateDir, "containers", "x", "debug")
			target := &nsjoin.Target{ID: "t", PID: 42, PIDNS: nsjoin.PIDNSPin(pinDir)}
			switch c.targetUserns {
			case "pod":
				target.Userns = state.Layout(a.cfg.StateDir).Pin("p")
			case "own":
				target.Userns = nsjoin.UsernsPin(pinDir)
			}
			if target.Userns != "" {
				target.UIDMap, target.GIDMap = []byte(mapText), []byte(mapText)
			}
			j := &pidJoin{target: target, pinDir: pinDir, takes: true, mods: []modifier{nsjoin.PIDModifier{Path: target.PIDNS}}}
			err = j.planUserns(a, s, req, c.withMappings)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "cannot join the PID namespace of container t") {
					t.Fatalf("planUserns = %v, want an error mentioning %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if j.TakesUserns() != c.takes {
				t.Errorf("TakesUserns = %v, want %v", j.TakesUserns(), c.takes)
			}
			var um *libuserns.Modifier
			for _, m := range j.Modifiers() {
				if u, ok := m.(libuserns.Modifier); ok {
					um = &u
				}
			}
			if (um != nil) != c.userns {
				t.Fatalf("user namespace modifier: %v, want %v", um, c.userns)
			}
			if um == nil {
				return
			}
			want := libuserns.Modifier{Path: target.Userns}
			if c.withMappings {
				want.UID, want.GID = podMap, podMap
			}
			if !reflect.DeepEqual(*um, want) {
				t.Errorf("user namespace modifier = %+v, want %+v", *um, want)
			}
			for _, m := range j.Modifiers() {
				if err := m.Modify(s); err != nil {
					t.Fatal(err)
				}
			}
			if p, _ := pidNamespace(s); p != target.PIDNS {
				t.Errorf("pid namespace path = %q, want %q", p, target.PIDNS)
			}
		})
	}
}

func TestPlanUsernsRefusesUnreadableMaps(t *testing.T) {
	a := testApp(t, config.ModeAnnotation)
	for name, maps := range map[string][2]string{
		"garbage":   {"x\n", "0 1 1\n"},
		"empty gid": {"0 1 1\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			target := &nsjoin.Target{ID: "t", Userns: "/pins/userns", UIDMap: []byte(maps[0]), GIDMap: []byte(maps[1])}
			j := &pidJoin{target: target, pinDir: t.TempDir(), takes: true}
			if err := j.planUserns(a, appSpec(nil), oci.Request{}, true); err == nil {
				t.Fatal("planUserns accepted unusable maps")
			}
		})
	}
}

func TestReleasePIDJoinIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	if err := releasePIDJoin(filepath.Join(dir, "never")); err != nil {
		t.Errorf("releasePIDJoin of nothing: %v", err)
	}
	if err := os.WriteFile(nsjoin.PIDNSPin(dir), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := releasePIDJoin(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(nsjoin.PIDNSPin(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pin file left: %v", err)
	}
}

func TestResolvePIDJoinWithoutReference(t *testing.T) {
	a := testApp(t, config.ModeAnnotation)
	j, err := a.resolvePIDJoin(pidSpec(str("/proc/42/ns/pid")), oci.Request{}, "/run/runc", testPinDir, true)
	if j != nil || err != nil {
		t.Errorf("resolvePIDJoin = %v, %v; want nil, nil", j, err)
	}
	_, err = a.resolvePIDJoin(pidSpec(str("container:debug")), oci.Request{}, t.TempDir(), testPinDir, true)
	if !errors.Is(err, nsjoin.ErrSelf) {
		t.Errorf("resolvePIDJoin of itself = %v, want nsjoin.ErrSelf", err)
	}
}

func TestPodUsernsPins(t *testing.T) {
	a := testApp(t, config.ModeAnnotation)
	lay := state.Layout(a.cfg.StateDir)
	cases := []struct {
		name string
		id   string
		ann  map[string]string
		want []string
	}{
		{"app container", "c1", map[string]string{oci.CRISandboxID: "p", oci.CRIContainerType: "container"}, []string{lay.Pin("p")}},
		{"sandbox", "p", map[string]string{oci.CRISandboxID: "p", oci.CRIContainerType: "sandbox"}, []string{lay.Pin("p")}},
		{"standalone", "solo", nil, []string{lay.Pin("solo")}},
		{"invalid sandbox ID", "c1", map[string]string{oci.CRISandboxID: "../p", oci.CRIContainerType: "container"}, nil},
		{"forged stamp is ignored", "c1", map[string]string{oci.CRISandboxID: "p", oci.CRIContainerType: "container", oci.AnnotationStamp: `{"v":1,"usernsPath":"/forged","mac":"00"}`}, []string{lay.Pin("p")}},
	}
	key, err := oci.StampKey(a.cfg.StateDir, true)
	if err != nil {
		t.Fatal(err)
	}
	signed := &oci.Stamp{Version: 1, Owner: "p", StateDir: "/old/state", UsernsPath: "/old/state/pods/p/userns"}
	signed.Sign(key)
	cases = append(cases, struct {
		name string
		id   string
		ann  map[string]string
		want []string
	}{"stamp of this node", "c1", map[string]string{oci.CRISandboxID: "p", oci.CRIContainerType: "container", oci.AnnotationStamp: signed.Encode()}, []string{lay.Pin("p"), "/old/state/pods/p/userns"}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := a.podUsernsPins(c.id, c.ann); !reflect.DeepEqual(got, c.want) {
				t.Errorf("podUsernsPins = %q, want %q", got, c.want)
			}
		})
	}
}

func TestOurPin(t *testing.T) {
	ours := ourPin("/run/runc-userns")
	for p, want := range map[string]bool{
		"/run/runc-userns/containers/abc/debug/pidns":         true,
		"/run/runc-userns/containers/abc/debug/userns":        true,
		"/run/runc-userns/containers/def/other/pidns":         true,
		"/run/runc-userns/containers/abc/debug/rootfs":        false,
		"/run/runc-userns/containers/abc/pidns":               false,
		"/run/runc-userns/containers/abc/debug/x/pidns":       false,
		"/run/runc-userns/pods/p/userns":                      false,
		"/run/runc-userns/containers/../containers/a/b/pidns": false,
		"/run/runc-userns/containers/abc/../debug/pidns":      false,
		"/proc/42/ns/pid":            false,
		"containers/abc/debug/pidns": false,
		"":                           false,
	} {
		if got := ours(p); got != want {
			t.Errorf("ourPin(%q) = %v, want %v", p, got, want)
		}
	}
}
