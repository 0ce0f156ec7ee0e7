package main

/*
#include <stdlib.h>
#include "fastpath.h"
*/
import "C"

import "unsafe"

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
