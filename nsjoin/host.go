package nsjoin

import specs "github.com/opencontainers/runtime-spec/specs-go"

// Lookup is what Resolve needs to know of the world outside the package:
// the runtime's state of other containers and the wrapper's rules for IDs
// and pods. main adapts internal/runc and internal/oci to it; the tests
// have a hand-written fake. nsjoin imports neither.
type Lookup interface {
	// ValidateID checks a container ID by the runtime's rules (runc's:
	// letters, digits, '_', '+', '-', '.'; not "." or ".."; at most 1024
	// bytes), saying why not. A valid ID is a safe file name.
	ValidateID(id string) error
	// State reads the runtime's state of container id of runtime root
	// root, an error wrapping fs.ErrNotExist when the runtime has no such
	// container.
	State(root, id string) (*State, error)
	// UsernsPins lists paths that may already name the user namespace of
	// container id (with the given annotations, from State) for as long
	// as it lives: its pod's pin. A path is used only if it is that very
	// namespace (same nsfs inode); otherwise Resolve pins its own.
	UsernsPins(id string, annotations map[string]string) []string
}

// State is what a join reads of its target's runtime state. For runc:
// init_process_pid, init_process_start, config.labels (the annotations),
// config.namespaces and config.cgroups of <root>/<id>/state.json (the
// fields runc 1.1 to 1.5 all write alike), and whether <root>/<id>/exec.fifo
// exists.
type State struct {
	// InitPID and InitStart are the container's init process and its
	// start time (field 22 of /proc/<pid>/stat) as the runtime recorded
	// them when it started it.
	InitPID   int
	InitStart uint64
	// Annotations are the container's spec annotations.
	Annotations map[string]string
	// Pod is the pod the annotations put the container in.
	Pod Pod
	// Cgroup is the cgroup parent its spec named, "" for none.
	Cgroup string
	// PIDNamespace: its spec has a pid namespace entry (new or joined);
	// without one it shares the host's.
	PIDNamespace bool
	// Created: created but not started (runc's exec.fifo is there).
	Created bool
}

// Host is what Plan needs from outside the package: a Lookup, and the
// wrapper's user namespace tools (libuserns, and its check of a network
// namespace's owner), passed in because nsjoin imports no other domain
// package.
type Host interface {
	Lookup
	// ParseMappings parses an id map as /proc/<pid>/uid_map shows it.
	ParseMappings(idMap []byte) ([]specs.LinuxIDMapping, error)
	// UsernsModifier puts the container in the user namespace at path,
	// with the mappings in the spec unless they are nil.
	UsernsModifier(path string, uid, gid []specs.LinuxIDMapping) Modifier
	// ForeignNetns reports whether the spec joins a network namespace
	// that the user namespace at userns does not own, and names the
	// network namespace it joins ("" for a new one).
	ForeignNetns(s *specs.Spec, userns string) (foreign bool, netns string, err error)
}
