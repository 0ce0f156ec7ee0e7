package admin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/nsjoin"
	"github.com/runc-userns/runc-userns/pool"
)

// PoolHooks tells the pool in stateDir how to see the containers that use
// it (package pool imports nothing of ours): which members are alive, how
// to rebuild a lost state from their stamps, and what to release besides
// the range when it reclaims one. Every caller that opens the pool sets
// them (a create adds its Claim hook); warnings go to log.
func PoolHooks(stateDir string, log logrus.FieldLogger) pool.Hooks {
	lay := state.Layout(stateDir)
	return pool.Hooks{
		Alive: func(root, id string) bool { return memberAlive(lay, root, id) },
		Scan:  func(roots []string) ([]pool.Allocation, error) { return scanContainers(stateDir, roots) },
		Rebuilt: func(cause error, allocs []pool.Allocation) {
			log.Warnf("user namespace pool in %s rebuilt from the live containers' stamps and in-flight creates (%d ranges: %s): %v", stateDir, len(allocs), describeAllocs(allocs), cause)
		},
		Reclaimed: func(a pool.Allocation) error {
			pod := fmt.Sprintf("host IDs %d-%d of pod %s (runc root %s)", a.HostID, uint64(a.HostID)+uint64(a.Size)-1, a.Owner, a.Root)
			if err := releaseDeadPod(lay, a); err != nil {
				// Also when a full pool's Allocate goes on with
				// other ranges and this error reaches nobody else.
				log.Warnf("user namespace pool: %s stay taken: none of its containers %v exists any more, but removing what they left failed: %v (fix it, then run `runc-userns pool gc`)", pod, a.Members, err)
				return err
			}
			log.Warnf("user namespace pool: reclaimed %s: none of its containers %v exists any more", pod, a.Members)
			return nil
		},
	}
}

// releaseDeadPod removes what the containers of a reclaimed pod left, and
// the pod's pin. Each member's leftovers go under its in-flight marker's
// lock, the marker last: a create of the same ID that started after the
// reclaim found the member dead holds the marker, and what is named after
// the ID is that create's now (it cannot have a range yet: the reclaim
// holds the pool's lock).
func releaseDeadPod(lay state.Layout, a pool.Allocation) error {
	for _, m := range a.Members {
		marker, err := lay.LockIdleMarker(a.Root, m)
		if errors.Is(err, state.ErrMarkerBusy) {
			continue
		}
		if err != nil {
			return err
		}
		err = RemoveLeftovers(lay, a.Root, m)
		if err == nil {
			err = lay.RemoveInflight(a.Root, m)
		}
		marker.Close()
		if err != nil {
			return err
		}
	}
	return lay.UnpinPod(a.Owner)
}

// memberAlive: container id of runc root may still use its range. The
// in-flight marker is checked before runc's state (see package state).
func memberAlive(lay state.Layout, root, id string) bool {
	if state.InflightBusy(lay.Inflight(root, id)) {
		return true
	}
	st, err := runc.ReadState(root, id)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true // unreadable: never free a range on a guess
	}
	return state.ProcessAlive(st.InitPID, st.InitStart)
}

// scanContainers lists the ranges the live containers under roots hold,
// from the stamps on their specs (verified with this node's key: a pod
// author controls annotations), plus the claims of creates in flight.
func scanContainers(stateDir string, roots []string) ([]pool.Allocation, error) {
	key, err := oci.StampKey(stateDir, false)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []pool.Allocation
	for _, root := range roots {
		entries, err := os.ReadDir(root)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("runc root %s: %w", root, err)
		}
		for _, e := range entries {
			id := e.Name()
			if !e.IsDir() || oci.ValidateID(id) != nil {
				continue
			}
			st, err := runc.ReadState(root, id)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("container %s: %w", id, err)
			}
			// A container whose init is gone holds nothing (reclaim's rule,
			// memberAlive): one kept stopped for its logs may carry the
			// stamp of a range reclaimed and given to another pod since.
			if !state.ProcessAlive(st.InitPID, st.InitStart) && !state.InflightBusy(state.Layout(stateDir).Inflight(root, id)) {
				continue
			}
			v, ok := st.Annotation(oci.AnnotationStamp)
			if !ok || key == nil {
				continue
			}
			s, err := oci.DecodeStamp(v)
			if err != nil || s.Verify(key, oci.Binding{ID: id, Root: root}, false) != nil || s.Owner == "" || s.Size == 0 || filepath.Clean(s.StateDir) != filepath.Clean(stateDir) {
				continue
			}
			out = append(out, pool.Allocation{Owner: s.Owner, HostID: s.HostID, Size: s.Size, Root: filepath.Clean(s.Root), Members: []string{id}})
		}
	}
	claims, err := state.Layout(stateDir).BusyInflightClaims()
	if err != nil {
		return nil, err
	}
	return append(out, claims...), nil
}

func describeAllocs(allocs []pool.Allocation) string {
	if len(allocs) == 0 {
		return "none"
	}
	s := ""
	for i, a := range allocs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d+%d %v", a.Owner, a.HostID, a.Size, a.Members)
	}
	return s
}

// RemoveLeftovers removes what a container leaves besides its range, but
// for its in-flight marker (which callers remove last): its PID-join pins,
// staging mounts and directories. Idempotent: the delete of the container
// and the reclaim of its pod both call it.
func RemoveLeftovers(lay state.Layout, root, id string) error {
	// The pins nsjoin.Resolve made in the container directory, if
	// any; the directory itself goes with the staging.
	if err := nsjoin.Release(lay.ContainerDir(root, id)); err != nil {
		return err
	}
	return lay.RemoveStaged(root, id)
}

// PoolExists reports whether stateDir holds a pool's records (or an older
// release's pool.json, which the pool converts).
func PoolExists(stateDir string) bool {
	for _, name := range []string{pool.RecordDir, pool.StateFile} {
		if _, err := os.Lstat(filepath.Join(stateDir, name)); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}
