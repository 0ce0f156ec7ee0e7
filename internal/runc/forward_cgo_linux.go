//go:build cgo

package runc

/*
#cgo CFLAGS: -Wall -Wextra -Wno-unused-parameter
#include "forward.h"
*/
import "C"

import (
	"os"
	"syscall"
)

// handlerForwarder forwards ShortSignals by a C signal handler
// (forward_linux.c) instead of os/signal. signal.Notify makes a round trip
// to the runtime's signal-mask thread per signal, and starts that thread
// (locked to its goroutine) and the goroutine that reads the signals: on
// the nested VM measured, ~1-2 ms of a create's path and two dozen context
// switches fewer without them (the twelfth round of bench/README at cc12767). The handler
// replaces the Go runtime's for those six signals for the rest of the
// process: from Run or Wait on, every one of them goes to runc, held
// until it runs and dropped once it has exited, as notifyForwarder does.
// A later signal.Notify of them would not take them back (the runtime
// installs its own handler only once): one forwarder per process, as the
// wrapper's calls have.
type handlerForwarder struct{}

func newHandlerForwarder(list []os.Signal) forwarder {
	sigs := make([]C.int, len(list))
	for i, s := range list {
		sigs[i] = C.int(s.(syscall.Signal))
	}
	if C.fwd_install(&sigs[0], C.int(len(sigs))) != 0 {
		return nil
	}
	return handlerForwarder{}
}

func (handlerForwarder) start(pid int) { C.fwd_start(C.pid_t(pid)) }
func (handlerForwarder) stop()         { C.fwd_stop() }
