//go:build cgo

package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPopulateWanted: RUNC_USERNS_POPULATE=1 or 0 decides; otherwise a
// fault as dear as on the VM the figures come from (14-22 us) maps in, one
// as cheap as on the later machine (1.4 us) or bare metal does not, and a
// fault that could not be timed keeps the old behaviour.
func TestPopulateWanted(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		env     *string
		faultNS int
		want    bool
	}{
		{"unset, dear faults", nil, 18000, true},
		{"unset, at the threshold", nil, 5000, true},
		{"unset, cheap faults", nil, 1400, false},
		{"unset, bare metal", nil, 250, false},
		{"unset, not measured", nil, -1, true},
		{"1 with cheap faults", str("1"), 1400, true},
		{"1 not measured", str("1"), -1, true},
		{"0 with dear faults", str("0"), 18000, false},
		{"0 not measured", str("0"), -1, false},
		{"empty: measured", str(""), 1400, false},
		{"other value: measured", str("yes"), 18000, true},
		{"other value, cheap faults", str("true"), 1400, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := populateWanted(tc.env, tc.faultNS); got != tc.want {
				t.Errorf("populateWanted(%v, %d) = %v, want %v", tc.env, tc.faultNS, got, tc.want)
			}
		})
	}
}

// TestFaultCostNS: the constructor's measurement gives a fault's cost:
// not its "could not tell" (-1), not the ~20-60 ns of two clock reads
// around a write that faulted nothing (a huge page mapped with the first),
// not a second.
func TestFaultCostNS(t *testing.T) {
	for range 3 {
		if ns := faultCostNS(); ns < 100 || ns >= 1e9 {
			t.Fatalf("faultCostNS() = %d ns, want a fault's cost", ns)
		}
	}
}

// TestPopulate: the maps the Go runtime uses at once come back resident
// from the wrapped mmap (a heap chunk its head only, when the heap grows
// from a chunk's start); sparse ones, stacks, shared, read-only and
// inaccessible ones do not. Nothing comes back resident where the
// constructor found faults cheap.
func TestPopulate(t *testing.T) {
	was := setPopulate(true)
	t.Cleanup(func() { setPopulate(was) })
	page := os.Getpagesize()
	chunk := 4 << 20
	if heapFromChunkStart {
		chunk = 2 << 20
	}
	rw := unix.PROT_READ | unix.PROT_WRITE
	anon := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	for _, tc := range []struct {
		name       string
		size, prot int
		flags      int
		populated  int // bytes from the start
	}{
		{"a heap chunk committed (MAP_FIXED, 4 MiB)", 4 << 20, rw, anon | unix.MAP_FIXED, chunk},
		{"a page-allocator summary page (MAP_FIXED)", page, rw, anon | unix.MAP_FIXED, page},
		{"a MAP_FIXED map under 4 MiB", 1 << 20, rw, anon | unix.MAP_FIXED, 1 << 20},
		{"a persistentalloc chunk (256 KiB)", 256 << 10, rw, anon, 256 << 10},
		{"a small runtime map (64 KiB)", 64 << 10, rw, anon, 64 << 10},
		{"a sparse table (1 MiB)", 1 << 20, rw, anon, 0},
		{"a MAP_FIXED map over 4 MiB", 4<<20 + page, rw, anon | unix.MAP_FIXED, 0},
		{"a thread stack", 256 << 10, rw, anon | unix.MAP_STACK, 0},
		{"a reservation (PROT_NONE)", 256 << 10, unix.PROT_NONE, anon, 0},
		{"read-only", 256 << 10, unix.PROT_READ, anon, 0},
		{"shared", 256 << 10, rw, unix.MAP_SHARED | unix.MAP_ANONYMOUS, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := populateLen(tc.size, tc.prot, tc.flags); got != tc.populated {
				t.Errorf("populateLen(%d, %#x, %#x) = %d, want %d", tc.size, tc.prot, tc.flags, got, tc.populated)
			}
			resident, err := populateProbe(tc.size, tc.prot, tc.flags)
			if err != nil {
				t.Fatalf("mmap(%d, %#x, %#x): %v", tc.size, tc.prot, tc.flags, err)
			}
			if want := tc.populated / page; resident != want {
				t.Errorf("%d of %d pages resident before any touch, want %d", resident, (tc.size+page-1)/page, want)
			}
			if tc.populated == 0 {
				return
			}
			setPopulate(false)
			defer setPopulate(true)
			if resident, err := populateProbe(tc.size, tc.prot, tc.flags); err != nil || resident != 0 {
				t.Errorf("with populate off: %d pages resident before any touch (err %v), want 0", resident, err)
			}
		})
	}
}

// TestPopulateHeap: a young process's Go heap came from the wrapped mmap
// (populating: RUNC_USERNS_POPULATE=1).
// With a random heap base, the end of the 4 MiB chunk that holds a fresh
// allocation is resident though nothing was allocated there yet. With the
// heap from its first chunk's start, the last pages of that chunk's
// populated head are resident and the pages just past it are not, the
// heap used being well under the head (checked). It runs in a fresh
// process of this test binary: in this one, earlier tests' garbage may
// have been freed there and given back to the kernel by the runtime's
// scavenger.
func TestPopulateHeap(t *testing.T) {
	if os.Getenv("RUNC_USERNS_TEST_POPULATE_HEAP") != "1" {
		inFreshProcess(t, append(os.Environ(), "RUNC_USERNS_TEST_POPULATE_HEAP=1", "RUNC_USERNS_POPULATE=1"))
		return
	}
	const chunk = 4 << 20
	p := new([64]byte)
	page := uintptr(os.Getpagesize())
	resident := func(at uintptr) ([]byte, bool) {
		vec := make([]byte, 64)
		_, _, e := unix.Syscall(unix.SYS_MINCORE, at, 64*page, uintptr(unsafe.Pointer(&vec[0])))
		if e == unix.ENOMEM {
			return nil, false // not mapped
		}
		if e != 0 {
			t.Fatalf("mincore %#x: %v", at, e)
		}
		return vec, true
	}
	if heapFromChunkStart {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		const head = 2 << 20
		// What the heap took from the page allocator (lowest address
		// first) and has not given back: from the chunk's start, no
		// further than this in a process this young.
		if used := ms.HeapSys - ms.HeapReleased; used >= head/2 {
			t.Fatalf("the heap has used %d bytes: it may reach the head's last pages, and this test could not tell populated pages from used ones", used)
		}
		start := uintptr(unsafe.Pointer(p)) &^ (chunk - 1)
		in, ok := resident(start + head - 64*page)
		if !ok {
			t.Fatalf("no heap chunk mapped at %#x", start)
		}
		past, _ := resident(start + head)
		for i := range in {
			if in[i]&1 == 0 {
				t.Fatalf("heap page %#x (the chunk at %#x's head) is not resident: the runtime's mmap is not populated", start+head-64*page+uintptr(i)*page, start)
			}
			if past != nil && past[i]&1 != 0 {
				t.Fatalf("heap page %#x past the chunk at %#x's head is resident: the whole chunk was populated", start+head+uintptr(i)*page, start)
			}
		}
		return
	}
	end := (uintptr(unsafe.Pointer(p)) + chunk) &^ (chunk - 1)
	// The chunk's last 64 pages: a test binary's heap this young has not
	// reached them unless the chunk is nearly full, which the random heap
	// base makes possible: then the next chunk is the one to look at.
	for _, at := range []uintptr{end - 64*page, end + chunk - 64*page} {
		vec, ok := resident(at)
		if !ok {
			continue // the next chunk, before the heap grows into it
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

// inFreshProcess runs the calling test again in a new process of this test
// binary with environment env, whose constructor and Go runtime start as
// ours do on every call, and fails t with its output if it fails there.
func inFreshProcess(t *testing.T, env []string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+strings.SplitN(t.Name(), "/", 2)[0]+"$", "-test.v")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, out)
	}
	return out
}
