package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/pool"
)

// poolHooks tells the pool in stateDir how to see the containers that use
// it (package pool imports nothing of ours): which members are alive, how
// to rebuild a lost state from their stamps, and what to release besides
// the range when it reclaims one.
func poolHooks(stateDir string, log logrus.FieldLogger) pool.Hooks {
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
		err = removeLeftovers(lay, a.Root, m)
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
			if err != nil || s.Verify(key) != nil || s.Owner == "" || s.Size == 0 || filepath.Clean(s.StateDir) != filepath.Clean(stateDir) {
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

// markInflight has the pool record the claim in the container's in-flight
// marker, which the create holds from its start (creation.do).
func (c *creation) markInflight(p *pool.Pool) {
	f := c.marker
	h := poolHooks(c.cfg.StateDir, c.log)
	h.Claim = func(a pool.Allocation, member string) error {
		if member != c.id {
			return nil
		}
		return state.WriteInflight(f.Name(), state.InflightRecord{Owner: a.Owner, HostID: a.HostID, Size: a.Size, Root: a.Root, Member: member})
	}
	p.SetHooks(h)
}
