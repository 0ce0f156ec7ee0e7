package prefault

import (
	"errors"
	"syscall"
	"testing"
	"unsafe"
)

func TestHeap(t *testing.T) {
	start, end, err := Heap()
	if errors.Is(err, syscall.EINVAL) {
		t.Skip("MADV_POPULATE_WRITE needs Linux >= 5.14")
	}
	if err != nil {
		t.Fatalf("Heap: %v", err)
	}
	page := uintptr(syscall.Getpagesize())
	switch {
	case start%page != 0 || end%page != 0:
		t.Fatalf("range %#x-%#x is not page-aligned", start, end)
	case end <= start || end-start > Window:
		t.Fatalf("range %#x-%#x: want 1 page to %d bytes", start, end, Window)
	case (end-1)/chunk != start/chunk:
		t.Fatalf("range %#x-%#x crosses a %d-byte runtime chunk", start, end, chunk)
	}
	// Every page of the range is now in the page tables (mincore: resident).
	vec := make([]byte, (end-start)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore %#x-%#x: %v", start, end, e)
	}
	for i, v := range vec {
		if v&1 == 0 {
			t.Fatalf("page %d of %d (%#x) is not resident", i, len(vec), start+uintptr(i)*page)
		}
	}
}
