package main

/*
#include <stdlib.h>
#include "fastpath.h"
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// startedRunc takes the runc delete that the constructor started before the
// Go runtime (fastpath_linux.c, FP_SPAWN), or returns nil: a delete of a
// container the wrapper edited, with a config file in effect.
func startedRunc() *earlyRunc {
	var state *C.char
	var n C.long
	pid := C.fp_early(&state, &n)
	if state == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(state))
	if pid <= 0 {
		return nil
	}
	return &earlyRunc{pid: int(pid), state: C.GoBytes(unsafe.Pointer(state), C.int(n))}
}

// startedGated takes the runc create that the constructor started behind
// the gate (FP_GATE), or returns nil. Its marker descriptor becomes
// close-on-exec here: runc has its own, and nothing else we start may
// hold the lock.
func startedGated() *gatedRunc {
	var marker, created, gate C.int
	pid := C.fp_gated(&marker, &created, &gate)
	if pid <= 0 {
		return nil
	}
	unix.CloseOnExec(int(marker))
	return &gatedRunc{pid: int(pid), marker: int(marker), created: created != 0, gate: int(gate)}
}
