package nsjoin

import (
	"strconv"
	"strings"
)

// RefPrefix starts a reference to another container's namespace, in the
// pid-namespace annotation or as a linux.namespaces path (the form
// dockershim used for a pod's shared PID namespace).
const RefPrefix = "container:"

// ParseRef parses a namespace path. ok is false, with no error, for
// anything that is not a reference (an absolute path such as
// /proc/42/ns/pid, or ""): it is the runtime's to interpret. A string
// that starts like a reference but is not a valid one is an error
// wrapping ErrBadRef: "container:" with an invalid or empty ID, or the
// prefix in another case ("Container:x"), which a runtime would otherwise
// take for a relative path. validID is the runtime's ID rule
// (Lookup.ValidateID).
func ParseRef(s string, validID func(string) error) (id string, ok bool, err error) {
	if !LooksLikeRef(s) {
		return "", false, nil
	}
	if !strings.HasPrefix(s, RefPrefix) {
		return "", false, refuse(ErrBadRef, "invalid PID namespace reference %s: the prefix is %q, in lower case", short(s), RefPrefix)
	}
	id = s[len(RefPrefix):]
	if err := validID(id); err != nil {
		return "", false, refuse(ErrBadRef, "invalid PID namespace reference %s: want %s<ID>: %w", short(s), RefPrefix, err)
	}
	return id, true, nil
}

// LooksLikeRef reports whether s starts with RefPrefix in any case: what
// ParseRef either accepts or refuses, never passes on.
func LooksLikeRef(s string) bool {
	return len(s) >= len(RefPrefix) && strings.EqualFold(s[:len(RefPrefix)], RefPrefix)
}

// ParseAnnotation parses the value of the pid-namespace annotation, which
// must be a reference (surrounding blanks are ignored); validID as for
// ParseRef.
func ParseAnnotation(v string, validID func(string) error) (string, error) {
	v = strings.TrimSpace(v)
	id, ok, err := ParseRef(v, validID)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", refuse(ErrBadRef, "invalid PID namespace reference %s: want %s<ID>, the ID of a container of the same pod", short(v), RefPrefix)
	}
	return id, nil
}

// short quotes s for an error message, cut to its first 40 bytes: pod
// authors write references, and an error must stay one readable line.
func short(s string) string {
	const max = 40
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:max]) + "..."
}
