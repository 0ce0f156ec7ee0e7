package pool

import (
	"errors"
	"fmt"
)

// Sentinels, matched with errors.Is. Messages built on them name the value
// at fault and what the operator can do.
var (
	// ErrExhausted: every slot of the pool is held. Its text is the start
	// of the message the operator sees: "user namespace pool exhausted: N
	// of N ranges in use (see runc-userns pool ls)".
	ErrExhausted = errors.New("user namespace pool exhausted")
	// ErrOwnerConflict: the owner already holds a range under another
	// runc root.
	ErrOwnerConflict = errors.New("owner already holds a range under another runc root")
	// ErrUnknownOwner: Join was asked for an owner that holds no range.
	ErrUnknownOwner = errors.New("owner holds no range")
	// ErrInvalidConfig: the ranges, the slot size, the state directory or
	// the subordinate ID setup break a rule; the message states the rule.
	ErrInvalidConfig = errors.New("invalid user namespace pool configuration")
	// ErrHostConflict: a pool range holds an ID that the host already uses
	// (a user, a group or another owner's subordinate range).
	ErrHostConflict = errors.New("user namespace pool overlaps IDs in use on the host")
	// ErrCorruptState: a record (or a version 1 state file) cannot be
	// parsed, or the records break the pool's invariants (overlap, or not
	// on a slot of the pool).
	ErrCorruptState = errors.New("corrupt pool state")
	// ErrInUse: Release was asked for an owner some of whose members are
	// alive (Hooks.Alive).
	ErrInUse = errors.New("owner's range is in use")
)

// errorf formats a message that matches sentinel (errors.Is) without
// repeating the sentinel's text: a validation message reads as the rule it
// states, not as "invalid ...: invalid ...".
func errorf(sentinel error, format string, args ...any) error {
	return &sentinelError{sentinel, fmt.Sprintf(format, args...)}
}

type sentinelError struct {
	sentinel error
	msg      string
}

func (e *sentinelError) Error() string { return e.msg }
func (e *sentinelError) Unwrap() error { return e.sentinel }
