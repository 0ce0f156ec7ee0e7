package pool

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// File names under the state directory (RecordDir and RootsFile too).
const (
	LockFile = "pool.lock"
	// StateFile is where releases before RecordDir kept every allocation
	// (version 1). It is read until the first call that takes the
	// exclusive lock converts it to RecordDir; only those older releases
	// write it (after a downgrade).
	StateFile = "pool.json"
)

// stateVersion is the version of the state file this package reads (and
// encodes to check a rebuild's records).
const stateVersion = 1

// Allocation is one owner's (one pod's) range.
type Allocation struct {
	Owner     string    `json:"owner"`
	HostID    uint32    `json:"hostID"`
	Size      uint32    `json:"size"`
	Root      string    `json:"root"`              // runc --root of the owner
	Allocated time.Time `json:"allocated"`         // RFC 3339
	Members   []string  `json:"members,omitempty"` // container IDs using the range
}

// Range is the allocation's host IDs.
func (a Allocation) Range() Range { return Range{HostID: a.HostID, Size: a.Size} }

func (a Allocation) clone() Allocation {
	a.Members = slices.Clone(a.Members)
	return a
}

// state is the content of StateFile.
type state struct {
	Version     int          `json:"version"`
	SlotSize    uint32       `json:"slotSize"`
	Allocations []Allocation `json:"allocations"`
}

// parseState decodes a state file and checks the invariants that need no
// configuration: a known version, one record per owner, every record one
// slot of the file's slot size, inside the ID space, and no two records
// sharing a host ID. Whether the records are slots of the current ranges is
// rebuild's business. The records come back sorted by host ID.
func parseState(data []byte) (*state, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var st state
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptState, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrCorruptState)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("%w: version %d, this runc-userns reads version %d (was it written by another release?)", ErrCorruptState, st.Version, stateVersion)
	}
	if st.SlotSize == 0 && len(st.Allocations) > 0 {
		return nil, fmt.Errorf("%w: slotSize 0 with %d allocations", ErrCorruptState, len(st.Allocations))
	}
	owners := make(map[string]bool, len(st.Allocations))
	for i, a := range st.Allocations {
		if err := checkRecord(a, st.SlotSize); err != nil {
			return nil, fmt.Errorf("%w: allocation %d: %s", ErrCorruptState, i, err)
		}
		if owners[a.Owner] {
			return nil, fmt.Errorf("%w: owner %s has two allocations", ErrCorruptState, a.Owner)
		}
		owners[a.Owner] = true
	}
	sortAllocations(st.Allocations)
	for i := 1; i < len(st.Allocations); i++ {
		a, b := st.Allocations[i-1], st.Allocations[i]
		if a.Range().overlaps(b.Range()) {
			return nil, fmt.Errorf("%w: owners %s (%s) and %s (%s) share host IDs", ErrCorruptState, a.Owner, a.Range(), b.Owner, b.Range())
		}
	}
	return &st, nil
}

// checkRecord states what a single record must be.
func checkRecord(a Allocation, slot uint32) error {
	switch {
	case a.Owner == "":
		return errors.New("no owner")
	case a.Size != slot:
		return fmt.Errorf("owner %s: size %d is not the slot size %d", a.Owner, a.Size, slot)
	case a.Range().end() > maxID:
		return fmt.Errorf("owner %s: host IDs %s reach past %d", a.Owner, a.Range(), uint64(maxID-1))
	}
	seen := make(map[string]bool, len(a.Members))
	for _, m := range a.Members {
		if m == "" {
			return fmt.Errorf("owner %s: empty member", a.Owner)
		}
		if seen[m] {
			return fmt.Errorf("owner %s: member %q listed twice", a.Owner, m)
		}
		seen[m] = true
	}
	return nil
}

func sortAllocations(allocs []Allocation) {
	slices.SortFunc(allocs, func(a, b Allocation) int {
		return cmp.Or(cmp.Compare(a.HostID, b.HostID), cmp.Compare(a.Owner, b.Owner))
	})
}

// encodeState is the version 1 file content for st, as older releases
// write it: indented, allocations sorted by host ID, never null. A rebuild
// encodes its records with it to check them with parseState.
func encodeState(st *state) ([]byte, error) {
	out := *st
	out.Version = stateVersion
	out.Allocations = slices.Clone(st.Allocations)
	if out.Allocations == nil {
		out.Allocations = []Allocation{}
	}
	sortAllocations(out.Allocations)
	data, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// find returns the index of owner's record, or -1.
func (st *state) find(owner string) int {
	return slices.IndexFunc(st.Allocations, func(a Allocation) bool { return a.Owner == owner })
}
