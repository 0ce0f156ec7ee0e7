package nsjoin

import (
	"errors"
	"fmt"
)

var (
	// ErrBadRef: a reference is not "container:<ID>" with a valid ID.
	ErrBadRef = errors.New("invalid PID namespace reference")
	// ErrSelf: a container refers to its own PID namespace.
	ErrSelf = errors.New("reference to the container itself")
	// ErrNotFound: runc has no container of that ID in the root.
	ErrNotFound = errors.New("container does not exist")
	// ErrNotRunning: the target is created but not started, or its init
	// process is gone (exited, or its PID now belongs to another process).
	ErrNotRunning = errors.New("container not running")
	// ErrOtherPod: the two containers do not belong to the same pod.
	ErrOtherPod = errors.New("container of another pod")
	// ErrHostPID: the target shares the host's PID namespace.
	ErrHostPID = errors.New("container shares the host's PID namespace")
	// ErrUserns: the user namespace owning the target's PID namespace
	// cannot be joined.
	ErrUserns = errors.New("cannot join the target's user namespace")
)

// refusal is an error whose text is its message alone and that still
// answers errors.Is for its sentinel (and for a wrapped cause).
type refusal struct {
	kind error
	err  error
}

func (r *refusal) Error() string   { return r.err.Error() }
func (r *refusal) Unwrap() []error { return []error{r.kind, r.err} }

// refuse formats a message (which may wrap a cause with %w) and tags it
// with the sentinel kind.
func refuse(kind error, format string, args ...any) error {
	return &refusal{kind: kind, err: fmt.Errorf(format, args...)}
}
