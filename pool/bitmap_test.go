package pool

import (
	"errors"
	"testing"
)

func TestBitmap(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		set       []int
		wantFree  int
		wantOK    bool
		wantCount int
	}{
		{name: "empty", n: 10, wantFree: 0, wantOK: true},
		{name: "no slots", n: 0, wantOK: false},
		{name: "first taken", n: 10, set: []int{0}, wantFree: 1, wantOK: true, wantCount: 1},
		{name: "hole", n: 10, set: []int{0, 1, 3}, wantFree: 2, wantOK: true, wantCount: 3},
		{name: "full", n: 3, set: []int{0, 1, 2}, wantOK: false, wantCount: 3},
		{name: "full word exactly", n: 64, set: seq(0, 64), wantOK: false, wantCount: 64},
		{name: "word boundary", n: 65, set: seq(0, 64), wantFree: 64, wantOK: true, wantCount: 64},
		{name: "second word hole", n: 200, set: append(seq(0, 64), 64, 66), wantFree: 65, wantOK: true, wantCount: 66},
		{name: "sparse high slot", n: 1 << 20, set: []int{1<<20 - 1}, wantFree: 0, wantOK: true, wantCount: 1},
		{name: "full but n not word aligned", n: 70, set: seq(0, 70), wantOK: false, wantCount: 70},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBitmap(tc.n)
			for _, i := range tc.set {
				if b.set(i) {
					t.Fatalf("set(%d) reported already set", i)
				}
				if !b.has(i) {
					t.Fatalf("has(%d) false after set", i)
				}
			}
			got, ok := b.firstFree()
			if ok != tc.wantOK || (ok && got != tc.wantFree) {
				t.Errorf("firstFree() = %d, %v; want %d, %v", got, ok, tc.wantFree, tc.wantOK)
			}
			if c := b.count(); c != tc.wantCount {
				t.Errorf("count() = %d, want %d", c, tc.wantCount)
			}
			if len(tc.set) > 0 && !b.set(tc.set[0]) {
				t.Errorf("set(%d) twice did not report it", tc.set[0])
			}
		})
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestLayout(t *testing.T) {
	// Given out of order on purpose: slots follow host IDs.
	l := newLayout([]Range{{HostID: 1000, Size: 30}, {HostID: 100, Size: 20}}, 10)
	if l.total != 5 {
		t.Fatalf("total = %d, want 5", l.total)
	}
	want := []Range{{100, 10}, {110, 10}, {1000, 10}, {1010, 10}, {1020, 10}}
	for i, w := range want {
		if got := l.rangeOf(i); got != w {
			t.Errorf("rangeOf(%d) = %v, want %v", i, got, w)
		}
		if got, ok := l.slotOf(w); !ok || got != i {
			t.Errorf("slotOf(%v) = %d, %v; want %d", w, got, ok, i)
		}
	}
	notSlots := []struct {
		name string
		r    Range
	}{
		{"below the pool", Range{90, 10}},
		{"between ranges", Range{500, 10}},
		{"misaligned", Range{105, 10}},
		{"wrong size", Range{100, 20}},
		{"straddles range end", Range{1025, 10}},
		{"past the pool", Range{1030, 10}},
		{"zero size", Range{100, 0}},
	}
	for _, tc := range notSlots {
		t.Run(tc.name, func(t *testing.T) {
			if i, ok := l.slotOf(tc.r); ok {
				t.Errorf("slotOf(%v) = %d, want no slot", tc.r, i)
			}
		})
	}
}

func TestLayoutTopOfIDSpace(t *testing.T) {
	// The highest valid range: its last ID is (uid_t)-2.
	top := Range{HostID: maxID - 2*65536, Size: 2 * 65536}
	if err := Validate([]Range{top}, 65536); err != nil {
		t.Fatal(err)
	}
	l := newLayout([]Range{top}, 65536)
	last := l.rangeOf(1)
	if last.end() != maxID {
		t.Errorf("last slot %v ends at %d, want %d", last, last.end(), uint64(maxID))
	}
	if i, ok := l.slotOf(last); !ok || i != 1 {
		t.Errorf("slotOf(%v) = %d, %v", last, i, ok)
	}
}

func TestRebuild(t *testing.T) {
	l := newLayout([]Range{{HostID: 1 << 31, Size: 4 * 65536}}, 65536)
	base := uint32(1 << 31)
	tests := []struct {
		name    string
		allocs  []Allocation
		wantErr bool
		used    []int
	}{
		{name: "empty"},
		{name: "two slots", allocs: []Allocation{{Owner: "a", HostID: base, Size: 65536}, {Owner: "b", HostID: base + 2*65536, Size: 65536}}, used: []int{0, 2}},
		{name: "not a slot", allocs: []Allocation{{Owner: "a", HostID: base + 1, Size: 65536}}, wantErr: true},
		{name: "outside the ranges", allocs: []Allocation{{Owner: "a", HostID: 100000, Size: 65536}}, wantErr: true},
		{name: "other slot size", allocs: []Allocation{{Owner: "a", HostID: base, Size: 2 * 65536}}, wantErr: true},
		{name: "same slot twice", allocs: []Allocation{{Owner: "a", HostID: base, Size: 65536}, {Owner: "b", HostID: base, Size: 65536}}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := rebuild(l, tc.allocs)
			if tc.wantErr {
				if !errors.Is(err, ErrCorruptState) {
					t.Fatalf("err = %v, want ErrCorruptState", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.count() != len(tc.used) {
				t.Errorf("count = %d, want %d", b.count(), len(tc.used))
			}
			for _, i := range tc.used {
				if !b.has(i) {
					t.Errorf("slot %d not marked", i)
				}
			}
		})
	}
}

func BenchmarkBitmapFirstFree(b *testing.B) {
	// The default pool with every slot but the last in use: the worst case.
	bm := newBitmap(1024)
	for i := range 1023 {
		bm.set(i)
	}
	for b.Loop() {
		if i, ok := bm.firstFree(); !ok || i != 1023 {
			b.Fatal(i, ok)
		}
	}
}
