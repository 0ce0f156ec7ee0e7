package nsjoin

import (
	"testing"

	"github.com/runc-userns/runc-userns/internal/oci"
)

func containerd(sandbox, ctype string) map[string]string {
	return map[string]string{oci.CRISandboxID: sandbox, oci.CRIContainerType: ctype}
}

func crio(sandbox, ctype string) map[string]string {
	return map[string]string{oci.CRIOSandboxID: sandbox, oci.CRIOContainerType: ctype}
}

func TestPodOf(t *testing.T) {
	cases := []struct {
		name string
		id   string
		ann  map[string]string
		want Pod
	}{
		{"no annotations", "c1", nil, Pod{}},
		{"other annotations only", "c1", map[string]string{"io.kubernetes.pod.name": "x"}, Pod{}},
		{"containerd sandbox", "sb", containerd("sb", "sandbox"), Pod{ID: "sb"}},
		{"containerd sandbox without its ID", "sb", map[string]string{oci.CRIContainerType: "sandbox"}, Pod{ID: "sb"}},
		{"containerd container", "c1", containerd("sb", "container"), Pod{ID: "sb"}},
		{"containerd container without a type", "c1", map[string]string{oci.CRISandboxID: "sb"}, Pod{ID: "sb"}},
		{"containerd type without a sandbox ID", "c1", map[string]string{oci.CRIContainerType: "container"}, Pod{ID: "c1"}},
		{"CRI-O sandbox", "sb", crio("sb", "sandbox"), Pod{ID: "sb"}},
		{"CRI-O container", "c1", crio("sb", "container"), Pod{ID: "sb"}},
		{"containerd wins over CRI-O", "c1", map[string]string{oci.CRISandboxID: "a", oci.CRIContainerType: "container", oci.CRIOSandboxID: "b", oci.CRIOContainerType: "container"}, Pod{ID: "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PodOf(c.id, c.ann); got != c.want {
				t.Errorf("PodOf(%s, %v) = %+v, want %+v", c.id, c.ann, got, c.want)
			}
			if got := PodOf(c.id, c.ann).InPod(); got != (c.want.ID != "") {
				t.Errorf("InPod = %v", got)
			}
		})
	}
}

// TestSamePod covers every combination of joiner and target kinds.
func TestSamePod(t *testing.T) {
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
			j, tg := PodOf(c.joiner.id, c.joiner.ann), PodOf(c.target.id, c.target.ann)
			if got := SamePod(j, tg); got != c.want {
				t.Errorf("SamePod(%+v, %+v) = %v, want %v", j, tg, got, c.want)
			}
			if got := SamePod(tg, j); got != c.want {
				t.Errorf("SamePod is not symmetric for %s", c.name)
			}
		})
	}
}

func TestPodMismatch(t *testing.T) {
	cases := []struct {
		j, t Pod
		want string
	}{
		{Pod{ID: "p1"}, Pod{ID: "p2"}, "container j is in pod p1 and container t in pod p2"},
		{Pod{ID: "p1"}, Pod{}, "container j is in pod p1 but container t belongs to no pod"},
		{Pod{}, Pod{ID: "p2"}, "container j belongs to no pod but container t is in pod p2"},
	}
	for _, c := range cases {
		if got := podMismatch("j", c.j, "t", c.t); got != c.want {
			t.Errorf("podMismatch = %q, want %q", got, c.want)
		}
	}
}
