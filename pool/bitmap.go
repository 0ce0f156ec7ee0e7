package pool

import (
	"fmt"
	"math/bits"
	"sort"
)

// bitmap records which slots are used. It grows with the highest used
// slot, not with the pool's size, so a pool of 2^32 one-ID slots costs no
// more than the slots in use. It is rebuilt from the records' names on
// every call and never stored.
type bitmap struct {
	n     int // slots in the pool
	words []uint64
}

func newBitmap(n int) *bitmap { return &bitmap{n: n} }

// set marks slot i used and reports whether it already was.
func (b *bitmap) set(i int) (was bool) {
	w := i / 64
	for len(b.words) <= w {
		b.words = append(b.words, 0)
	}
	mask := uint64(1) << (i % 64)
	was = b.words[w]&mask != 0
	b.words[w] |= mask
	return was
}

func (b *bitmap) has(i int) bool {
	w := i / 64
	return w < len(b.words) && b.words[w]&(1<<(i%64)) != 0
}

// firstFree returns the lowest unused slot, or false when every slot of
// the pool is used.
func (b *bitmap) firstFree() (int, bool) {
	for w, word := range b.words {
		if word != ^uint64(0) {
			i := w*64 + bits.TrailingZeros64(^word)
			return i, i < b.n
		}
	}
	i := len(b.words) * 64
	return i, i < b.n
}

// count is the number of used slots.
func (b *bitmap) count() int {
	c := 0
	for _, w := range b.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// layout numbers the pool's slots: slot 0 is the lowest slotSize IDs of the
// lowest range, and so on up through the ranges in host ID order, so that
// "lowest free slot" is also "lowest free host IDs".
type layout struct {
	ranges []Range // sorted by HostID, validated
	slot   uint32
	starts []int // starts[i] is the number of the first slot of ranges[i]
	total  int
}

// newLayout expects ranges and slot that passed Validate.
func newLayout(ranges []Range, slot uint32) layout {
	l := layout{ranges: sortedRanges(ranges), slot: slot}
	for _, r := range l.ranges {
		l.starts = append(l.starts, l.total)
		l.total += int(r.Size / slot)
	}
	return l
}

// rangeOf returns the host IDs of slot i (0 <= i < total).
func (l layout) rangeOf(i int) Range {
	k := sort.Search(len(l.starts), func(k int) bool { return l.starts[k] > i }) - 1
	off := uint64(i-l.starts[k]) * uint64(l.slot)
	return Range{HostID: uint32(uint64(l.ranges[k].HostID) + off), Size: l.slot}
}

// slotOf returns the slot whose host IDs are exactly r, if there is one.
func (l layout) slotOf(r Range) (int, bool) {
	if r.Size != l.slot || l.slot == 0 {
		return 0, false
	}
	k := sort.Search(len(l.ranges), func(k int) bool { return l.ranges[k].HostID > r.HostID }) - 1
	if k < 0 || !l.ranges[k].contains(r.HostID) {
		return 0, false
	}
	off := r.HostID - l.ranges[k].HostID
	if off%l.slot != 0 || uint64(r.HostID)+uint64(r.Size) > l.ranges[k].end() {
		return 0, false
	}
	return l.starts[k] + int(off/l.slot), true
}

func (l layout) String() string {
	return fmt.Sprintf("ranges %s, slot size %d", rangeList(l.ranges), l.slot)
}

// rebuild marks the slot of every allocation. A record that is not exactly
// one slot of the layout (the ranges or the slot size changed while it was
// held), or that shares a slot with another, is corrupt state: allocating
// around it could hand its IDs to a second owner.
func rebuild(l layout, allocs []Allocation) (*bitmap, error) {
	b := newBitmap(l.total)
	for _, a := range allocs {
		if err := markSlot(b, l, a.Owner, a.Range()); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// markSlot marks owner's range r in b; see rebuild.
func markSlot(b *bitmap, l layout, owner string, r Range) error {
	i, ok := l.slotOf(r)
	if !ok {
		return notASlot(l, owner, r)
	}
	if b.set(i) {
		return fmt.Errorf("%w: owner %s holds host IDs %s, a slot another owner holds too", ErrCorruptState, owner, r)
	}
	return nil
}

func notASlot(l layout, owner string, r Range) error {
	return fmt.Errorf("%w: owner %s holds host IDs %s, which is not a slot of the pool (%s): restore the ranges and slot size it was allocated from, or release it once its pod is gone (runc-userns pool release %s)", ErrCorruptState, owner, r, l, owner)
}
