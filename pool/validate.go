package pool

import (
	"cmp"
	"fmt"
	"slices"
)

// DefaultSlotSize is the number of host IDs each owner gets: a pod sees
// uids and gids 0-65535, the range every image expects.
const DefaultSlotSize = 65536

// maxID is (uid_t)-1: the kernel's "no ID" value, never a usable ID. A
// range must end below it.
const maxID = 1<<32 - 1

// Range is a block of host IDs, [HostID, HostID+Size).
type Range struct {
	HostID uint32 `json:"hostID"`
	Size   uint32 `json:"size"`
}

// String is "hostID+size", the form every message uses.
func (r Range) String() string { return fmt.Sprintf("%d+%d", r.HostID, r.Size) }

// end is one past the last ID; uint64 so that no range overflows.
func (r Range) end() uint64 { return uint64(r.HostID) + uint64(r.Size) }

func (r Range) contains(id uint32) bool {
	return r.Size > 0 && id >= r.HostID && uint64(id) < r.end()
}

// Overlaps reports whether r and o share a host ID.
func (r Range) Overlaps(o Range) bool { return r.overlaps(o) }

func (r Range) overlaps(o Range) bool {
	return r.Size > 0 && o.Size > 0 && uint64(r.HostID) < o.end() && uint64(o.HostID) < r.end()
}

// DefaultRanges is the pool when the operator names no ranges and the subid
// user has none: 1024 slots of 65536 from 2^31 (see doc.go for why there).
func DefaultRanges() []Range {
	return []Range{{HostID: 1 << 31, Size: 1024 * DefaultSlotSize}}
}

// rangeChecks are the rules each range must follow, in the order they are
// checked: the first one broken is the message.
var rangeChecks = []struct {
	name  string
	check func(r Range, slot uint32) string
}{
	{"non-empty", func(r Range, slot uint32) string {
		if r.Size == 0 {
			return fmt.Sprintf("range %s: size 0: a range must hold at least one slot of %d IDs", r, slot)
		}
		return ""
	}},
	{"below (uid_t)-1", func(r Range, slot uint32) string {
		if r.end() > maxID {
			return fmt.Sprintf("range %s: its last ID %d must be below %d, which the kernel reserves as (uid_t)-1", r, r.end()-1, uint64(maxID))
		}
		return ""
	}},
	{"at least one slot", func(r Range, slot uint32) string {
		if r.Size < slot {
			return fmt.Sprintf("range %s: size %d is smaller than the slot size %d", r, r.Size, slot)
		}
		return ""
	}},
	{"whole slots", func(r Range, slot uint32) string {
		if r.Size%slot != 0 {
			return fmt.Sprintf("range %s: size %d is not a multiple of the slot size %d", r, r.Size, slot)
		}
		return ""
	}},
}

// Validate checks the pool's shape: at least one range, a positive slot
// size (callers apply DefaultSlotSize first; New does), and ranges that are
// whole slots, end below (uid_t)-1 and do not overlap. It does no I/O; see
// CheckHost for the checks against the host's users and groups.
func Validate(ranges []Range, slotSize uint32) error {
	if slotSize == 0 {
		return errorf(ErrInvalidConfig, "slot size 0: each owner needs at least one ID (the default is %d)", DefaultSlotSize)
	}
	if len(ranges) == 0 {
		return errorf(ErrInvalidConfig, "no ranges: the pool needs at least one range of host IDs")
	}
	for _, r := range ranges {
		for _, c := range rangeChecks {
			if msg := c.check(r, slotSize); msg != "" {
				return errorf(ErrInvalidConfig, "%s", msg)
			}
		}
	}
	sorted := sortedRanges(ranges)
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1].overlaps(sorted[i]) {
			return errorf(ErrInvalidConfig, "ranges %s and %s overlap: a host ID may belong to one range only", sorted[i-1], sorted[i])
		}
	}
	return nil
}

// sortedRanges returns a copy of ranges in host ID order.
func sortedRanges(ranges []Range) []Range {
	s := slices.Clone(ranges)
	slices.SortFunc(s, func(a, b Range) int {
		return cmp.Or(cmp.Compare(a.HostID, b.HostID), cmp.Compare(a.Size, b.Size))
	})
	return s
}
