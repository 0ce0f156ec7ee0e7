package nsjoin

import (
	"fmt"
	"io/fs"
	"path/filepath"
)

// validID is the fake of Lookup.ValidateID: runc's ID rule in the words
// of oci.ValidateID, which main passes.
func validID(id string) error {
	if id == "" {
		return fmt.Errorf("invalid container id %q: must not be empty", id)
	}
	if len(id) > 1024 {
		return fmt.Errorf("invalid container id %s: longer than 1024 bytes", short(id))
	}
	if id == "." || id == ".." {
		return fmt.Errorf("invalid container id %q: must not be %q", id, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_', c == '+', c == '-', c == '.':
		default:
			return fmt.Errorf("invalid container id %s: byte %q is not allowed (allowed: letters, digits, '_', '+', '-', '.')", short(id), c)
		}
	}
	return nil
}

// fakeLookup is a Lookup over states held in memory, by root and ID (the
// runtime adapter of main reads runc's state.json and exec.fifo).
type fakeLookup struct {
	states map[string]*State
	// pins, if set, answers UsernsPins.
	pins func(id string, annotations map[string]string) []string
}

func newLookup() *fakeLookup { return &fakeLookup{states: map[string]*State{}} }

func (f *fakeLookup) ValidateID(id string) error { return validID(id) }

func (f *fakeLookup) State(root, id string) (*State, error) {
	st, ok := f.states[filepath.Join(root, id)]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(root, id, "state.json"), Err: fs.ErrNotExist}
	}
	c := *st
	return &c, nil
}

func (f *fakeLookup) UsernsPins(id string, annotations map[string]string) []string {
	if f.pins == nil {
		return nil
	}
	return f.pins(id, annotations)
}

// set records the state of container id of root: its init, annotations,
// pod and the libcontainer types of its namespaces ("NEWPID", ...), as
// runc's state.json would give them.
func (f *fakeLookup) set(root, id string, pid int, start uint64, pod Pod, ann map[string]string, nsTypes ...string) *State {
	st := &State{InitPID: pid, InitStart: start, Annotations: ann, Pod: pod}
	for _, typ := range nsTypes {
		st.PIDNamespace = st.PIDNamespace || typ == "NEWPID"
	}
	f.states[filepath.Join(root, id)] = st
	return st
}
