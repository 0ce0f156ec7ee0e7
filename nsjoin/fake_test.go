package nsjoin

import (
	"bytes"
	"io"
	"io/fs"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/libuserns"
)

// validID is Lookup.ValidateID as main passes it: oci.ValidateID, which
// nsjoin itself does not import (the rule is the runtime's).
var validID = oci.ValidateID

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
	return libuserns.ParseMappings(bytes.NewReader(idMap))
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

// sysfsMod stands for internal/create's sysfs modifier.
type sysfsMod struct{}

func (sysfsMod) Modify(*specs.Spec) error { return nil }

// testLog discards the join's log lines.
func testLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
