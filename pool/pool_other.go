//go:build !linux

package pool

import "errors"

// The pool relies on flock(2) per open file description; only Linux runs
// runc-userns.
var errUnsupported = errors.New("user namespace pool: only supported on Linux")

func (p *Pool) update(string, func(*records) error) error { return errUnsupported }
func (p *Pool) view(func(*records) error) error           { return errUnsupported }
