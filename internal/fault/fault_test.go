package fault

import "testing"

var steps = []string{Joined, Allocated, Pinned, Staged, Written, RuncStarted, Released}

// TestPointWithoutTag: in the production build, an armed switch at every
// step is ignored (the test would die or stop otherwise).
func TestPointWithoutTag(t *testing.T) {
	if Enabled {
		t.Skip("built with the tag faults: point_faults_linux_test.go covers this build")
	}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			t.Setenv(EnvKillAt, step)
			t.Setenv(EnvStopAt, step)
			Point(step)
		})
	}
}
