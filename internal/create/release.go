package create

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/admin"
	"github.com/runc-userns/runc-userns/internal/fault"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/pool"
)

// DeleteStamp reads the verified stamp of container id from runc's state
// (has: runc has the container). A stamp that does not verify is logged
// and ignored (nil). One written under another config's stateDir verifies
// with that stateDir's key, when it is root-owned and private
// (verifyOwnStamp), and is released there. With no operator config on
// this call (podman passes no environment), the runc that created the
// container deletes it, unless the stamp verified only with another
// stateDir's key (oci.ForeignStampKey: no runtime to execute from it).
func (a *Call) DeleteStamp(root, id string) (stamp *oci.Stamp, has bool) {
	st, err := runc.ReadState(root, id)
	if err != nil {
		return nil, false
	}
	foreign := false
	if v, ok := st.Annotation(oci.AnnotationStamp); ok {
		if stamp, err = oci.DecodeStamp(v); err == nil {
			foreign, err = a.verifyOwnStamp(stamp, oci.Binding{ID: id, Root: root}, false)
		}
		if err != nil {
			hint := ""
			if stamp != nil && stamp.StateDir != "" && filepath.Clean(stamp.StateDir) != a.Cfg.StateDir {
				// Written for another stateDir: most likely this
				// call did not get the operator's config.
				hint = fmt.Sprintf(" (it was written for stateDir %s, this call's config %s names %s: nothing of the pod is released here; delete it with the operator's config, or run `runc-userns pool gc` with it)", stamp.StateDir, configName(a.Cfg), a.Cfg.StateDir)
			}
			a.Log.Warnf("container %s: ignoring its %s annotation: %v%s", id, oci.AnnotationStamp, err, hint)
			stamp = nil
		}
	}
	if foreign {
		a.Log.Infof("container %s: its stamp was written for stateDir %s (this call's config %s names %s): what it held is released there", id, stamp.StateDir, configName(a.Cfg), a.Cfg.StateDir)
	}
	if stamp != nil && !foreign && a.Cfg.Path == "" && stamp.Runtime != "" && stamp.Runtime != a.Runtime && executable(stamp.Runtime) {
		a.Runtime = stamp.Runtime
	}
	return stamp, true
}

// ReleaseDeleted releases what container id held once runc no longer has
// it: by its stamp's stateDir and pod, or without a stamp by the
// configured stateDir's records.
func (a *Call) ReleaseDeleted(root, id string, stamp *oci.Stamp) error {
	stateDir := a.Cfg.StateDir
	owner := ""
	if stamp != nil {
		stateDir, owner = stamp.StateDir, stamp.Owner
	}
	// No state.json, but a create of the ID may still be running (a
	// retried delete): what it has taken is not ours to release.
	// The marker stays locked until the release is done.
	marker, err := state.Layout(stateDir).HoldForRelease(root, id)
	if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	err = release(stateDir, root, id, owner, a.Log)
	if marker != nil {
		marker.Close()
	}
	if err != nil {
		pod := "its pod"
		if owner != "" {
			pod = "pod " + owner
		}
		return fmt.Errorf("container %s: deleted, but releasing what it held failed: %w (fix the cause, then delete it again or run `runc-userns pool gc`, which returns %s's range once none of its containers is alive)", id, err, pod)
	}
	return nil
}

// createWait bounds how long a delete waits for a create of the same ID
// that still runs (AwaitCreate): runc create itself, on a loaded node.
var createWait = 30 * time.Second

// AwaitCreate: err, from ReleaseDeleted, says a create of container id
// still held its marker, or made the container meanwhile. A runc create
// whose wrapper was killed goes on alone while its caller, told the create
// failed, deletes (containerd's shim does at once, and never again): the
// delete waits for that create to end, up to createWait, and reports
// whether the caller should run runc's delete again and release what the
// create made. Otherwise the container would stay created, its init
// holding the marker, its range, pin and staging mounts, with no one left
// to delete it.
func (a *Call) AwaitCreate(root, id string, stamp *oci.Stamp, err error) bool {
	switch {
	case errors.Is(err, state.ErrRuncHas):
		return true
	case !errors.Is(err, state.ErrMarkerBusy):
		return false
	}
	stateDir := a.Cfg.StateDir
	if stamp != nil {
		stateDir = stamp.StateDir
	}
	a.Log.Infof("container %s: a create of it still runs: waiting up to %s for it to end, to delete what it makes", id, createWait)
	return state.Layout(stateDir).AwaitCreate(root, id, createWait)
}

// releaseEarlier releases, in the stateDir it names, the container an
// earlier create of the bundle made under another config (its stamp,
// verified with that stateDir's key: verifyOwnStamp), once runc no longer
// has it: its delete ran under a config that named neither stateDir, or
// was lost. What cannot be released is logged: it is `pool gc`'s then,
// and the create goes on in the configured stateDir.
func (a *Call) releaseEarlier(st *oci.Stamp) {
	if state.RuncHas(st.Root, st.ID) {
		return // its own delete releases it
	}
	if err := a.ReleaseDeleted(st.Root, st.ID, st); err != nil {
		a.Log.Warnf("container %s: the earlier container %s of its bundle, created for stateDir %s: %v", a.Inv.ID, st.ID, st.StateDir, err)
		return
	}
	a.Log.Infof("container %s: released what the earlier container %s of its bundle held in stateDir %s (its stamp names it; this call's config %s names %s)", a.Inv.ID, st.ID, st.StateDir, configName(a.Cfg), a.Cfg.StateDir)
}

// release detaches a container's staging mount and takes it out of its
// pod's range; the pod's last container returns the range and unpins the
// pod's user namespace. Idempotent: containerd calls delete more than once.
//
// The in-flight marker goes last: a delete that found no state.json holds
// its lock meanwhile (state.Layout.HoldForRelease), and a lock excludes a
// create of the same ID only while the marker's path names the locked
// file.
func release(stateDir, root, id, owner string, log logrus.FieldLogger) error {
	lay := state.Layout(stateDir)
	if err := releaseContainer(lay, root, id, owner, log); err != nil {
		return err
	}
	return lay.RemoveInflight(root, id)
}

// releaseContainer is release but for the in-flight marker.
func releaseContainer(lay state.Layout, root, id, owner string, log logrus.FieldLogger) error {
	if err := admin.RemoveLeftovers(lay, root, id); err != nil {
		return err
	}
	stateDir := string(lay)
	if !admin.PoolExists(stateDir) {
		return nil // no pool here: nothing was ever allocated
	}
	p, err := pool.OpenExisting(stateDir)
	if err != nil {
		return err
	}
	p.SetHooks(admin.PoolHooks(stateDir, log))
	if owner == "" {
		// Killed before runc had the container: find it by membership.
		if owner, err = p.OwnerOf(root, id); err != nil || owner == "" {
			return err
		}
	}
	// Under the pods lock: a container of a pod without a sandbox
	// container may be taking a fresh range for the pod, and pinning it,
	// the moment this one returns the old range (podUserns).
	unlock, err := lay.LockPods()
	if err != nil {
		return err
	}
	defer unlock()
	freed, err := p.Leave(owner, id)
	if err != nil || !freed {
		return err
	}
	// Killed here, the pin outlives the range: a retried delete finds
	// no owner any more, and only `pool gc` drops it.
	fault.Point(fault.Released)
	return lay.UnpinPod(owner)
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
