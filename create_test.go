package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/nsjoin"
)

func containerd(sandbox, ctype string) map[string]string {
	return map[string]string{oci.CRISandboxID: sandbox, oci.CRIContainerType: ctype}
}

func crio(sandbox, ctype string) map[string]string {
	return map[string]string{oci.CRIOSandboxID: sandbox, oci.CRIOContainerType: ctype}
}

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

// TestJoinLookupState: what nsjoin is told of a target, read from runc's
// state.json and exec.fifo.
func TestJoinLookupState(t *testing.T) {
	root := t.TempDir()
	if _, err := (joinLookup{}).State(root, "nosuch"); !errors.Is(err, fs.ErrNotExist) {
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
	st, err := (joinLookup{}).State(root, "t")
	if err != nil || !reflect.DeepEqual(*st, want) {
		t.Fatalf("State = %+v, %v; want %+v", st, err, want)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "t", "exec.fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := (joinLookup{}).State(root, "t"); err != nil || !st.Created {
		t.Errorf("State with an exec.fifo = %+v, %v; want Created", st, err)
	}
}
