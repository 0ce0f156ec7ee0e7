package nsjoin

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/runc-userns/runc-userns/internal/runc"
)

// state is the part of runc's <root>/<id>/state.json that runc 1.1 to 1.5
// all write alike. Namespace types are libcontainer's ("NEWPID", ...);
// runc 1.1 writes "path": "" for a new namespace, runc >= 1.2 omits it.
type state struct {
	InitPID   int    `json:"init_process_pid"`
	InitStart uint64 `json:"init_process_start"`
	Config    struct {
		Labels     []string `json:"labels"`
		Namespaces []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		} `json:"namespaces"`
		Cgroups runc.Cgroups `json:"cgroups"`
	} `json:"config"`
}

// podCgroup is the cgroup parent the container's spec named (the one
// oci.PodCgroup reads from a spec), or "" when it named none.
func (s *state) podCgroup() string { return s.Config.Cgroups.PodCgroup() }

// maxStateSize bounds what we read of a state file (as runc's reader).
const maxStateSize = 16 << 20

// execFifo exists in a container's state directory from `runc create`
// until `runc start`: runc's own test for "created".
const execFifo = "exec.fifo"

// readState reads a container's runc state. An error wraps os.ErrNotExist
// when runc has no such container.
func readState(root, id string) (*state, error) {
	path := filepath.Join(root, id, "state.json")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st state
	if err := json.NewDecoder(io.LimitReader(f, maxStateSize)).Decode(&st); err != nil {
		return nil, fmt.Errorf("read runc state %s: %w", path, err)
	}
	return &st, nil
}

// annotations returns the spec annotations runc keeps as "key=value"
// labels; runc adds "bundle=<path>" among them.
func (s *state) annotations() map[string]string {
	out := make(map[string]string, len(s.Config.Labels))
	for _, l := range s.Config.Labels {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

// newPID reports whether the container was given a PID namespace entry
// (new or joined); without one it runs in the host's.
func (s *state) newPID() bool {
	for _, ns := range s.Config.Namespaces {
		if ns.Type == "NEWPID" {
			return true
		}
	}
	return false
}
