package create

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/libuserns"
)

// verifyStamp checks a stamp's MAC with this node's key, the configured
// stateDir's (never with a key from a directory the pod author could
// write: a root-owned file of 32 bytes in a volume of a pod that runs as
// host root would do), and that it was written for container b
// (oci.Stamp.Verify; bound: not a stamp of an earlier release).
func (a *Call) verifyStamp(st *oci.Stamp, b oci.Binding, bound bool) error {
	key, err := oci.StampKey(a.Cfg.StateDir, false)
	if err != nil {
		return err
	}
	return st.Verify(key, b, bound)
}

// verifyOwnStamp is verifyStamp for the container's own stamp, at its
// delete, exec or re-create: one that names another stateDir than the
// configured one (written under another config: podman runs delete with
// no environment, and a restart's create may get another config than the
// first) verifies with that stateDir's key instead, when that stateDir and
// its key are root-owned and private as a configured one is
// (oci.ForeignStampKey). foreign says so: what the stamp names is then
// that stateDir's to release. A join of another container's namespaces
// takes only this node's stamps (verifyStamp): its pod is in the
// configured pool.
func (a *Call) verifyOwnStamp(st *oci.Stamp, b oci.Binding, bound bool) (foreign bool, err error) {
	err = a.verifyStamp(st, b, bound)
	sd := filepath.Clean(st.StateDir)
	if err == nil || st.StateDir == "" || sd == a.Cfg.StateDir || errors.Is(err, oci.ErrCopiedStamp) || errors.Is(err, oci.ErrUnboundStamp) {
		return false, err
	}
	key, kerr := oci.ForeignStampKey(sd)
	if kerr != nil {
		return false, fmt.Errorf("%w; it names stateDir %s, whose key is not taken: %w", err, sd, kerr)
	}
	if err := st.Verify(key, b, bound); err != nil {
		return false, err
	}
	return true, nil
}

// stampRefused is create's error for a bundle whose config.json carries a
// stamp that does not verify for this container.
func (a *Call) stampRefused(st *oci.Stamp, err error) error {
	const regen = "the file may carry the edits of that earlier create too (root.path, mounts, user namespace): regenerate the bundle's config.json rather than only removing the annotation"
	id := a.Inv.ID
	switch {
	case errors.Is(err, oci.ErrCopiedStamp):
		return fmt.Errorf("container %s: config.json carries a %s annotation of another container (%w): a stamp is bound to the container it was written for, and a copy is refused; %s", id, oci.AnnotationStamp, err, regen)
	case errors.Is(err, oci.ErrUnboundStamp):
		return fmt.Errorf("container %s: config.json carries a %s annotation written by an earlier runc-userns (%w), which a create no longer takes; %s", id, oci.AnnotationStamp, err, regen)
	}
	// The stamp names the stateDir it was written for: a bundle created
	// again after the operator moved stateDir says so.
	dir := a.Cfg.StateDir
	if sd := st.StateDir; sd != "" && filepath.Clean(sd) != dir {
		dir = sd + " (configured now: " + a.Cfg.StateDir + ")"
	}
	return fmt.Errorf("container %s: config.json carries a %s annotation that this node did not write (forged, or written before stateDir %s was cleared or moved): %w; %s", id, oci.AnnotationStamp, dir, err, regen)
}

// undoStamp reverts the edits an earlier create of the same bundle made,
// so they are not taken for the caller's mappings or rootfs.
func undoStamp(s *specs.Spec, st *oci.Stamp) {
	if st.UsernsPath != "" {
		libuserns.Remove(s, st.UsernsPath)
	}
	if st.JoinedMappings && s.Linux != nil {
		s.Linux.UIDMappings, s.Linux.GIDMappings = nil, nil
	}
	if s.Linux != nil {
		for i, ns := range s.Linux.Namespaces {
			if path, ok := st.PodNS[string(ns.Type)]; ok {
				s.Linux.Namespaces[i].Path = path
			}
		}
	}
	if st.Netns != "" && s.Linux != nil {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: st.Netns})
	}
	if len(st.NetSysctls) > 0 && s.Linux != nil {
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		for k, v := range st.NetSysctls {
			s.Linux.Sysctl[k] = v
		}
	}
	if st.Staged != "" && s.Root != nil && s.Root.Path == st.Staged {
		s.Root.Path = st.Rootfs
	}
	if len(st.Mounts) > 0 {
		var mounts []specs.Mount
		if json.Unmarshal(st.Mounts, &mounts) == nil {
			s.Mounts = mounts
		}
	}
	delete(s.Annotations, oci.AnnotationStamp)
	delete(s.Annotations, oci.AnnotationIdmapSkipped)
}
