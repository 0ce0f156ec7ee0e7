package main

import (
	"os"
	"path/filepath"

	"github.com/runc-userns/runc-userns/internal/oci"
)

// delete runs runc's delete, then releases what the container held. What it
// held is read from the container itself (the stamp on its spec, through
// runc's state, verified with the configured stateDir's key) and from the
// pool's member records, never from the environment: podman runs delete
// with no environment at all, and finds the operator's config at its
// default path.
func (a *app) delete() int {
	id := a.Inv.ID
	if oci.ValidateID(id) != nil {
		return a.Exec() // nothing of ours can exist for it; runc says why
	}
	root, err := filepath.Abs(a.Inv.Root)
	if err != nil {
		return a.Fail(err)
	}
	// A second round only when a create of the ID still ran: its wrapper
	// was killed, its runc was not (Call.AwaitCreate).
	for round := 0; ; round++ {
		stamp, has := a.Call.DeleteStamp(root, id)
		if has && stamp == nil {
			// runc has it and we never edited it (every spec we edit
			// carries a verified stamp): nothing of ours to release.
			return a.Exec()
		}
		a.Phases.Mark("state")
		status := a.Run()
		a.Phases.Mark("runc")
		if _, err := os.Stat(filepath.Join(root, id, "state.json")); err == nil {
			return status // runc still has it (e.g. running, no --force)
		}
		if err := a.Call.ReleaseDeleted(root, id, stamp); err != nil {
			if round == 0 && a.Call.AwaitCreate(root, id, stamp, err) {
				continue
			}
			if status == 0 {
				return a.Fail(err)
			}
			a.Log.Warn(err)
			return status
		}
		a.Phases.Mark("release")
		a.Log.Debugf("container %s: delete took %s", id, a.Phases)
		if status == 0 {
			a.Sink.Commit()
		}
		return status
	}
}
