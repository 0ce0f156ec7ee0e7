package create

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/netns"
	"github.com/runc-userns/runc-userns/nsjoin"
)

// TestJoinPod: the pod nsjoin is told a container belongs to, from its
// annotations by oci.PodOf's rules.
func TestJoinPod(t *testing.T) {
	cases := []struct {
		name string
		id   string
		ann  map[string]string
		want nsjoin.Pod
	}{
		{"no annotations", "c1", nil, nsjoin.Pod{}},
		{"other annotations only", "c1", map[string]string{"io.kubernetes.pod.name": "x"}, nsjoin.Pod{}},
		{"containerd sandbox", "sb", containerd("sb", "sandbox"), nsjoin.Pod{ID: "sb"}},
		{"containerd sandbox without its ID", "sb", map[string]string{oci.CRIContainerType: "sandbox"}, nsjoin.Pod{ID: "sb"}},
		{"containerd container", "c1", containerd("sb", "container"), nsjoin.Pod{ID: "sb"}},
		{"containerd container without a type", "c1", map[string]string{oci.CRISandboxID: "sb"}, nsjoin.Pod{ID: "sb"}},
		{"containerd type without a sandbox ID", "c1", map[string]string{oci.CRIContainerType: "container"}, nsjoin.Pod{ID: "c1"}},
		{"CRI-O sandbox", "sb", crio("sb", "sandbox"), nsjoin.Pod{ID: "sb"}},
		{"CRI-O container", "c1", crio("sb", "container"), nsjoin.Pod{ID: "sb"}},
		{"containerd wins over CRI-O", "c1", map[string]string{oci.CRISandboxID: "a", oci.CRIContainerType: "container", oci.CRIOSandboxID: "b", oci.CRIOContainerType: "container"}, nsjoin.Pod{ID: "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := joinPod(oci.PodOf(c.id, c.ann)); got != c.want {
				t.Errorf("joinPod(PodOf(%s, %v)) = %+v, want %+v", c.id, c.ann, got, c.want)
			}
			if got := joinPod(oci.PodOf(c.id, c.ann)).InPod(); got != (c.want.ID != "") {
				t.Errorf("InPod = %v", got)
			}
		})
	}
}

// TestJoinPodSamePod covers every combination of joiner and target kinds,
// from their annotations to nsjoin.SamePod.
func TestJoinPodSamePod(t *testing.T) {
	type side struct {
		id  string
		ann map[string]string
	}
	var (
		standalone  = side{"solo", nil}
		standalone2 = side{"solo2", nil}
		sandboxA    = side{"podA", containerd("podA", "sandbox")}
		appA        = side{"a1", containerd("podA", "container")}
		appA2       = side{"a2", containerd("podA", "container")}
		crioAppA    = side{"a3", crio("podA", "container")}
		sandboxB    = side{"podB", containerd("podB", "sandbox")}
		appB        = side{"b1", containerd("podB", "container")}
		crioAppB    = side{"b2", crio("podB", "container")}
	)
	cases := []struct {
		name           string
		joiner, target side
		want           bool
	}{
		{"two standalone containers", standalone, standalone2, true},
		{"app container joins its sandbox (dockershim)", appA, sandboxA, true},
		{"app container joins another of its pod", appA, appA2, true},
		{"sandbox joins an app container of its pod", sandboxA, appA, true},
		{"CRI-O app joins a containerd-annotated sandbox of the same ID", crioAppA, sandboxA, true},
		{"CRI-O apps of one pod", crioAppA, appA2, true},
		{"app container joins another pod's sandbox", appA, sandboxB, false},
		{"app container joins another pod's app", appA, appB, false},
		{"CRI-O apps of two pods", crioAppA, crioAppB, false},
		{"sandbox joins another sandbox", sandboxA, sandboxB, false},
		{"pod member joins a standalone container", appA, standalone, false},
		{"sandbox joins a standalone container", sandboxA, standalone, false},
		{"standalone container joins a pod member", standalone, appA, false},
		{"standalone container joins a sandbox", standalone, sandboxA, false},
		{"standalone container named like a pod joins its sandbox", side{"podA", nil}, appA, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, tg := joinPod(oci.PodOf(c.joiner.id, c.joiner.ann)), joinPod(oci.PodOf(c.target.id, c.target.ann))
			if got := nsjoin.SamePod(j, tg); got != c.want {
				t.Errorf("SamePod(%+v, %+v) = %v, want %v", j, tg, got, c.want)
			}
			if got := nsjoin.SamePod(tg, j); got != c.want {
				t.Errorf("SamePod is not symmetric for %s", c.name)
			}
		})
	}
}

// TestJoinHostState: what nsjoin is told of a target, read from runc's
// state.json and exec.fifo.
func TestJoinHostState(t *testing.T) {
	root := t.TempDir()
	if _, err := (joinHost{}).State(root, "nosuch"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("State of a container runc does not have: %v, want fs.ErrNotExist", err)
	}
	const state = `{"init_process_pid": 42, "init_process_start": 4711, "config": {
		"labels": ["bundle=/bundles/t", "io.kubernetes.cri.sandbox-id=pod", "io.kubernetes.cri.container-type=container"],
		"namespaces": [{"type": "NEWNS"}, {"type": "NEWPID"}],
		"cgroups": {"path": "/kubepods/pod1/t"}}}`
	if err := os.MkdirAll(filepath.Join(root, "t"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "t", "state.json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	want := nsjoin.State{
		InitPID:      42,
		InitStart:    4711,
		Annotations:  map[string]string{"bundle": "/bundles/t", oci.CRISandboxID: "pod", oci.CRIContainerType: "container"},
		Pod:          nsjoin.Pod{ID: "pod"},
		Cgroup:       "/kubepods/pod1",
		PIDNamespace: true,
	}
	st, err := (joinHost{}).State(root, "t")
	if err != nil || !reflect.DeepEqual(*st, want) {
		t.Fatalf("State = %+v, %v; want %+v", st, err, want)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "t", "exec.fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := (joinHost{}).State(root, "t"); err != nil || !st.Created {
		t.Errorf("State with an exec.fifo = %+v, %v; want Created", st, err)
	}
}

func TestJoinHostUsernsPins(t *testing.T) {
	a := testApp(t, config.ModeAnnotation)
	lay := state.Layout(a.Cfg.StateDir)
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
	key, err := oci.StampKey(a.Cfg.StateDir, true)
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
			if got := (joinHost{a}).UsernsPins(c.id, c.ann); !reflect.DeepEqual(got, c.want) {
				t.Errorf("UsernsPins = %q, want %q", got, c.want)
			}
		})
	}
}

// TestJoinRequest: what nsjoin is told of a create: above all the user
// namespace the pool gives the container anyway (the pod's pin for an app
// container of a pool pod that gets one, by annotation or the node's
// mode), which nsjoin compares with the target's (TestPlanUserns there).
func TestJoinRequest(t *testing.T) {
	appOf := func(pod string) map[string]string {
		return map[string]string{oci.CRISandboxID: pod, oci.CRIContainerType: "container"}
	}
	withAuto := func(m map[string]string) map[string]string {
		m[oci.AnnotationUserns] = "auto"
		return m
	}
	cases := []struct {
		name   string
		mode   config.Mode
		ann    map[string]string
		pinned bool // pod p has a pin
		pool   bool // PoolUserns is the pod's pin
		userns nsjoin.UsernsChoice
	}{
		{name: "app of a pod", ann: appOf("p")},
		{name: "app of a pod on the host's user namespace, mode always: follows it", mode: config.ModeAlways, ann: appOf("p")},
		{name: "app of a pooled pod, mode always", mode: config.ModeAlways, ann: appOf("p"), pinned: true, pool: true},
		{name: "app with auto", ann: withAuto(appOf("p")), pool: true, userns: nsjoin.UsernsAuto},
		{name: "asks for host", ann: map[string]string{oci.AnnotationUserns: "host"}, userns: nsjoin.UsernsHost},
		{name: "standalone with auto: a new one", ann: withAuto(map[string]string{}), userns: nsjoin.UsernsAuto},
		{name: "sandbox with auto: a new one", ann: withAuto(map[string]string{oci.CRISandboxID: "p", oci.CRIContainerType: "sandbox"}), userns: nsjoin.UsernsAuto},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := testApp(t, c.mode)
			if c.pinned {
				pinPod(t, a, "p")
			}
			s := appSpec(c.ann)
			req, err := oci.ParseRequest("debug", s.Annotations)
			if err != nil {
				t.Fatal(err)
			}
			want, err := a.wantUserns(s, req, noCaps)
			if err != nil {
				t.Fatal(err)
			}
			cr := &creation{Call: a, id: "debug", req: req, want: want, root: "/run/runc", lay: state.Layout(a.Cfg.StateDir)}
			r := cr.joinRequest(s, &runc.Features{NativeIdmap: true, JoinsUsernsFirst: true, Version: "1.1.0"})
			wantPool := ""
			if c.pool {
				wantPool = state.Layout(a.Cfg.StateDir).Pin("p")
			}
			if r.PoolUserns != wantPool || r.Userns != c.userns {
				t.Errorf("PoolUserns, Userns = %q, %v; want %q, %v", r.PoolUserns, r.Userns, wantPool, c.userns)
			}
			if r.ID != "debug" || r.Root != "/run/runc" || r.PinDir != cr.lay.ContainerDir("/run/runc", "debug") || r.PinBase != filepath.Join(a.Cfg.StateDir, "containers") {
				t.Errorf("request names %+v", r)
			}
			if r.Keys != (nsjoin.Keys{PIDNamespace: oci.AnnotationPIDNamespace, Userns: oci.AnnotationUserns}) || r.PodIdentity != nil || r.Pod != joinPod(req.Pod) {
				t.Errorf("request keys and pod %+v", r)
			}
			if f := r.Features; f.WithMappings || !f.JoinsUsernsFirst || f.Version != "1.1.0" || f.Sysfs != (netns.SysfsModifier{Native: true}) {
				t.Errorf("features %+v", f)
			}
		})
	}
}

// TestJoinHostValidatesLikeOCI: nsjoin refuses a reference by the ID rule
// main passes, oci.ValidateID, in its words.
func TestJoinHostValidatesLikeOCI(t *testing.T) {
	for ref, want := range map[string]string{
		"container:":     "must not be empty",
		"container:../x": "byte '/' is not allowed",
	} {
		if _, _, err := nsjoin.ParseRef(ref, joinHost{}.ValidateID); err == nil || !errors.Is(err, nsjoin.ErrBadRef) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRef(%q) = %v, want ErrBadRef saying %q", ref, err, want)
		}
	}
}
