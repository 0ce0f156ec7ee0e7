package startup

import (
	"runtime"
	"syscall"
	"unsafe"
)

const (
	madvPopulateWrite = 23 // MADV_POPULATE_WRITE, Linux 5.14

	// Window is how much heap Heap maps in: a create touches pages over
	// ~1.5-1.8 MiB from the heap's start, a delete less; a page mapped
	// and never used costs ~1 us.
	Window = 2 << 20
	// chunk is the Go runtime's heap mapping unit (pallocChunkBytes): the
	// heap is mapped read-write in aligned chunks of this size, so the
	// end of the chunk holding an allocation is mapped too.
	chunk = 4 << 20
)

// probe is a heap allocation that tells Heap where the heap is.
var probe *[64]byte

func init() {
	if _, set := syscall.Getenv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(1)
	}
	Heap()
}

// Heap maps in the heap from the first allocation's page on, up to Window
// bytes and not past the end of its runtime chunk. It returns the range
// and the kernel's answer.
func Heap() (start, end uintptr, err error) {
	page := uintptr(syscall.Getpagesize())
	probe = new([64]byte) // a global's target: on the heap
	start = uintptr(unsafe.Pointer(probe)) &^ (page - 1)
	probe = nil
	end = (start + chunk) &^ (chunk - 1)
	if end-start > Window {
		end = start + Window
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateWrite); e != 0 {
		err = e
	}
	return start, end, err
}
