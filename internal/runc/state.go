package runc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// State is the part of runc's <root>/<id>/state.json that runc 1.1 to 1.5
// all write the same way: the stable interface to another container, read
// without starting a runc process.
type State struct {
	InitPID   int    `json:"init_process_pid"`
	InitStart uint64 `json:"init_process_start"`
	Config    struct {
		Labels     []string    `json:"labels"`
		Namespaces []Namespace `json:"namespaces"`
		Cgroups    Cgroups     `json:"cgroups"`
	} `json:"config"`
}

// Namespace is one of the container's namespaces in runc's state. Type is
// libcontainer's ("NEWPID", ...); Path names a joined one: runc 1.1 writes
// "path": "" for a new namespace, runc >= 1.2 leaves it out.
type Namespace struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

// Cgroups is runc's form of a spec's linux.cgroupsPath in its state: Path
// with the cgroupfs driver, Parent (the slice) with systemd's.
type Cgroups struct {
	Path   string `json:"path"`
	Parent string `json:"parent"`
}

// PodCgroup is the cgroup parent the spec named, as oci.PodCgroup reads
// it from a spec, or "" when it named none.
func (c Cgroups) PodCgroup() string {
	switch {
	case c.Parent != "":
		return c.Parent
	case c.Path != "":
		return filepath.Dir(filepath.Clean(c.Path))
	}
	return ""
}

// maxStateSize bounds what we read of a state file.
const maxStateSize = 16 << 20

// ReadState reads a container's runc state. It returns an error wrapping
// os.ErrNotExist when runc has no such container.
func ReadState(root, id string) (*State, error) {
	path := filepath.Join(root, id, "state.json")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeState(f, path)
}

// execFifo exists in a container's state directory from `runc create`
// until `runc start`.
const execFifo = "exec.fifo"

// Created reports whether runc has created container id of root but not
// started it: runc's own test for "created" (its exec.fifo is there).
func Created(root, id string) bool {
	_, err := os.Lstat(filepath.Join(root, id, execFifo))
	return err == nil
}

// ParseState is ReadState of data, the bytes read from path before.
func ParseState(data []byte, path string) (*State, error) {
	return decodeState(bytes.NewReader(data), path)
}

func decodeState(r io.Reader, path string) (*State, error) {
	var st State
	dec := json.NewDecoder(io.LimitReader(r, maxStateSize))
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("read runc state %s: %w", path, err)
	}
	return &st, nil
}

// Annotation returns the value of annotation key: runc keeps the spec's
// annotations as "key=value" labels (with "bundle=<path>" among them).
// It reads them back as runc does (libcontainer/utils.Annotations): the
// key ends at the first "=", and of a key given twice the last wins.
func (s *State) Annotation(key string) (string, bool) {
	v, found := "", false
	for _, l := range s.Config.Labels {
		if k, val, ok := strings.Cut(l, "="); ok && k == key {
			v, found = val, true
		}
	}
	return v, found
}

// Annotations returns all the labels as Annotation reads each.
func (s *State) Annotations() map[string]string {
	out := make(map[string]string, len(s.Config.Labels))
	for _, l := range s.Config.Labels {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

// HasNamespace reports whether the container has a namespace entry of
// libcontainer type t ("NEWPID", ...), new or joined: without one it
// shares the host's.
func (s *State) HasNamespace(t string) bool {
	for _, ns := range s.Config.Namespaces {
		if ns.Type == t {
			return true
		}
	}
	return false
}
