//go:build cgo

package main

import (
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPopulate: the maps the Go runtime uses at once come back resident
// from the wrapped mmap; sparse ones, stacks, shared, read-only and
// inaccessible ones do not.
func TestPopulate(t *testing.T) {
	page := os.Getpagesize()
	rw := unix.PROT_READ | unix.PROT_WRITE
	anon := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	for _, tc := range []struct {
		name       string
		size, prot int
		flags      int
		populated  bool
	}{
		{"a heap chunk committed (MAP_FIXED, 4 MiB)", 4 << 20, rw, anon | unix.MAP_FIXED, true},
		{"a page-allocator summary page (MAP_FIXED)", page, rw, anon | unix.MAP_FIXED, true},
		{"a persistentalloc chunk (256 KiB)", 256 << 10, rw, anon, true},
		{"a small runtime map (64 KiB)", 64 << 10, rw, anon, true},
		{"a sparse table (1 MiB)", 1 << 20, rw, anon, false},
		{"a MAP_FIXED map over 4 MiB", 4<<20 + page, rw, anon | unix.MAP_FIXED, false},
		{"a thread stack", 256 << 10, rw, anon | unix.MAP_STACK, false},
		{"a reservation (PROT_NONE)", 256 << 10, unix.PROT_NONE, anon, false},
		{"read-only", 256 << 10, unix.PROT_READ, anon, false},
		{"shared", 256 << 10, rw, unix.MAP_SHARED | unix.MAP_ANONYMOUS, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := populates(tc.size, tc.prot, tc.flags); got != tc.populated {
				t.Errorf("populates(%d, %#x, %#x) = %v, want %v", tc.size, tc.prot, tc.flags, got, tc.populated)
			}
			resident, err := populateProbe(tc.size, tc.prot, tc.flags)
			if err != nil {
				t.Fatalf("mmap(%d, %#x, %#x): %v", tc.size, tc.prot, tc.flags, err)
			}
			pages := (tc.size + page - 1) / page
			switch {
			case tc.populated && resident != pages:
				t.Errorf("%d of %d pages resident before any touch, want all", resident, pages)
			case !tc.populated && resident != 0:
				t.Errorf("%d of %d pages resident before any touch, want none", resident, pages)
			}
		})
	}
}

// TestPopulateHeap: a young process's Go heap came from the wrapped mmap.
// The end of the 4 MiB chunk that holds a fresh allocation is resident
// though nothing was allocated there yet. It runs in a fresh process of
// this test binary: in this one, earlier tests' garbage may have been
// freed there and given back to the kernel by the runtime's scavenger.
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
		return
	}
	t.Fatalf("no heap chunk mapped at or after %p", p)
}
