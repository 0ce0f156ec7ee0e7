package main

// The Go runtime's memory is populated when it is mapped: the link wraps
// mmap (populate_linux.c has the rule and the measurements). This file
// links the wrapper in and lets the tests map memory through it (cgo
// cannot be used in _test.go files).

/*
#cgo LDFLAGS: -Wl,--wrap=mmap
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

size_t populate_len(size_t len, int prot, int flags);
int populate_wanted(const char *env, long fault_ns);
long fault_cost_ns(void);
extern int populate;
extern long populate_fault_ns;

// populate_probe maps len bytes with prot and flags through the wrapped
// mmap (a MAP_FIXED map over a reservation of its own, as the Go runtime
// commits its heap) and counts the pages mincore finds resident before any
// is touched. -errno on failure.
static long populate_probe(size_t len, int prot, int flags)
{
	long page = sysconf(_SC_PAGESIZE), n, i, resident = 0;
	unsigned char *vec;
	void *p, *at = NULL;

	if (flags & MAP_FIXED) {
		at = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (at == MAP_FAILED)
			return -errno;
	}
	p = mmap(at, len, prot, flags, -1, 0);
	if (p == MAP_FAILED) {
		long err = -errno;
		if (at)
			munmap(at, len);
		return err;
	}
	n = ((long)len + page - 1) / page;
	vec = malloc((size_t)n);
	if (!vec || mincore(p, len, vec) != 0) {
		long err = vec ? -errno : -ENOMEM;
		free(vec);
		munmap(p, len);
		return err;
	}
	for (i = 0; i < n; i++)
		resident += vec[i] & 1;
	free(vec);
	munmap(p, len);
	return resident;
}
*/
import "C"

import (
	"syscall"
	"unsafe"
)

// populateProbe maps size bytes with prot and flags as the Go runtime
// would and returns how many of its pages were resident before any was
// touched.
func populateProbe(size, prot, flags int) (int, error) {
	n := C.populate_probe(C.size_t(size), C.int(prot), C.int(flags))
	if n < 0 {
		return 0, syscall.Errno(-n)
	}
	return int(n), nil
}

// populateLen is the wrapper's rule, for the tests: how many bytes from
// the start of such a map it maps in.
func populateLen(size, prot, flags int) int {
	return int(C.populate_len(C.size_t(size), C.int(prot), C.int(flags)))
}

// populateWanted is the constructor's decision, for the tests: env is
// RUNC_USERNS_POPULATE's value (nil: unset), faultNS a fault's cost (< 0:
// not measured).
func populateWanted(env *string, faultNS int) bool {
	var cenv *C.char
	if env != nil {
		cenv = C.CString(*env)
		defer C.free(unsafe.Pointer(cenv))
	}
	return C.populate_wanted(cenv, C.long(faultNS)) != 0
}

// faultCostNS is what the constructor measures: the cheapest of three
// faults on fresh pages, in ns (-1: it could not tell).
func faultCostNS() int {
	return int(C.fault_cost_ns())
}

// populateDecided is what the constructor decided for this process, and
// the fault's cost it measured to decide (-1: the environment decided).
func populateDecided() (on bool, faultNS int) {
	return C.populate != 0, int(C.populate_fault_ns)
}

// setPopulate sets whether the wrapped mmap maps in, for the tests, and
// returns what it was.
func setPopulate(on bool) bool {
	was := C.populate != 0
	C.populate = 0
	if on {
		C.populate = 1
	}
	return was
}
