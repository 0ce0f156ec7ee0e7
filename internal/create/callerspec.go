package create

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/admin"
	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/pool"
)

// checkCallerMappings refuses a spec that brings its own uid/gid mappings
// (its user namespace's, or an idmapped mount's) into the host IDs of the
// user namespace pool. Those IDs belong to pods: a container mapped into
// them would share host IDs with a pod, which the pool exists to prevent
// (see SECURITY.md). Mappings elsewhere, host root included, are the
// caller's (the CRI's, kubelet's, the operator's) business and pass
// untouched. A node whose operator turned user namespaces off protects
// only the ranges that pods made before still hold (whatever its config
// says of ranges now), until they have given them back. Only specs that
// carry mappings pay for resolving the ranges.
func (a *Call) checkCallerMappings(s *specs.Spec) error {
	var all []mappingSource
	if s.Linux != nil {
		all = append(all, mappingSource{"linux.uidMappings", s.Linux.UIDMappings}, mappingSource{"linux.gidMappings", s.Linux.GIDMappings})
	}
	for i, m := range s.Mounts {
		all = append(all, mappingSource{fmt.Sprintf("mounts[%d] (%s) uidMappings", i, m.Destination), m.UIDMappings},
			mappingSource{fmt.Sprintf("mounts[%d] (%s) gidMappings", i, m.Destination), m.GIDMappings})
	}
	if err := a.checkMappingsOutsidePool(all); err != nil {
		return fmt.Errorf("container %s: %w", a.Inv.ID, err)
	}
	return nil
}

// mappingSource is one list of mappings a container brings, and where
// it is given.
type mappingSource struct {
	where string
	m     []specs.LinuxIDMapping
}

// checkMappingsOutsidePool is checkCallerMappings's rule, for any
// mappings the caller chose (its spec's, or those of a user namespace its
// spec joins): none reaches into the pool.
func (a *Call) checkMappingsOutsidePool(all []mappingSource) error {
	has := false
	for _, src := range all {
		has = has || len(src.m) > 0
	}
	if !has {
		return nil
	}
	var ranges []pool.Range
	var from, hint string
	if a.Cfg.Userns.Mode == config.ModeOff {
		if !admin.PoolExists(a.Cfg.StateDir) {
			return nil
		}
		held, err := a.heldRanges() // none once those pods are gone
		if err != nil {
			return fmt.Errorf("checking its uid/gid mappings against the ranges pods still hold in %s: %w", a.Cfg.StateDir, err)
		}
		ranges, from = held, "held by a pod made before userns.mode was turned off"
		hint = "map host IDs outside it, or delete the pods that still hold ranges first (`runc-userns pool ls` lists them)"
	} else {
		var err error
		ranges, from, err = pool.ResolveRanges(a.Cfg.Userns.Ranges, a.Cfg.Userns.SubidUser, pool.DefaultSourceEnv())
		if err != nil {
			return fmt.Errorf("checking its uid/gid mappings against the user namespace pool: %w", err)
		}
		from = "from " + from
		hint = "map host IDs outside the pool, or have the operator move the pool (userns.ranges in " + configName(a.Cfg) + ")"
	}
	for _, src := range all {
		for _, e := range src.m {
			mapped := pool.Range{HostID: e.HostID, Size: e.Size}
			for _, r := range ranges {
				if mapped.Overlaps(r) {
					return fmt.Errorf("%s maps container IDs %d-%d to host IDs %d-%d, inside the user namespace pool (%s, %s): those host IDs belong to pods and are never shared; %s",
						src.where, e.ContainerID, uint64(e.ContainerID)+uint64(e.Size)-1, e.HostID, uint64(e.HostID)+uint64(e.Size)-1, r, from, hint)
				}
			}
		}
	}
	return nil
}

// heldRanges lists the host ID ranges the pool in stateDir has given out.
func (a *Call) heldRanges() ([]pool.Range, error) {
	p, err := pool.OpenExisting(a.Cfg.StateDir)
	if err != nil {
		return nil, err
	}
	p.SetHooks(admin.PoolHooks(a.Cfg.StateDir, a.Log))
	allocs, err := p.List()
	if err != nil {
		return nil, err
	}
	out := make([]pool.Range, len(allocs))
	for i, al := range allocs {
		out[i] = pool.Range{HostID: al.HostID, Size: al.Size}
	}
	return out, nil
}

// checkCallerUserns refuses a user namespace path that is not a user
// namespace (runc would report only "no uid mappings found"). The path is
// not opened unless it is a regular file: nsfs files are, and opening a
// device or FIFO planted there could block or have side effects.
func (a *Call) checkCallerUserns(s *specs.Spec) error {
	if s.Linux == nil {
		return nil
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != specs.UserNamespace || ns.Path == "" {
			continue
		}
		if err := libuserns.IsUserns(ns.Path, oci.FileKind); err != nil {
			return fmt.Errorf("container %s: linux.namespaces: user namespace path %s: %w; give the path of a user namespace (/proc/<pid>/ns/user or a bind mount of one), or none", a.Inv.ID, ns.Path, err)
		}
	}
	return nil
}
