//go:build cgo

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPopulate: the maps the Go runtime uses at once come back resident
// from the wrapped mmap; sparse ones, stacks, shared, read-only and
// inaccessible ones do not. A heap chunk (MAP_FIXED, whole aligned huge
// pages) comes back as huge pages when the kernel has transparent huge
// pages on and the buddy allocator has blocks to spare; any other map never
// does.
func TestPopulate(t *testing.T) {
	page := os.Getpagesize()
	rw := unix.PROT_READ | unix.PROT_WRITE
	anon := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	thp := thpEnabled(t)
	for _, tc := range []struct {
		name       string
		size, prot int
		flags      int
		align      int // of a MAP_FIXED map's address
		populated  bool
		huge       bool // advised huge pages
	}{
		{"a heap chunk committed (MAP_FIXED, 4 MiB)", 4 << 20, rw, anon | unix.MAP_FIXED, 4 << 20, true, true},
		{"a heap chunk at an address that is no huge page's", 4 << 20, rw, anon | unix.MAP_FIXED, page, true, false},
		{"a page-allocator summary page (MAP_FIXED)", page, rw, anon | unix.MAP_FIXED, page, true, false},
		{"a persistentalloc chunk (256 KiB)", 256 << 10, rw, anon, 0, true, false},
		{"a small runtime map (64 KiB)", 64 << 10, rw, anon, 0, true, false},
		{"a sparse table (1 MiB)", 1 << 20, rw, anon, 0, false, false},
		{"a sparse table of huge-page size", 2 << 20, rw, anon, 0, false, false},
		{"a MAP_FIXED map over 4 MiB", 4<<20 + page, rw, anon | unix.MAP_FIXED, page, false, false},
		{"a thread stack", 256 << 10, rw, anon | unix.MAP_STACK, 0, false, false},
		{"a reservation (PROT_NONE)", 256 << 10, unix.PROT_NONE, anon, 0, false, false},
		{"read-only", 256 << 10, unix.PROT_READ, anon, 0, false, false},
		{"shared", 256 << 10, rw, unix.MAP_SHARED | unix.MAP_ANONYMOUS, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := populates(tc.size, tc.prot, tc.flags); got != tc.populated {
				t.Errorf("populates(%d, %#x, %#x) = %v, want %v", tc.size, tc.prot, tc.flags, got, tc.populated)
			}
			// Checked before the map, as the wrapper checks it.
			room := hugeOK()
			addr, err := populateMap(tc.size, tc.prot, tc.flags, tc.align)
			if err != nil {
				t.Fatalf("mmap(%d, %#x, %#x): %v", tc.size, tc.prot, tc.flags, err)
			}
			defer populateUnmap(addr, tc.size)
			if tc.populated {
				if got := hugeCandidate(addr, tc.size, tc.flags); got != tc.huge {
					t.Errorf("hugeCandidate(%#x, %d, %#x) = %v, want %v", addr, tc.size, tc.flags, got, tc.huge)
				}
			}
			resident, err := populateResident(addr, tc.size)
			if err != nil {
				t.Fatalf("mincore: %v", err)
			}
			pages := (tc.size + page - 1) / page
			switch {
			case tc.populated && resident != pages:
				t.Errorf("%d of %d pages resident before any touch, want all", resident, pages)
			case !tc.populated && resident != 0:
				t.Errorf("%d of %d pages resident before any touch, want none", resident, pages)
			}
			want := 0
			if tc.huge && thp && room {
				want = tc.size
			}
			got, err := anonHugeBytes(addr)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%d bytes of the map are huge pages, want %d (transparent huge pages on: %v, free huge-page blocks to spare: %v)", got, want, thp, room)
			}
			if tc.huge && !(thp && room) {
				t.Logf("checked as small pages: transparent huge pages on: %v, free huge-page blocks to spare: %v", thp, room)
			}
		})
	}
}

// thpEnabled: whether transparent huge pages can back an advised anonymous
// map (transparent_hugepage/enabled is "always" or "madvise"). A kernel
// built without them has no such file.
func thpEnabled(t *testing.T) bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return !strings.Contains(string(b), "[never]")
}

// anonHugeBytes is AnonHugePages of the map (VMA) holding addr, from
// /proc/self/smaps.
func anonHugeBytes(addr uintptr) (int, error) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= addr && addr < hi
			continue
		}
		if kb, ok := strings.CutPrefix(line, "AnonHugePages:"); ok && in {
			var n int
			if _, err := fmt.Sscanf(strings.TrimSpace(kb), "%d kB", &n); err != nil {
				return 0, fmt.Errorf("smaps: %q: %v", line, err)
			}
			return n << 10, nil
		}
	}
	return 0, fmt.Errorf("no map holds %#x in /proc/self/smaps", addr)
}

// TestPopulateHeap: a young process's Go heap came from the wrapped mmap.
// The end of the 4 MiB chunk that holds a fresh allocation is resident
// though nothing was allocated there yet, and the chunk is huge pages
// where the kernel can give them. It runs in a fresh process of this test
// binary: in this one, earlier tests' garbage may have been freed there
// and given back to the kernel by the runtime's scavenger.
func TestPopulateHeap(t *testing.T) {
	if os.Getenv("RUNC_USERNS_TEST_POPULATE_HEAP") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPopulateHeap$", "-test.v")
		cmd.Env = append(os.Environ(), "RUNC_USERNS_TEST_POPULATE_HEAP=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, out)
		}
		return
	}
	const chunk = 4 << 20
	p := new([64]byte)
	end := (uintptr(unsafe.Pointer(p)) + chunk) &^ (chunk - 1)
	page := uintptr(os.Getpagesize())
	// The chunk's last 64 pages: a test binary's heap this young has not
	// reached them unless the chunk is nearly full, which the random heap
	// base makes possible: then the next chunk is the one to look at.
	for _, at := range []uintptr{end - 64*page, end + chunk - 64*page} {
		vec := make([]byte, 64)
		_, _, e := unix.Syscall(unix.SYS_MINCORE, at, 64*page, uintptr(unsafe.Pointer(&vec[0])))
		if e == unix.ENOMEM {
			continue // not mapped (the next chunk, before the heap grows into it)
		}
		if e != 0 {
			t.Fatalf("mincore %#x: %v", at, e)
		}
		for i, v := range vec {
			if v&1 == 0 {
				t.Fatalf("heap page %#x (of the chunk ending at %#x) is not resident: the runtime's mmap is not populated", at+uintptr(i)*page, at+64*page)
			}
		}
		thp, room := thpEnabled(t), hugeOK()
		got, err := anonHugeBytes(at)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case thp && room && got == 0:
			t.Fatalf("the heap chunk holding %#x is small pages, with transparent huge pages on and free huge-page blocks to spare", at)
		case !(thp && room):
			t.Logf("heap chunk: %d bytes of huge pages (transparent huge pages on: %v, free huge-page blocks to spare: %v)", got, thp, room)
		}
		return
	}
	t.Fatalf("no heap chunk mapped at or after %p", p)
}

// TestHugeRoom: free blocks of at least the huge-page order, counted in
// blocks of that order, over every zone but DMA.
func TestHugeRoom(t *testing.T) {
	const vm = `Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 
Node 0, zone    DMA32      2      3      0      2      3      2      1      4      4      2    752 
Node 0, zone   Normal   2408   2588   1592   1097    697    266    264    173    282    200    582 
`
	for _, tc := range []struct {
		name  string
		text  string
		order int
		want  uint64
	}{
		{"a VM with free memory (order 9 of 4 KiB pages)", vm, 9, 2 + 752*2 + 200 + 582*2},
		{"order 10 only", vm, 10, 752 + 582},
		{"DMA alone", "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n", 9, 0},
		{"fragmented: nothing above order 8", "Node 0, zone   Normal   9000   800   70   6   5   4   3   2   1   0   0\n", 9, 0},
		{"two nodes", "Node 0, zone   Normal 0 0 0 0 0 0 0 0 0 1 1\nNode 1, zone   Normal 0 0 0 0 0 0 0 0 0 3 0\n", 9, 1 + 2 + 3},
		{"a zone named like DMA", "Node 0, zone   DMAX 0 0 0 0 0 0 0 0 0 1 0\n", 9, 1},
		{"no trailing newline", "Node 0, zone   Normal 0 0 0 0 0 0 0 0 0 4 0", 9, 4},
		{"a block of order 10 is two of order 9", "Node 0, zone   Normal 0 0 0 0 0 0 0 0 0 0 5", 9, 10},
		{"fewer columns than the order", "Node 0, zone   Normal 1 2 3\n", 9, 0},
		{"not buddyinfo", "hello\nworld\n", 9, 0},
		{"empty", "", 9, 0},
		{"saturates", strings.Repeat("Node 0, zone Normal"+strings.Repeat(" 0", 19)+" 99999999999999999999999\n", 4), 0, ^uint64(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hugeRoom([]byte(tc.text), tc.order); got != tc.want {
				t.Errorf("hugeRoom(%q, %d) = %d, want %d", tc.text, tc.order, got, tc.want)
			}
		})
	}
}

// FuzzHugeRoom: any text parses without a fault, and lines count
// independently (the count of the whole is the sum of its lines', short of
// saturation).
func FuzzHugeRoom(f *testing.F) {
	f.Add([]byte("Node 0, zone   Normal   2408   2588   1592   1097    697    266    264    173    282    200    582 \nNode 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n"), 9)
	f.Add([]byte("Node 0, zone Normal 1 2 3"), 1)
	f.Fuzz(func(t *testing.T, text []byte, order int) {
		if order < 0 || order > 30 {
			return
		}
		whole := hugeRoom(text, order)
		var sum uint64
		for _, line := range bytes.SplitAfter(text, []byte("\n")) {
			n := hugeRoom(line, order)
			if sum+n < sum {
				return // saturated
			}
			sum += n
		}
		if whole != sum {
			t.Fatalf("hugeRoom(%q, %d) = %d, but its lines sum to %d", text, order, whole, sum)
		}
	})
}
