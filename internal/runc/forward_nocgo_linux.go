//go:build !cgo

package runc

import "os"

// newHandlerForwarder: without cgo there is no C handler; os/signal does it.
func newHandlerForwarder([]os.Signal) forwarder { return nil }
