package main

// The Go runtime's memory is populated when it is mapped: the link wraps
// mmap (populate_linux.c has the rule and the measurements). This file
// links the wrapper in and lets the tests map memory through it (cgo
// cannot be used in _test.go files).

/*
#cgo LDFLAGS: -Wl,--wrap=mmap
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
int populates(size_t len, int prot, int flags);
int huge_candidate(unsigned long addr, size_t len, int flags);
unsigned long huge_room(const char *text, size_t n, int order);
int huge_ok(void);
// populate_map maps len bytes with prot and flags through the wrapped mmap
// and returns the address, or 0 with *err set. A MAP_FIXED map goes over a
// reservation of its own, at an address that is a multiple of align but
// not of 2 * align (as the Go runtime commits its heap in reserved space);
// the rest of the reservation is unmapped again.
static uintptr_t populate_map(size_t len, int prot, int flags, size_t align, int *err)
{
	char *at = NULL, *p;
	size_t span = len + 2 * align;
	if (flags & MAP_FIXED) {
		char *r = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r == MAP_FAILED) {
			*err = errno;
			return 0;
		}
		at = (char *)(((uintptr_t)r + align - 1) & ~(uintptr_t)(align - 1));
		if (((uintptr_t)at & (2 * align - 1)) == 0)
			at += align;
		if (at > r)
			munmap(r, (size_t)(at - r));
		munmap(at + len, (size_t)(r + span - (at + len)));
	}
	p = mmap(at, len, prot, flags, -1, 0);
	if (p == MAP_FAILED) {
		*err = errno;
		if (at)
			munmap(at, len);
		return 0;
	}
	return (uintptr_t)p;
}
// populate_resident counts the pages of [addr, addr+len) that mincore
// finds resident, or -errno.
static long populate_resident(uintptr_t addr, size_t len)
{
	long page = sysconf(_SC_PAGESIZE), n = ((long)len + page - 1) / page, i, resident = 0;
	unsigned char *vec = malloc((size_t)n);
	if (!vec)
		return -ENOMEM;
	if (mincore((void *)addr, len, vec) != 0) {
		long err = -errno;
		free(vec);
		return err;
	}
	for (i = 0; i < n; i++)
		resident += vec[i] & 1;
	free(vec);
	return resident;
}
static void populate_unmap(uintptr_t addr, size_t len)
{
	munmap((void *)addr, len);
}
*/
import "C"

import (
	"syscall"
	"unsafe"
)

// populateMap maps size bytes with prot and flags as the Go runtime would
// (a MAP_FIXED map at a multiple of align, and of no greater power of two)
// and returns its address; populateUnmap unmaps it.
func populateMap(size, prot, flags, align int) (uintptr, error) {
	var e C.int
	p := C.populate_map(C.size_t(size), C.int(prot), C.int(flags), C.size_t(align), &e)
	if p == 0 {
		return 0, syscall.Errno(e)
	}
	return uintptr(p), nil
}

func populateUnmap(addr uintptr, size int) {
	C.populate_unmap(C.uintptr_t(addr), C.size_t(size))
}

// populateResident counts the resident pages of [addr, addr+size).
func populateResident(addr uintptr, size int) (int, error) {
	n := C.populate_resident(C.uintptr_t(addr), C.size_t(size))
	if n < 0 {
		return 0, syscall.Errno(-n)
	}
	return int(n), nil
}

// populates is the wrapper's rule, for the tests.
func populates(size, prot, flags int) bool {
	return C.populates(C.size_t(size), C.int(prot), C.int(flags)) != 0
}

// hugeCandidate is the wrapper's rule for advising huge pages, for the tests.
func hugeCandidate(addr uintptr, size, flags int) bool {
	return C.huge_candidate(C.ulong(addr), C.size_t(size), C.int(flags)) != 0
}

// hugeOK is the wrapper's check that the buddy allocator has huge pages to
// spare now, for the tests.
func hugeOK() bool {
	return C.huge_ok() != 0
}

// hugeRoom is the wrapper's count of free huge-page blocks in the text of
// /proc/buddyinfo, for the tests.
func hugeRoom(text []byte, order int) uint64 {
	if len(text) == 0 {
		return 0
	}
	return uint64(C.huge_room((*C.char)(unsafe.Pointer(&text[0])), C.size_t(len(text)), C.int(order)))
}
