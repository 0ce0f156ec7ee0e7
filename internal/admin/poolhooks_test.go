package admin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/nsjoin"
	"github.com/runc-userns/runc-userns/pool"
)

// A reclaim cleans a dead member's leftovers and marker under the marker's
// lock; a member whose marker someone holds (a create of the same ID that
// started after the reclaim found it dead) keeps both: they are that
// create's.
func TestReleaseDeadPod(t *testing.T) {
	lay, root := state.Layout(t.TempDir()), t.TempDir()
	// runc keeps "kept" stopped
	if err := os.MkdirAll(filepath.Join(root, "kept"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "kept", "state.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"idle", "busy", "kept", "nomarker"} {
		if err := os.MkdirAll(lay.ContainerDir(root, id), 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(lay.InflightDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"idle", "kept"} {
		if err := os.WriteFile(lay.Inflight(root, id), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	busy, err := lay.AcquireInflight(root, "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	a := pool.Allocation{Owner: "pod", HostID: 1 << 30, Size: 65536, Root: root, Members: []string{"idle", "busy", "kept", "nomarker"}}
	if err := releaseDeadPod(lay, a); err != nil {
		t.Fatal(err)
	}
	for id, kept := range map[string]bool{"idle": false, "busy": true, "kept": false, "nomarker": false} {
		_, err := os.Lstat(lay.ContainerDir(root, id))
		if got := err == nil; got != kept {
			t.Errorf("container dir of %s kept: %v, want %v", id, got, kept)
		}
		_, err = os.Lstat(lay.Inflight(root, id))
		if got := err == nil; got != kept {
			t.Errorf("marker of %s kept: %v, want %v", id, got, kept)
		}
	}
	if !state.StillNamed(busy) || !state.InflightBusy(busy.Name()) {
		t.Error("the busy create's marker is no longer the one it holds")
	}
}

// RemoveLeftovers drops the PID-join pins a create made in the container
// directory (a delete of a create killed before its cleanup), and is
// idempotent: nothing to remove is fine.
func TestRemoveLeftoversIsIdempotent(t *testing.T) {
	lay, root := state.Layout(t.TempDir()), t.TempDir()
	if err := RemoveLeftovers(lay, root, "never"); err != nil {
		t.Errorf("RemoveLeftovers of nothing: %v", err)
	}
	dir := lay.ContainerDir(root, "joined")
	if err := os.MkdirAll(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nsjoin.PIDNSPin(dir), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := RemoveLeftovers(lay, root, "joined"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(nsjoin.PIDNSPin(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pin file left: %v", err)
	}
	if err := RemoveLeftovers(lay, root, "joined"); err != nil {
		t.Errorf("RemoveLeftovers again: %v", err)
	}
}
