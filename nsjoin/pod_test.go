package nsjoin

import "testing"

// TestSamePod covers every combination of joiner and target kinds, by
// the Pod the caller works out for each (the annotations of each kind, and
// how they become a Pod, are internal/create's to test: TestJoinPodSamePod).
func TestSamePod(t *testing.T) {
	var (
		standalone = Pod{}
		podA       = Pod{ID: "podA"} // its sandbox, and every app container of it, containerd's or CRI-O's
		podB       = Pod{ID: "podB"}
	)
	cases := []struct {
		name           string
		joiner, target Pod
		want           bool
	}{
		{"two standalone containers", standalone, standalone, true},
		{"members of one pod (an app and its sandbox, two apps, the sandbox and an app)", podA, podA, true},
		{"members of two pods", podA, podB, false},
		{"pod member joins a standalone container", podA, standalone, false},
		{"standalone container joins a pod member", standalone, podA, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SamePod(c.joiner, c.target); got != c.want {
				t.Errorf("SamePod(%+v, %+v) = %v, want %v", c.joiner, c.target, got, c.want)
			}
			if got := SamePod(c.target, c.joiner); got != c.want {
				t.Errorf("SamePod is not symmetric for %s", c.name)
			}
			if c.joiner.InPod() != (c.joiner.ID != "") {
				t.Errorf("InPod of %+v", c.joiner)
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
