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

import "syscall"

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
