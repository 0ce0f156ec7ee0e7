package nsjoin

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

const (
	testPinDir  = "/run/runc-userns/containers/abc/debug"
	testPinBase = "/run/runc-userns/containers"
	// The wrapper's annotation keys, as main passes them (Keys).
	keyPIDNamespace = "runc-userns.io/pid-namespace"
	keyUserns       = "runc-userns.io/userns"
)

var testKeys = Keys{PIDNamespace: keyPIDNamespace, Userns: keyUserns}

// pidSpec is a spec whose pid namespace entry has path (nil: no entry).
func pidSpec(path *string) *specs.Spec {
	s := &specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.MountNamespace}}}}
	if path != nil {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: *path})
	}
	return s
}

func str(s string) *string { return &s }

func TestRef(t *testing.T) {
	ownPin := PIDNSPin(testPinDir)
	otherPin := PIDNSPin("/run/runc-userns/containers/def/debug-2")
	cases := []struct {
		name       string
		annotation string
		path       *string
		want       string
		wants      bool // Wanted
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
			if got := Wanted(s, c.annotation); got != c.wants {
				t.Errorf("Wanted = %v, want %v", got, c.wants)
			}
			r := &Request{PIDNamespace: c.annotation, Keys: testKeys, PinBase: testPinBase}
			got, err := r.ref(s, validID)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ref = %q, %v; want an error mentioning %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ref = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestWantedWithoutLinux(t *testing.T) {
	if Wanted(&specs.Spec{}, "") {
		t.Error("a spec without a linux section asks for a join")
	}
	if !Wanted(&specs.Spec{}, "container:t") {
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
	ownPin := UsernsPin(testPinDir)
	target := &Target{ID: "t", Userns: targetNS}
	user := func(path string) specs.LinuxNamespace {
		return specs.LinuxNamespace{Type: specs.UserNamespace, Path: path}
	}
	m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 3221225472, Size: 65536}}
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
			err := usernsConflict(c.spec, target, ourPin(testPinBase))
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

// appSpec is a container spec with its own network and PID namespaces.
func appSpec() *specs.Spec {
	return &specs.Spec{
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
			{Type: specs.PIDNamespace, Path: "container:t"}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace}, {Type: specs.MountNamespace},
		}},
	}
}

// planRequest is the Request of container "debug" with the given userns
// annotation and pool namespace.
func planRequest(userns UsernsChoice, poolUserns string, withMappings bool) *Request {
	return &Request{
		ID: "debug", Keys: testKeys, PinBase: testPinBase, Userns: userns, PoolUserns: poolUserns,
		Features: Features{WithMappings: withMappings, Sysfs: sysfsMod{}},
		Log:      testLog(),
	}
}

// TestPlanUserns: the joining container's user namespace is the target's,
// whichever way it gets it. Which user namespace the pool gives a
// container of each kind (by its annotations and the node's mode) is
// internal/create's to work out: TestJoinRequest there.
func TestPlanUserns(t *testing.T) {
	const mapText = "         0 3221225472      65536\n"
	podMap := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 3221225472, Size: 65536}}
	cases := []struct {
		name         string
		userns       UsernsChoice
		pool         bool   // the pool gives the container the pod's user namespace anyway
		targetUserns string // "pod" for the pod's pin, "own" for a pin of the join
		withMappings bool
		takes        bool
		usernsMod    bool // a user namespace modifier was added
		wantErr      string
	}{
		{name: "target in our user namespace", takes: true},
		{name: "target in our user namespace, mode always", pool: true, takes: true},
		{name: "auto, target in our user namespace", userns: UsernsAuto, pool: true, wantErr: "it asks for runc-userns.io/userns=auto, but container t runs in the host's user namespace"},
		{name: "pool pod, joiner without auto", targetUserns: "pod", withMappings: true, takes: true, usernsMod: true},
		{name: "pool pod, joiner without auto, runc >= 1.2", targetUserns: "pod", takes: true, usernsMod: true},
		{name: "pool pod, app with auto: the pool gives the same namespace", userns: UsernsAuto, pool: true, targetUserns: "pod"},
		{name: "pool pod, mode always: the pool gives the same namespace", pool: true, targetUserns: "pod"},
		{name: "pool pod, joiner asks for host", userns: UsernsHost, targetUserns: "pod", wantErr: "it asks for runc-userns.io/userns=host (no user namespace)"},
		{name: "standalone target with auto, standalone joiner with auto", userns: UsernsAuto, targetUserns: "own", withMappings: true, takes: true, usernsMod: true},
		{name: "sandbox with auto joins a pool target", userns: UsernsAuto, targetUserns: "pod", takes: true, usernsMod: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stateDir := t.TempDir()
			podPin := filepath.Join(stateDir, "pods", "p", "userns")
			s := appSpec()
			pinDir := filepath.Join(stateDir, "containers", "x", "debug")
			target := &Target{ID: "t", PID: 42, PIDNS: PIDNSPin(pinDir)}
			switch c.targetUserns {
			case "pod":
				target.Userns = podPin
			case "own":
				target.Userns = UsernsPin(pinDir)
			}
			if target.Userns != "" {
				target.UIDMap, target.GIDMap = []byte(mapText), []byte(mapText)
			}
			r := planRequest(c.userns, "", c.withMappings)
			r.PinBase = filepath.Join(stateDir, "containers")
			if c.pool {
				r.PoolUserns = podPin
			}
			j := &Join{target: target, pinDir: pinDir, takes: true, mods: []Modifier{PIDModifier{Path: target.PIDNS}}}
			err := j.planUserns(s, r, newHost())
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
			if j.Userns() != target.Userns {
				t.Errorf("Userns = %q, want %q", j.Userns(), target.Userns)
			}
			var want *usernsMod
			if c.usernsMod {
				want = &usernsMod{Path: target.Userns}
				if c.withMappings {
					want.UID, want.GID = podMap, podMap
				}
			}
			checkJoinEdits(t, j, s, want)
		})
	}
}

// checkJoinEdits checks the join's user namespace modifier (want, nil for
// none) and that its edits point the spec's PID namespace at the pin.
func checkJoinEdits(t *testing.T, j *Join, s *specs.Spec, want *usernsMod) {
	t.Helper()
	var um *usernsMod
	for _, m := range j.Modifiers() {
		if u, ok := m.(usernsMod); ok {
			um = &u
		}
	}
	if (um != nil) != (want != nil) {
		t.Fatalf("user namespace modifier: %v, want %v", um, want)
	}
	if um == nil {
		return
	}
	if !reflect.DeepEqual(*um, *want) {
		t.Errorf("user namespace modifier = %+v, want %+v", *um, *want)
	}
	for _, m := range j.Modifiers() {
		if err := m.Modify(s); err != nil {
			t.Fatal(err)
		}
	}
	if p, _ := pidNamespace(s); p != j.target.PIDNS {
		t.Errorf("pid namespace path = %q, want %q", p, j.target.PIDNS)
	}
}

func TestPlanUsernsRefusesUnreadableMaps(t *testing.T) {
	for name, maps := range map[string][2]string{
		"garbage":   {"x\n", "0 1 1\n"},
		"empty gid": {"0 1 1\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			target := &Target{ID: "t", Userns: "/pins/userns", UIDMap: []byte(maps[0]), GIDMap: []byte(maps[1])}
			j := &Join{target: target, pinDir: t.TempDir(), takes: true}
			if err := j.planUserns(appSpec(), planRequest(UsernsUnset, "", true), newHost()); err == nil {
				t.Fatal("planUserns accepted unusable maps")
			}
		})
	}
}

// TestPlanSysfs: a joiner of the target's user namespace and of a network
// namespace that one does not own gets a read-only bind of /sys, or is
// refused by a runtime that joins the user namespace first.
func TestPlanSysfs(t *testing.T) {
	target := &Target{ID: "t", Userns: "/pins/userns"}
	cases := []struct {
		name             string
		foreign          bool
		joinsUsernsFirst bool
		sysfs            bool
		wantErr          string
	}{
		{name: "the target's network namespace, or one it owns"},
		{name: "a CNI network namespace", foreign: true, sysfs: true},
		{name: "a CNI network namespace, runc < 1.3", foreign: true, joinsUsernsFirst: true, wantErr: "cannot join the PID namespace of container t: its user namespace /pins/userns must be joined too, and the network namespace /var/run/netns/cni-1 is not that namespace's, which runc 1.2.0 cannot enter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHost()
			h.foreign, h.netns = c.foreign, "/var/run/netns/cni-1"
			r := planRequest(UsernsUnset, "", false)
			r.Features.JoinsUsernsFirst, r.Features.Version = c.joinsUsernsFirst, "1.2.0"
			j := &Join{target: target, takes: true}
			err := j.planSysfs(appSpec(), r, h)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("planSysfs = %v, want an error mentioning %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(j.Modifiers()) == 1 && j.Modifiers()[0] == Modifier(sysfsMod{}); got != c.sysfs {
				t.Errorf("modifiers %v, want the sysfs one: %v", j.Modifiers(), c.sysfs)
			}
		})
	}
}

func TestOurPin(t *testing.T) {
	ours := ourPin("/run/runc-userns/containers")
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
