package nsjoin

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
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

// fakeHost is a Host: a fakeLookup, a parser of id maps as
// libuserns.ParseMappings parses them, usernsMod for the user namespace
// modifier, and a fixed answer for ForeignNetns.
type fakeHost struct {
	*fakeLookup
	foreign bool   // ForeignNetns's answer
	netns   string // the network namespace it names
}

func newHost() *fakeHost { return &fakeHost{fakeLookup: newLookup()} }

func (*fakeHost) ParseMappings(idMap []byte) ([]specs.LinuxIDMapping, error) {
	var out []specs.LinuxIDMapping
	for _, line := range strings.Split(string(idMap), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("id map line %q: want 3 fields, have %d", line, len(f))
		}
		var v [3]uint32
		for i := range f {
			n, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("id map line %q: %w", line, err)
			}
			v[i] = uint32(n)
		}
		out = append(out, specs.LinuxIDMapping{ContainerID: v[0], HostID: v[1], Size: v[2]})
	}
	return out, nil
}

func (*fakeHost) UsernsModifier(path string, uid, gid []specs.LinuxIDMapping) Modifier {
	return usernsMod{Path: path, UID: uid, GID: gid}
}

func (h *fakeHost) ForeignNetns(*specs.Spec, string) (bool, string, error) {
	return h.foreign, h.netns, nil
}

// usernsMod stands for libuserns.Modifier: it records what it was given
// and sets the spec's user namespace path.
type usernsMod struct {
	Path     string
	UID, GID []specs.LinuxIDMapping
}

func (m usernsMod) Modify(s *specs.Spec) error {
	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace, Path: m.Path})
	s.Linux.UIDMappings, s.Linux.GIDMappings = m.UID, m.GID
	return nil
}

// sysfsMod stands for main's sysfs modifier.
type sysfsMod struct{}

func (sysfsMod) Modify(*specs.Spec) error { return nil }

// testLog discards the join's log lines.
func testLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
