package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/admin"
	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/fault"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/netns"
	"github.com/runc-userns/runc-userns/nsjoin"
	"github.com/runc-userns/runc-userns/pool"
)

// modifier is one edit of the spec: no argv, no environment, no I/O.
type modifier interface {
	Modify(*specs.Spec) error
}

// create runs the create/run pipeline: load config.json → Request → plan
// (the only step that touches the outside world) → modifiers → validate →
// atomic write → run runc. What the plan took is given back if runc fails.
func (a *app) create() int {
	inv := a.inv
	if err := oci.ValidateID(inv.ID); err != nil {
		if a.asksForUs() != "" {
			return a.fail(fmt.Errorf("%w: container IDs become file names of runc and runc-userns; nothing was created", err))
		}
		// runc refuses it in its own words; nothing of ours is named
		// after an ID it refuses.
		return a.exec()
	}
	bundle, err := bundleDir(inv.Bundle)
	if err != nil {
		return a.fail(fmt.Errorf("container %s: %w", inv.ID, err))
	}
	doc, err := oci.Load(bundle)
	if err != nil {
		return a.fail(fmt.Errorf("container %s: %w", inv.ID, err))
	}
	a.ph.Mark("load")
	req, want, untouched, err := a.createPlan(doc, bundle)
	if err != nil {
		return a.fail(err)
	}
	if untouched {
		// Only undoing an earlier create's edits can have changed the
		// spec: without a stamp there is nothing to encode or write.
		if req.Stamp != nil {
			if _, err := doc.Flush(); err != nil {
				return a.fail(fmt.Errorf("container %s: %w", inv.ID, err))
			}
		}
		return a.exec()
	}

	c := &creation{app: a, id: inv.ID, bundle: bundle, req: req, want: want, caps: doc.Capabilities}
	a.ph.Mark("request")
	status := c.do(doc)
	a.log.Debugf("container %s: %s took %s", inv.ID, inv.Command, a.ph)
	if status == 0 {
		a.sink.Commit()
	} else {
		a.sink.Discard()
	}
	return status
}

// createUnscanned handles a create or run whose argv holds a flag the
// scanner does not know: runc gets it as it is, unless the spec asks for a
// pool user namespace (or its pod has one). Without the rest of argv
// understood the wrapper cannot edit the spec, and the container would run
// without its user namespace, as host root: such a create is refused.
func (a *app) createUnscanned() int {
	why := a.asksForUs()
	if why == "" {
		return a.exec()
	}
	bundle := a.inv.Bundle
	if bundle == "" {
		bundle = "the current directory"
	}
	return a.fail(fmt.Errorf("runc-userns does not know the flag %s of `runc %s`, so it cannot read the rest of the arguments; the bundle (%s) needs runc-userns: %s. Refusing the %s rather than running the container without its user namespace, as host root: run it without that flag, or use a runc-userns that knows it (and report it if none does)", a.inv.UnknownFlag, a.inv.Command, bundle, why, a.inv.Command))
}

// createPlan reads what a create asks of the wrapper from its loaded spec,
// after checking the caller's own user namespace and mappings, and undoes
// an earlier create's edits of the bundle (a stamp). want: a pool user
// namespace. untouched: the call goes to runc as it is.
func (a *app) createPlan(doc *oci.Document, bundle string) (req oci.Request, want, untouched bool, err error) {
	id := a.inv.ID
	if req, err = oci.ParseRequest(id, doc.Spec.Annotations); err != nil {
		return req, false, false, err
	}
	for _, k := range req.Unknown {
		a.log.Warnf("container %s: unknown annotation %s ignored (known: %s, %s, %s)", id, k, oci.AnnotationUserns, oci.AnnotationPIDNamespace, oci.AnnotationIdmapSkip)
	}
	if req.Stamp != nil {
		if err := a.verifyStamp(req.Stamp, oci.Binding{Bundle: bundle}, true); err != nil {
			return req, false, false, a.stampRefused(req.Stamp, err)
		}
		undoStamp(doc.Spec, req.Stamp)
		a.log.Debugf("container %s: undid the edits of an earlier create of bundle %s", id, bundle)
	}
	if err := a.checkCallerMappings(doc.Spec); err != nil {
		return req, false, false, err
	}
	if err := a.checkCallerUserns(doc.Spec); err != nil {
		return req, false, false, err
	}
	if want, err = a.wantUserns(doc.Spec, req, doc.Capabilities); err != nil {
		return req, false, false, err
	}
	untouched = !want && !idmap.Requested(doc.Spec) && !nsjoin.Wanted(doc.Spec, req.PIDNamespace)
	return req, want, untouched, nil
}

// podIsPooled reports whether the container is an app container of a pod
// whose sandbox holds a pool user namespace (its pin exists: one lstat).
func (a *app) podIsPooled(pod oci.Pod) bool {
	if !pod.InPod || pod.Sandbox || oci.ValidateID(pod.Owner) != nil || !filepath.IsAbs(a.cfg.StateDir) {
		return false
	}
	_, err := os.Lstat(state.Layout(a.cfg.StateDir).Pin(pod.Owner))
	return err == nil
}

// followSandbox: an app container of a pod follows its sandbox's verdict,
// which the sandbox's create made once and recorded as the pod's pin:
// every container of a pod shares its user namespace (KEP-127), and one
// that decided on its own could be real root beside a pod that is not,
// or want a user namespace its pod does not have. pooled: the pod has
// one. An app container that asks for auto itself, or has a user
// namespace of its own, is not followSandbox's.
func (a *app) followSandbox(s *specs.Spec, req oci.Request, caps capsOf, pooled bool) (bool, error) {
	always := a.cfg.Userns.Mode == config.ModeAlways
	switch {
	case pooled && !nsjoin.Wanted(s, req.PIDNamespace):
		return a.joinPooledPod(s, req, caps)
	case pooled:
		// A container:<ID> join takes its target's user namespace
		// (nsjoin), which is the pod's: compared with the pin when the
		// mode gives the container the pod's anyway.
		return always, nil
	case always && req.Userns != oci.UsernsHost:
		a.log.Infof("container %s: its pod %s's sandbox is not in a user namespace from the pool (the sandbox shares a host namespace, or was created before userns.mode always or without runc-userns): the container stays in the host's user namespace with it", a.inv.ID, req.Pod.Owner)
	}
	return false, nil
}

// joinPooledPod: an app container whose pod runs in a pool user namespace
// but whose own spec does not ask for it. All containers of a pod share
// its user namespace (KEP-127), and one in the host's would be real root
// beside a pod that is not: it joins, whatever the node's mode. CRI-O
// does not copy pod annotations to containers as containerd's
// pod_annotations does, nor does a containerd without that setting. A
// container that asks for the host's, or shares a host namespace, is
// refused. A privileged one stays in the host's user namespace under
// mode always, and is refused otherwise (its pod asked for auto).
func (a *app) joinPooledPod(s *specs.Spec, req oci.Request, caps capsOf) (bool, error) {
	id, owner := a.inv.ID, req.Pod.Owner
	if req.Userns == oci.UsernsHost {
		return false, fmt.Errorf("container %s asks for the host's user namespace (%s=host), but its pod %s runs in a user namespace from runc-userns's pool, which all containers of a pod share: drop the annotation, or recreate the pod without %s=auto", id, oci.AnnotationUserns, owner, oci.AnnotationUserns)
	}
	if shared := hostNamespaces(s, hostNSDirs); len(shared) > 0 {
		return false, fmt.Errorf("container %s shares the host's %v namespace, but its pod %s runs in a user namespace from runc-userns's pool, which cannot: drop the host namespace, or recreate the pod without %s=auto", id, shared, owner, oci.AnnotationUserns)
	}
	priv, err := privileged(s, caps)
	if err != nil {
		return false, fmt.Errorf("container %s: %w", id, err)
	}
	if priv {
		if a.cfg.Userns.Mode == config.ModeAlways {
			a.log.Infof("container %s is privileged: it stays in the host's user namespace (userns.mode always), beside its pod %s, whose other containers keep the pod's user namespace from the pool; a privileged container is host root by design, and its capabilities would count for nothing in a user namespace", id, owner)
			return false, nil
		}
		return false, fmt.Errorf("container %s is privileged, but its pod %s runs in a user namespace from runc-userns's pool (%s=auto), where a privileged container's capabilities count for nothing against the host's devices, network namespace and /sys: drop privileged, or recreate the pod without %s=auto", id, owner, oci.AnnotationUserns, oci.AnnotationUserns)
	}
	a.log.Infof("container %s: its pod %s runs in a user namespace from the pool: the container joins it (its spec has no %s annotation; is the runtime handler's pod_annotations set?)", id, owner, oci.AnnotationUserns)
	return true, nil
}

// capsOf returns the spec's process.capabilities (oci.Document.Capabilities:
// decoded only when asked).
type capsOf func() (*specs.LinuxCapabilities, error)

func privileged(s *specs.Spec, caps capsOf) (bool, error) {
	c, err := caps()
	if err != nil {
		return false, err
	}
	return libuserns.Privileged(s, c), nil
}

// wantUserns decides whether this container gets a pool user namespace.
// An app container of a pod follows its sandbox (followSandbox), unless
// it asks for auto itself.
func (a *app) wantUserns(s *specs.Spec, req oci.Request, caps capsOf) (bool, error) {
	id, mode := a.inv.ID, a.cfg.Userns.Mode
	explicit := req.Userns == oci.UsernsAuto
	if !explicit && !libuserns.HasUserns(s) && req.Pod.InPod && !req.Pod.Sandbox {
		return a.followSandbox(s, req, caps, a.podIsPooled(req.Pod))
	}
	if explicit && mode == config.ModeOff {
		return false, fmt.Errorf("container %s asks for a user namespace (%s=auto) but the node's operator turned them off (userns.mode %q in %s): remove the annotation or ask the operator to enable them", id, oci.AnnotationUserns, mode, configName(a.cfg))
	}
	if !explicit && (mode != config.ModeAlways || req.Userns == oci.UsernsHost) {
		return false, nil
	}
	if libuserns.HasUserns(s) {
		if explicit {
			a.log.Infof("container %s: the spec already sets a user namespace or uid/gid mappings: the caller's mappings win over %s=auto, nothing allocated", id, oci.AnnotationUserns)
		}
		return false, nil
	}
	if shared := hostNamespaces(s, hostNSDirs); len(shared) > 0 {
		if explicit {
			return false, fmt.Errorf("container %s asks for %s=auto but shares the host's %v namespace: a pod in its own user namespace cannot (Kubernetes refuses hostUsers: false with hostNetwork, hostPID and hostIPC too); drop the annotation or the host namespace", id, oci.AnnotationUserns, shared)
		}
		a.log.Infof("container %s: shares the host's %v namespace: no user namespace (userns.mode always)", id, shared)
		return false, nil
	}
	priv, err := privileged(s, caps)
	if err != nil {
		return false, fmt.Errorf("container %s: %w", id, err)
	}
	if priv {
		if explicit {
			return false, fmt.Errorf("container %s asks for %s=auto but is privileged: in a user namespace its capabilities count for nothing against the host's devices, network namespace and /sys, so it would not get what privileged promises; drop the annotation or privileged", id, oci.AnnotationUserns)
		}
		a.log.Infof("container %s is privileged: no user namespace (userns.mode always); a privileged container is host root by design", id)
		return false, nil
	}
	return true, nil
}

// hostNSDirs are where the host's namespaces are read: the wrapper's own
// (it is started in the host's namespaces, by containerd's shim, CRI-O or
// conmon), then PID 1's, which root cannot read on some machines (a PID 1
// holding a capability the rest of the machine lacks).
var hostNSDirs = []string{"/proc/self/ns", "/proc/1/ns"}

// hostNamespaces lists the namespaces among network, pid and ipc that the
// container shares with the host: no entry, or a path to the host's own
// (the same namespace as one in nsDirs, hostNSDirs but in tests).
func hostNamespaces(s *specs.Spec, nsDirs []string) []specs.LinuxNamespaceType {
	var shared []specs.LinuxNamespaceType
	for _, t := range []specs.LinuxNamespaceType{specs.NetworkNamespace, specs.PIDNamespace, specs.IPCNamespace} {
		found, host := false, false
		if s.Linux != nil {
			for _, ns := range s.Linux.Namespaces {
				if ns.Type != t {
					continue
				}
				found = true
				host = ns.Path != "" && slices.ContainsFunc(nsDirs, func(dir string) bool {
					return sameFile(ns.Path, filepath.Join(dir, procNSName(t)))
				})
			}
		}
		if !found || host {
			shared = append(shared, t)
		}
	}
	return shared
}

func procNSName(t specs.LinuxNamespaceType) string {
	if t == specs.NetworkNamespace {
		return "net"
	}
	return string(t)
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

func configName(c *config.Config) string {
	if c.Path == "" {
		return config.DefaultPath + " (absent: defaults)"
	}
	return c.Path
}

// bundleDir is --bundle, else the working directory (runc's rule).
func bundleDir(flag string) (string, error) {
	if flag == "" {
		return os.Getwd()
	}
	return filepath.Abs(flag)
}

// verifyStamp checks a stamp's MAC with this node's key, the configured
// stateDir's (never with a key from the directory the stamp names: that
// is the pod author's to write, a root-owned file of 32 bytes in a volume
// of a pod that runs as host root would do), and that it was written for
// container b (oci.Stamp.Verify; bound: not a stamp of an earlier release).
func (a *app) verifyStamp(st *oci.Stamp, b oci.Binding, bound bool) error {
	key, err := oci.StampKey(a.cfg.StateDir, false)
	if err != nil {
		return err
	}
	return st.Verify(key, b, bound)
}

// stampRefused is create's error for a bundle whose config.json carries a
// stamp that does not verify for this container.
func (a *app) stampRefused(st *oci.Stamp, err error) error {
	const regen = "the file may carry the edits of that earlier create too (root.path, mounts, user namespace): regenerate the bundle's config.json rather than only removing the annotation"
	id := a.inv.ID
	switch {
	case errors.Is(err, oci.ErrCopiedStamp):
		return fmt.Errorf("container %s: config.json carries a %s annotation of another container (%w): a stamp is bound to the container it was written for, and a copy is refused; %s", id, oci.AnnotationStamp, err, regen)
	case errors.Is(err, oci.ErrUnboundStamp):
		return fmt.Errorf("container %s: config.json carries a %s annotation written by an earlier runc-userns (%w), which a create no longer takes; %s", id, oci.AnnotationStamp, err, regen)
	}
	// The stamp names the stateDir it was written for: a bundle created
	// again after the operator moved stateDir says so.
	dir := a.cfg.StateDir
	if sd := st.StateDir; sd != "" && filepath.Clean(sd) != dir {
		dir = sd + " (configured now: " + a.cfg.StateDir + ")"
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

// creation is the context of one create/run that the wrapper acts on:
// who asks (the container, its bundle and runc root), what it asks (the
// request) and where the node keeps its state. What the container gets is
// the plan.
type creation struct {
	*app
	id, bundle string
	req        oci.Request
	want       bool // a pool user namespace, as the request and the node's mode decide
	caps       capsOf
	root       string
	lay        state.Layout
	p          *plan // what creation.plan took and decided, once it ran
}

// plan is what the container gets: every lookup, allocation, pin and
// staging step of creation.plan records its result here and pushes its
// undo. The rest of the create only reads it: the spec edits are pure
// functions of it (modifiers), start starts runc as it says, and rollback
// undoes exactly what it took.
type plan struct {
	marker     *os.File       // the locked in-flight marker (package state)
	poolUserns bool           // the pod's user namespace from the pool (c.want, unless a container:<ID> join takes its target's)
	feat       *runc.Features // the real runtime's
	stamp      *oci.Stamp     // the record of every edit, signed
	pool       *pool.Pool     // the pool the container's range is from, if any
	join       *nsjoin.Join   // a resolved container:<ID> reference
	netjoin    netns.Record   // the network namespace runc starts in (planNetns)
	netSysctls netns.Sysctls  // written into a foreign network namespace before runc starts (planNetns)
	staging    bool           // the container directory is a StageDir (stageContainerDir)
	undo       []func() error

	// What the spec gets besides the stamp and the join's edits.
	userns      *libuserns.Modifier           // the pod's user namespace (planUserns)
	rootfs      string                        // the staged rootfs root.path points at (planUserns)
	foreignNet  *foreignNet                   // a network namespace the pod's user namespace does not own (planNetns)
	mounts      *mountPlan                    // the bind mounts' idmapping (planMounts)
	joinedMaps  *libuserns.Modifier           // a joined user namespace's mappings, for runc 1.1 (planJoinedUserns)
	lockedFlags libuserns.LockedFlagsModifier // the bind mounts' locked flags, for a pool user namespace
}

// foreignNet is what planNetns decided for a pod's network namespace that
// its user namespace does not own.
type foreignNet struct {
	sysctls bool // the net.* sysctls leave the spec (netSysctls writes them)
	enter   bool // the namespace leaves the spec (runc starts in it: netjoin)
	native  bool // the runtime knows "rro" (the bind of /sys)
}

// modifiers are the spec edits the plan calls for, in order: the join's,
// the user namespace and rootfs, the network namespace's, the mounts',
// and last the stamp that records them.
func (p *plan) modifiers() []modifier {
	var mods []modifier
	if p.join != nil {
		for _, m := range p.join.Modifiers() {
			mods = append(mods, m)
		}
	}
	if p.userns != nil {
		mods = append(mods, *p.userns, rootfsModifier(p.rootfs))
	}
	if p.joinedMaps != nil {
		mods = append(mods, *p.joinedMaps)
	}
	if n := p.foreignNet; n != nil {
		if n.sysctls {
			mods = append(mods, netns.SysctlModifier{})
		}
		if n.enter {
			mods = append(mods, netns.InheritModifier{})
		}
		mods = append(mods, netns.SysfsModifier{Native: n.native})
	}
	if p.mounts != nil {
		mods = append(mods, p.mounts.modifiers()...)
	}
	if p.lockedFlags != nil {
		mods = append(mods, p.lockedFlags)
	}
	return append(mods, stampModifier{p.stamp})
}

// rollback undoes what the plan took, last first.
func (c *creation) rollback() {
	for i := len(c.p.undo) - 1; i >= 0; i-- {
		if err := c.p.undo[i](); err != nil {
			c.log.Warnf("container %s: cleanup after a failed %s: %v", c.id, c.inv.Command, err)
		}
	}
	c.p.undo = nil
}

// do runs the create: lock the ID → plan → modify → validate → write →
// start runc → keep what the container holds, or roll back.
func (c *creation) do(doc *oci.Document) int {
	var err error
	if c.root, err = filepath.Abs(c.inv.Root); err != nil {
		return c.fail(err)
	}
	c.lay = state.Layout(c.cfg.StateDir)
	// Nothing is taken for a container runc has or another create is
	// making: everything taken below is named after its ID, and undone
	// by ID if this create fails.
	marker, err := c.lay.AcquireInflight(c.root, c.id)
	if errors.Is(err, state.ErrRuncHas) {
		return c.exec()
	}
	if err != nil {
		return c.fail(fmt.Errorf("container %s: %w", c.id, err))
	}
	c.p = &plan{marker: marker}
	c.p.undo = append(c.p.undo, func() error {
		err := c.lay.RemoveInflight(c.root, c.id)
		marker.Close()
		return err
	})
	err = c.plan(doc.Spec)
	c.ph.Mark("stamp")
	if err == nil {
		err = c.apply(doc)
	}
	if err != nil {
		c.rollback()
		return c.fail(fmt.Errorf("container %s: %w", c.id, err))
	}
	if st := c.p.stamp; c.p.poolUserns {
		c.log.Infof("container %s: pod %s runs in user namespace %s, uid/gid 0-%d -> host %d-%d, rootfs idmapped at %s", c.id, st.Owner, st.UsernsPath, st.Size-1, st.HostID, uint64(st.HostID)+uint64(st.Size)-1, st.Staged)
	}
	return c.start(doc.Spec)
}

// apply edits the spec as the plan says, checks the result against the
// plan's stamp and writes it back.
func (c *creation) apply(doc *oci.Document) error {
	for _, m := range c.p.modifiers() {
		if err := m.Modify(doc.Spec); err != nil {
			return err
		}
	}
	if err := oci.Validate(doc.Spec, c.p.stamp); err != nil {
		return err
	}
	c.ph.Mark("modify")
	_, err := doc.Flush()
	fault.Point(fault.Written)
	c.ph.Mark("write")
	return err
}

// start runs runc on the written spec s, in the network namespace the
// plan entered for it if any, and drops what only runc's create needed:
// the staging mounts, a container:<ID> target's pins, and everything the
// create took if runc does not have the container.
func (c *creation) start(s *specs.Spec) int {
	// A user namespace (ours, or a joined pod's) whose runtime might
	// chown stdio's host device nodes from the host side (libuserns.GuardStdio).
	if libuserns.HasUserns(s) && !c.p.feat.StdioChownedInside {
		fds, err := libuserns.GuardStdio()
		if err != nil {
			c.rollback()
			return c.fail(fmt.Errorf("container %s: %w", c.id, err))
		}
		if len(fds) > 0 {
			c.log.Debugf("container %s: stdio fds %v were host device nodes: the runtime gets private nodes of the same devices", c.id, fds)
		}
	}
	c.ph.Mark("stdio")
	if err := c.p.netSysctls.Write(); err != nil {
		c.rollback()
		return c.fail(fmt.Errorf("container %s: %w", c.id, err))
	}
	// The pod's user namespace's holder exited soon after NewUserns
	// returned (libuserns.newUserns): reap it and free its stack here,
	// while runc is still starting on the other CPU, rather than after
	// runc, where freeing the stack (a TLB shootdown across CPUs) cost the
	// create's tail ~0.2 ms on the VM measured.
	libuserns.ReapHolders()
	if err := state.InheritMarker(c.p.marker); err != nil {
		c.rollback()
		return c.fail(fmt.Errorf("container %s: %w", c.id, err))
	}
	status := c.runIn(c.p.netjoin)
	c.ph.Mark("runc")
	// A holder that had not exited before runc started (mostly none: then
	// this makes no system call). Without waiting: one still there is
	// init's to reap once we exit.
	libuserns.ReapHolders()
	// runc holds its own copy of the staging mount once the container
	// exists: drop ours now, so nothing of the container stays mounted on
	// the host. The empty directory stays until delete: runc (1.1 and
	// later) starts `runc exec`'s setns process with root.path as its
	// working directory. Whether the range stays taken depends on whether
	// runc still has the container (it does not after a failed create, nor
	// after a foreground run without --keep).
	if err := state.DetachStaged(c.lay.ContainerDir(c.root, c.id), false); err != nil {
		c.log.Warnf("container %s: %v", c.id, err)
	}
	// Likewise the pins of a container:<ID> target's namespaces: the
	// container's init has joined them, and `runc exec` enters through the
	// init's /proc/<pid>/ns entries, not the spec's paths.
	if c.p.join != nil {
		if err := c.p.join.Cleanup(); err != nil {
			c.log.Warnf("container %s: %v", c.id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.root, c.id, "state.json")); errors.Is(err, os.ErrNotExist) {
		c.rollback()
	}
	c.ph.Mark("detach")
	return status
}

// plan takes what the container needs from the outside world: the pod's
// range, its pinned user namespace, the idmapped rootfs and bind mounts,
// and records it in c.p, from which the spec edits follow
// (plan.modifiers). Each step pushes its undo.
func (c *creation) plan(s *specs.Spec) error {
	feat, err := runc.ProbeSummary(c.runtime, c.cfg.StateDir)
	if err != nil {
		return err
	}
	c.p.feat, c.p.poolUserns = feat, c.want
	c.ph.Mark("features")
	stamp := &oci.Stamp{Version: oci.StampVersion, ID: c.id, Root: c.root, Bundle: c.bundle, StateDir: c.cfg.StateDir, Runtime: c.runtime}
	// The caller's mounts, whichever step below edits them (idmap, sysfs,
	// locked flags): a second create of the bundle starts from these.
	if stamp.Mounts, err = json.Marshal(s.Mounts); err != nil {
		return err
	}
	// What a killed create of this ID left mounted, before anything is
	// staged again (at the tail only a fast detach runs: state.DetachStaged).
	if err := state.DetachStaged(c.lay.ContainerDir(c.root, c.id), true); err != nil {
		return err
	}
	c.p.undo = append(c.p.undo, func() error { return c.lay.RemoveStaged(c.root, c.id) })
	// A container:<ID> reference first: joining the target's PID namespace
	// decides the user namespace too (the target's), and may rule out one
	// from the pool.
	if err := c.planJoin(s, stamp, feat); err != nil {
		return err
	}
	var pod []specs.LinuxIDMapping
	var podNS *os.File
	if c.p.poolUserns {
		ns, err := c.planUserns(s, stamp, feat)
		if err != nil {
			return err
		}
		defer ns.Close()
		podNS, pod = ns, libuserns.PodMappings(stamp.HostID, stamp.Size)
	}
	c.ph.Mark("rootfs")
	joined, err := c.planJoinedUserns(s, stamp, feat)
	if err != nil {
		return err
	}
	if joined != nil {
		defer joined.ns.Close()
	}
	if err := c.planMounts(s, stamp, feat, pod, podNS, joined); err != nil {
		return err
	}
	if c.p.poolUserns {
		c.p.lockedFlags = libuserns.LockedFlags(s, c.bundle)
	}
	fault.Point(fault.Staged)
	c.ph.Mark("mounts")
	key, err := oci.StampKey(c.cfg.StateDir, true)
	if err != nil {
		return err
	}
	stamp.Sign(key)
	c.p.stamp = stamp
	return nil
}

// planUserns takes the pod's range and user namespace and stages the
// idmapped rootfs.
func (c *creation) planUserns(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features) (*os.File, error) {
	owner := c.req.Pod.Owner
	alloc, err := c.takeRange(owner, s)
	if err != nil {
		return nil, err
	}
	mapping := libuserns.PodMappings(alloc.HostID, alloc.Size)
	ns, err := c.ensurePin(owner, alloc, mapping)
	if err != nil {
		return nil, err
	}
	if c.req.Pod.Sandbox {
		// What the pod's other containers must share (checkMembership).
		// No fsync, as for the mapping file.
		if err := oci.ReplaceFile(c.lay.PodCgroup(owner), []byte(oci.PodCgroup(cgroupsPath(s))+"\n"), 0o644); err != nil {
			ns.Close()
			return nil, err
		}
	}
	if s.Root == nil || s.Root.Path == "" {
		ns.Close()
		return nil, errors.New("spec has no root.path")
	}
	src := s.Root.Path
	if !filepath.IsAbs(src) {
		src = filepath.Join(c.bundle, src)
	}
	fault.Point(fault.Pinned)
	c.ph.Mark("pin")
	staged, err := c.stageRootfs(src, ns, int(alloc.HostID))
	if err != nil {
		ns.Close()
		return nil, err
	}
	stamp.Owner, stamp.HostID, stamp.Size = owner, alloc.HostID, alloc.Size
	stamp.UsernsPath, stamp.Mappings = c.lay.Pin(owner), !feat.NativeIdmap
	stamp.Rootfs, stamp.Staged = s.Root.Path, staged
	c.p.userns, c.p.rootfs = &libuserns.Modifier{Path: stamp.UsernsPath}, staged
	if stamp.Mappings {
		c.p.userns.UID, c.p.userns.GID = mapping, mapping
	}
	if err := c.planNetns(s, stamp, feat, ns, mapping); err != nil {
		ns.Close()
		return nil, err
	}
	return ns, nil
}

// planNetns: a pool container that joins a network namespace its pod's
// user namespace podNS does not own (a CNI netns) gets its net.* sysctls
// written by the wrapper, sysfs as a bind of the host's, and, with runc <
// 1.3, the namespace entered for runc instead of joined (package netns).
func (c *creation) planNetns(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features, podNS *os.File, mapping []specs.LinuxIDMapping) error {
	foreign, path, err := netns.Foreign(s, ownedBy(podNS))
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	if !foreign {
		return nil
	}
	n := &foreignNet{native: feat.NativeIdmap}
	// runc, whatever its version, writes sysctls from inside the
	// pod's user namespace, which cannot write them there. The sandbox
	// sets up the pod's network namespace: it gets what a pod whose
	// user namespace owned it would have (netns.PodDefaults).
	var defaults map[string]string
	if c.req.Pod.InPod && c.req.Pod.Sandbox {
		defaults = netns.PodDefaults
	}
	if c.p.netSysctls, err = netns.PlanSysctls(s, path, defaults, mapping); err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	if c.p.netSysctls.Path != "" {
		stamp.NetSysctls = c.p.netSysctls.Spec
		c.log.Infof("container %s: joins network namespace %s, which the pod's user namespace does not own: runc-userns writes its network sysctls there before runc starts (%s)", c.id, path, sysctlList(c.p.netSysctls.Values))
		n.sysctls = true
	}
	c.warnNetCaps(path)
	if feat.JoinsUsernsFirst {
		// runc < 1.3 would join the pod's user namespace first and then
		// lack the right to join this one: runIn.
		if c.p.netjoin, err = writeNetjoin(c.lay, c.root, c.id, path); err != nil {
			return fmt.Errorf("network namespace %s: %w", path, err)
		}
		stamp.Netns = path
		c.log.Infof("container %s: runc %s cannot join network namespace %s after the pod's user namespace: runc-userns enters it for runc", c.id, feat.Version, path)
		n.enter = true
	}
	c.log.Infof("container %s: joins network namespace %s, which the pod's user namespace does not own: sysfs becomes a read-only bind of the host's /sys", c.id, path)
	c.p.foreignNet = n
	return nil
}

// sysctlList is values as "key=value, ...", in key order, for a log line.
func sysctlList(values map[string]string) string {
	keys := slices.Sorted(maps.Keys(values))
	for i, k := range keys {
		keys[i] = k + "=" + values[k]
	}
	return strings.Join(keys, ", ")
}

// warnNetCaps: CAP_NET_ADMIN and CAP_NET_RAW of a pool container are its
// pod's root's, which has none over a network namespace the host's user
// namespace owns (interfaces, routes, firewall, raw sockets fail with
// EPERM there). NET_ADMIN is asked for on purpose: a warning. NET_RAW is
// in containerd's and Docker's default set, which every pod would trip:
// an info line (ping works without it, through ping_group_range).
func (c *creation) warnNetCaps(path string) {
	caps, err := c.caps()
	if err != nil || caps == nil {
		return // runc refuses a spec whose capabilities do not decode
	}
	has := func(name string) bool {
		return slices.Contains(caps.Bounding, name) || slices.Contains(caps.Effective, name) || slices.Contains(caps.Permitted, name)
	}
	const why = "its pod's root has none over network namespace %s, which the host's user namespace owns (the CRI runtime made it, not knowing the pod is in a user namespace): %s fails with EPERM there; a pod that must do that runs with %s=host"
	switch {
	case has("CAP_NET_ADMIN"):
		c.log.Warnf("container %s asks for CAP_NET_ADMIN, but "+why, c.id, path, "configuring interfaces, routes or firewall rules", oci.AnnotationUserns)
	case has("CAP_NET_RAW"):
		c.log.Infof("container %s has CAP_NET_RAW, but "+why, c.id, path, "opening a raw socket", oci.AnnotationUserns)
	}
}

// writeNetjoin records the network namespace at path that container id of
// runc root root is started in (state.Layout.NetjoinRecord), so that its
// exec enters it too (app.netjoinOf).
func writeNetjoin(lay state.Layout, root, id, path string) (netns.Record, error) {
	return netns.WriteRecord(lay.NetjoinRecord(root, id), path, func(file string, data []byte, mode os.FileMode) error {
		if err := os.MkdirAll(filepath.Dir(file), 0o711); err != nil {
			return err
		}
		return oci.ReplaceFile(file, data, mode)
	})
}

// ownedBy is netns.Foreign's owned: whether the network namespace at path
// is owned by the user namespace userns.
func ownedBy(userns *os.File) func(string) (bool, error) {
	return func(path string) (bool, error) {
		ns, _, err := netns.Open(path)
		if err != nil {
			return false, err
		}
		defer ns.Close()
		return libuserns.OwnedBy(ns, userns)
	}
}

// takeRange opens the pool and takes pod owner's range for this
// container: the sandbox allocates it, another container of the pod joins
// it. The create's undo leaves it again.
func (c *creation) takeRange(owner string, s *specs.Spec) (pool.Allocation, error) {
	if err := oci.ValidateID(owner); err != nil {
		return pool.Allocation{}, fmt.Errorf("pod sandbox id: %w", err)
	}
	p, err := admin.OpenPool(c.cfg, c.cfg.StateDir)
	if err != nil {
		return pool.Allocation{}, err
	}
	c.p.pool = p
	c.markInflight(p)
	var alloc pool.Allocation
	if c.req.Pod.Sandbox {
		alloc, err = p.Allocate(owner, c.root, c.id)
	} else {
		if err := c.checkMembership(owner, s); err != nil {
			return pool.Allocation{}, err
		}
		alloc, err = p.Join(owner, c.id)
		if errors.Is(err, pool.ErrUnknownOwner) {
			err = fmt.Errorf("its pod %s has no user namespace from runc-userns (its sandbox was created without %s=auto, or is gone): recreate the pod with the annotation: %w", owner, oci.AnnotationUserns, err)
		}
	}
	if err != nil {
		return pool.Allocation{}, err
	}
	c.p.undo = append(c.p.undo, func() error { return c.leave(owner) })
	fault.Point(fault.Allocated)
	c.ph.Mark("pool")
	return alloc, nil
}

// markInflight has the pool record the claim in the container's in-flight
// marker, which the create holds from its start (creation.do).
func (c *creation) markInflight(p *pool.Pool) {
	f := c.p.marker
	h := admin.PoolHooks(c.cfg.StateDir, c.log)
	h.Claim = func(a pool.Allocation, member string) error {
		if member != c.id {
			return nil
		}
		return state.WriteInflight(f.Name(), state.InflightRecord{Owner: a.Owner, HostID: a.HostID, Size: a.Size, Root: a.Root, Member: member})
	}
	p.SetHooks(h)
}

// planMounts idmaps the bind mounts: every one of a pool container whose
// filesystem allows it, and every one the caller asked for. A runtime with
// native idmap support gets a spec edit; runc 1.1 gets host-side staging
// mounts. An implicit mount whose filesystem cannot be idmapped stays a
// plain bind, logged and recorded; an explicit one fails the create. A
// source that lies under an earlier mount of the spec is runc's to resolve
// (laterSource).
func (c *creation) planMounts(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features, pod []specs.LinuxIDMapping, podNS *os.File, joined *joinedUserns) error {
	var jm *idmap.Joined
	if joined != nil {
		jm = &joined.Joined
	}
	cands, err := idmap.Candidates(s, pod, jm, c.req.IdmapSkip)
	if err != nil || len(cands) == 0 {
		return err
	}
	namespaces := map[string]*os.File{}
	defer func() {
		for _, f := range namespaces {
			f.Close()
		}
	}()
	nsFor := func(cd idmap.Candidate) (int, error) {
		uid, gid := cd.UID, cd.GID
		if cd.Joined {
			// The joined namespace itself, as opened once: the
			// mappings were read from it.
			return int(joined.ns.Fd()), nil
		}
		if podNS != nil && libuserns.Equal(uid, pod) && libuserns.Equal(gid, pod) {
			return int(podNS.Fd()), nil
		}
		key := libuserns.FormatMappings(uid) + "/" + libuserns.FormatMappings(gid)
		if f, ok := namespaces[key]; ok {
			return int(f.Fd()), nil
		}
		f, err := libuserns.NewUserns(uid, gid)
		if err != nil {
			return -1, err
		}
		namespaces[key] = f
		return int(f.Fd()), nil
	}
	mm := &mountPlan{staged: map[int]string{}}
	for _, cd := range cands {
		src := s.Mounts[cd.Index].Source
		if !filepath.IsAbs(src) {
			src = filepath.Join(c.bundle, src)
		}
		if under := idmap.UnderEarlierMount(s, c.bundle, cd.Index); under != "" {
			if err := c.laterSource(mm, s, stamp, feat, cd, src, under); err != nil {
				return err
			}
			continue
		}
		fd, err := nsFor(cd)
		if err == nil {
			err = c.idmapMount(mm, feat, cd, src, fd)
		}
		switch {
		case err == nil:
		case errors.Is(err, idmap.ErrNoSource):
			return fmt.Errorf("mount %s: its source %s does not exist (no such file or directory): create it, or fix the mount's source", cd.Dest, src)
		case errors.Is(err, idmap.ErrUnsupported) && !cd.Explicit:
			c.log.Warnf("container %s: bind mount %s stays a plain bind (not idmapped, files keep their host owners): %v", c.id, cd.Dest, err)
			mm.skipped = append(mm.skipped, cd.Dest)
		default:
			return fmt.Errorf("mount %s: %w", cd.Dest, err)
		}
	}
	c.p.mounts = mm
	return nil
}

// joinedUserns is the user namespace a container joins by path, opened
// once, with the mappings read from that open file (planJoinedUserns).
type joinedUserns struct {
	idmap.Joined
	ns *os.File
}

// planJoinedUserns: a container that joins a user namespace by path, has
// no uid/gid mappings in its spec, and asks for an idmap or ridmap bind
// mount without mappings of its own (idmap.JoinedUserns) gets the joined
// namespace's mappings for that mount, as runc >= 1.2 gives them. The
// path, which a pod author may influence, is opened once
// (libuserns.OpenUserns: an nsfs user namespace) and the mappings are
// read from that open namespace (libuserns.Mappings), which is also what
// idmaps the mounts for runc 1.1 (planMounts); the wrapper never resolves
// the path again. They pass the rule of the caller's own mappings: none
// into the pool. runc 1.1 needs them in linux.uidMappings and gidMappings
// too, or refuses to run in a joined namespace ("no uid mappings
// found"): they are added there, and the stamp says so, for a second
// create of the bundle to take them out again (undoStamp). runc >= 1.2
// reads them from the path itself and gets the spec as it is.
func (c *creation) planJoinedUserns(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features) (*joinedUserns, error) {
	if c.p.join != nil && c.p.join.TakesUserns() {
		return nil, nil // nsjoin's: the target's user namespace, with its mappings
	}
	path := idmap.JoinedUserns(s)
	if path == "" {
		return nil, nil
	}
	what := "an idmap bind mount without uid/gid mappings takes those of the user namespace the container joins, " + path
	const mappings = "give the mount uidMappings and gidMappings (or the container linux.uidMappings and gidMappings)"
	ns, err := libuserns.OpenUserns(path, oci.FileKind)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; give the path of a user namespace (/proc/<pid>/ns/user or a bind mount of one), or %s", what, err, mappings)
	}
	uid, gid, err := libuserns.Mappings(ns)
	if err != nil {
		ns.Close()
		var hint string
		switch {
		case errors.Is(err, libuserns.ErrNoMapping):
			hint = "write the namespace's uid_map and gid_map before the container is created, or " + mappings
		case errors.Is(err, libuserns.ErrOwnUserns):
			hint = "an idmapped mount through it would map nothing (the kernel refuses it): join another user namespace, or " + mappings
		case errors.Is(err, os.ErrPermission):
			hint = "runc-userns may join only a user namespace made below its own: join such a namespace, or " + mappings
		default:
			hint = mappings
		}
		return nil, fmt.Errorf("%s, whose mappings cannot be read or used: %w; %s", what, err, hint)
	}
	src := "the user namespace it joins, " + path + ","
	if err := c.checkMappingsOutsidePool([]mappingSource{{src + " uid_map", uid}, {src + " gid_map", gid}}); err != nil {
		ns.Close()
		return nil, err
	}
	c.log.Infof("container %s: joins user namespace %s with no mappings in its spec: its idmap bind mounts without mappings take that namespace's (uid_map %q, gid_map %q)", c.id, path, libuserns.FormatMappings(uid), libuserns.FormatMappings(gid))
	if !feat.NativeIdmap {
		c.p.joinedMaps = &libuserns.Modifier{Path: path, UID: uid, GID: gid}
		stamp.JoinedMappings = true
	}
	return &joinedUserns{Joined: idmap.Joined{Path: path, UID: uid, GID: gid}, ns: ns}, nil
}

// mountPlan is what planMounts decided for the bind mounts.
type mountPlan struct {
	native         []idmap.Candidate // idmapped by the runtime
	staged         map[int]string    // mount index -> its idmapped staging mount
	moved          []sourceModifier  // sources that follow the rootfs to its staging path
	skipped        []string          // destinations left plain binds
	mountsDirReady bool              // the staging directory of the bind mounts exists
}

func (mm *mountPlan) modifiers() []modifier {
	mods := []modifier{idmap.NativeModifier{Candidates: mm.native}, idmap.StagedModifier{Staged: mm.staged}}
	for _, m := range mm.moved {
		mods = append(mods, m)
	}
	if len(mm.skipped) > 0 {
		mods = append(mods, annotationModifier{oci.AnnotationIdmapSkipped, strings.Join(mm.skipped, ",")})
	}
	return mods
}

// idmapMount idmaps the bind cd (source src) through the user namespace
// fd: probed for a runtime that does it itself, staged on the host for
// runc 1.1.
func (c *creation) idmapMount(mm *mountPlan, feat *runc.Features, cd idmap.Candidate, src string, fd int) error {
	if feat.NativeIdmap {
		err := idmap.Probe(src, fd, cd.Recursion)
		if err == nil {
			mm.native = append(mm.native, cd)
		}
		return err
	}
	if !mm.mountsDirReady {
		if err := c.stageContainerDir(0); err != nil {
			return err
		}
		if err := os.Mkdir(c.lay.MountsDir(c.root, c.id), 0o711); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		mm.mountsDirReady = true
	}
	dst := c.lay.StagedMount(c.root, c.id, cd.Index)
	err := idmap.MountPropagating(src, dst, fd, cd.Recursion, cd.Propagation)
	if err == nil {
		mm.staged[cd.Index] = dst
	}
	return err
}

// laterSource handles a bind whose source src lies in the rootfs under
// under, an earlier mount of the spec: it exists only once runc has made
// that mount, and what the host has at that path (if anything) is not
// what the container gets. A runtime with idmap support resolves it in
// mount order: an explicit idmap is left to it as it is; ours is not made
// (the bind shows what the mount above shows, idmapped if that one is),
// and the source follows the rootfs to its staging path. runc 1.1 cannot
// run it (noLaterSource).
func (c *creation) laterSource(mm *mountPlan, s *specs.Spec, stamp *oci.Stamp, feat *runc.Features, cd idmap.Candidate, src, under string) error {
	switch {
	case !feat.NativeIdmap:
		return noLaterSource(cd, src, under, c.runtime)
	case cd.Explicit:
		mm.native = append(mm.native, cd)
		return nil
	}
	c.log.Warnf("container %s: bind mount %s is left to runc as a plain bind (not idmapped by runc-userns): its source %s lies under %s, an earlier mount of the spec, which runc resolves in mount order", c.id, cd.Dest, src, under)
	mm.skipped = append(mm.skipped, cd.Dest)
	if inside, ok := idmap.InRootfs(s, c.bundle, src); ok && stamp.Staged != "" {
		// The rootfs runc makes that earlier mount in is the staged one.
		mm.moved = append(mm.moved, sourceModifier{cd.Index, filepath.Join(stamp.Staged, inside)})
	}
	return nil
}

// noLaterSource refuses a bind to idmap on a runc without idmap support
// whose source lies under an earlier mount of the spec.
func noLaterSource(cd idmap.Candidate, src, under, runtime string) error {
	if cd.Explicit {
		return fmt.Errorf("mount %s asks for idmap, but its source %s lies under %s, an earlier mount of the same spec, and exists only once runc has made that mount; runc-userns idmaps mounts on the host for a runc without idmap support (%s), before runc runs, so it cannot idmap this one: use runc >= 1.2, which idmaps it itself in mount order, or a source outside the container's rootfs", cd.Dest, src, under, runtime)
	}
	return fmt.Errorf("mount %s: its source %s lies under %s, an earlier mount of the same spec, and exists only once runc has made that mount; in a user namespace, a runc without idmap support (%s) opens every bind source on the host before it mounts anything, so it cannot bind this one: use runc >= 1.2, or a source outside the container's rootfs", cd.Dest, src, under, runtime)
}

// leave takes the container out of its pod's range; the last one out
// returns the range to the pool and unpins the pod's namespace.
func (c *creation) leave(owner string) error {
	freed, err := c.p.pool.Leave(owner, c.id)
	if err != nil || !freed {
		return err
	}
	return c.lay.UnpinPod(owner)
}

// checkMembership: a container whose annotations put it in pod owner (not
// its sandbox) joins the pod's range only if its identity annotations are
// ones a CRI writes and its cgroup parent is the one the pod's sandbox
// recorded (or, for a pod pinned by an earlier release, the one in its
// sandbox's runc state). On CRI-O a pod author can write a sandbox's
// annotations, and with them claim another pod; the cgroup parent comes
// from kubelet.
func (c *creation) checkMembership(owner string, s *specs.Spec) error {
	if err := oci.CheckPodIdentity(c.id, s.Annotations); err != nil {
		return err
	}
	var want string
	rec, err := os.ReadFile(c.lay.PodCgroup(owner))
	switch {
	case err == nil:
		want = strings.TrimSuffix(string(rec), "\n")
	case errors.Is(err, os.ErrNotExist):
		// A pod pinned by an earlier release: its sandbox's runc state
		// says. (A pod not pooled at all fails in Join.)
		st, serr := runc.ReadState(c.root, owner)
		if errors.Is(serr, os.ErrNotExist) {
			if _, ok, _ := c.p.pool.Get(owner); !ok {
				return nil // Join refuses it, naming the pod
			}
		}
		if serr != nil {
			return fmt.Errorf("container %s: its annotations put it in pod %s, whose cgroup parent cannot be told (no record at %s, and its sandbox's runc state: %v): recreate the pod", c.id, owner, c.lay.PodCgroup(owner), serr)
		}
		want = st.Config.Cgroups.PodCgroup()
	default:
		return fmt.Errorf("pod %s: %w", owner, err)
	}
	if want == "" {
		return nil // its sandbox named no cgroup: nothing to compare
	}
	if got := oci.PodCgroup(cgroupsPath(s)); got != want {
		return fmt.Errorf("container %s: its annotations put it in pod %s, but its cgroup parent %q is not the pod's (%q, from its sandbox's linux.cgroupsPath): the containers of a pod share their sandbox's cgroup parent, and annotations alone do not prove membership (on CRI-O a pod author can write them on a sandbox); nothing was taken. Give it the pod's cgroup parent, or leave out the pod annotations", c.id, owner, got, want)
	}
	return nil
}

// cgroupsPath is the spec's linux.cgroupsPath ("" without one).
func cgroupsPath(s *specs.Spec) string {
	if s.Linux == nil {
		return ""
	}
	return s.Linux.CgroupsPath
}

// ensurePin returns the pod's user namespace, creating and pinning it for
// the sandbox. The mapping file beside the pin says which range it maps, so
// a pin left from an earlier allocation is never reused for another.
func (c *creation) ensurePin(owner string, alloc pool.Allocation, mapping []specs.LinuxIDMapping) (*os.File, error) {
	pin, mapFile := c.lay.Pin(owner), c.lay.Mapping(owner)
	want := fmt.Sprintf("%d %d\n", alloc.HostID, alloc.Size)
	hostIDs := fmt.Sprintf("host IDs %d-%d", alloc.HostID, uint64(alloc.HostID)+uint64(alloc.Size)-1)
	if ns, err := libuserns.OpenPinned(pin); err == nil {
		if got, _ := os.ReadFile(mapFile); string(got) == want {
			return ns, nil
		}
		ns.Close()
		if !c.req.Pod.Sandbox {
			return nil, fmt.Errorf("pod %s: the user namespace pinned at %s does not map the pod's range (%s): recreate the pod", owner, pin, hostIDs)
		}
		if err := c.lay.UnpinPod(owner); err != nil {
			return nil, err
		}
	} else if !c.req.Pod.Sandbox {
		return nil, fmt.Errorf("pod %s: its user namespace pin: %w (the sandbox is gone or was not created by runc-userns): recreate the pod", owner, err)
	} else if !errors.Is(err, os.ErrNotExist) {
		// Not a pin (a plain file a create killed before its mount left,
		// say): the sandbox makes a new one in its place.
		if err := libuserns.Unpin(pin); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(c.lay.PodDir(owner), 0o711); err != nil {
		return nil, err
	}
	ns, err := libuserns.NewUserns(mapping, mapping)
	if err != nil {
		return nil, err
	}
	// No fsync: the mapping file means something only while the pin (a
	// mount, gone at reboot) exists.
	if err := oci.ReplaceFile(mapFile, []byte(want), 0o644); err != nil {
		ns.Close()
		return nil, err
	}
	if err := libuserns.Pin(ns, pin); err != nil {
		ns.Close()
		return nil, err
	}
	return ns, nil
}

// stageRootfs mounts an idmapped view of the rootfs at the container's
// staging path: an idmapped clone of a directory rootfs, or for an overlay
// rootfs (what containerd's shim and podman hand us) an equivalent
// overlay over idmapped layers. root is the pod root's host ID.
func (c *creation) stageRootfs(src string, ns *os.File, root int) (string, error) {
	staged := c.lay.StagedRootfs(c.root, c.id)
	if err := c.stageContainerDir(root); err != nil {
		return "", err
	}
	if err := os.Mkdir(staged, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	ov, err := idmap.OverlayAt(src)
	switch {
	case err == nil:
		if err := idmap.StageOverlay(ov, staged, c.lay.LayersDir(c.root, c.id), int(ns.Fd()), root, root); err != nil {
			return "", fmt.Errorf("idmap overlay rootfs %s: %w", src, err)
		}
	case errors.Is(err, idmap.ErrNotOverlay):
		err := idmap.Mount(src, staged, int(ns.Fd()), idmap.Tree)
		if errors.Is(err, idmap.ErrUnsupported) && c.cfg.Userns.RootfsChown {
			return staged, c.chownRootfs(src, staged, root)
		}
		if errors.Is(err, idmap.ErrUnsupported) {
			return "", fmt.Errorf("idmap rootfs: %w; put the rootfs on a filesystem that supports idmapped mounts (see runc-userns doctor PATH), or enable userns.rootfsChown in %s to chown it to the pod's range instead", err, configName(c.cfg))
		}
		if err != nil {
			return "", fmt.Errorf("idmap rootfs: %w", err)
		}
	default:
		return "", fmt.Errorf("rootfs %s: %w", src, err)
	}
	return staged, nil
}

// stageContainerDir makes the container directory, once and before
// anything is mounted below it, a mount of its own (idmap.StageDir): the
// staged rootfs, bind mounts and overlay layers and a container:<ID>
// target's pins all sit below it, and the create's tail detaches them
// with one umount (state.DetachStaged), which waits for one RCU grace
// period rather than one for each staging directory. Only host root and,
// with gid not 0, the pod's root (host gid gid) can reach it
// (state.MkdirPrivate); a later call with the pod's gid opens it to the
// pod's root, whose runc mounts the staged rootfs.
func (c *creation) stageContainerDir(gid int) error {
	if c.p.staging {
		if gid == 0 {
			return nil
		}
		return state.MkdirPrivate(c.cfg.StateDir, c.lay.ContainerDir(c.root, c.id), gid)
	}
	dir := c.lay.ContainerDir(c.root, c.id)
	if err := state.MkdirPrivate(c.cfg.StateDir, dir, gid); err != nil {
		return err
	}
	if err := idmap.StageDir(dir); err != nil {
		return err
	}
	c.p.staging = true
	return nil
}

// chownRootfs is the opt-in fallback for a rootfs that cannot be idmapped.
func (c *creation) chownRootfs(src, staged string, root int) error {
	start := time.Now()
	n, err := idmap.ShiftOwners(src, uint32(root), c.cfg.Userns.SlotSize)
	if err != nil {
		return err
	}
	c.log.Warnf("container %s: rootfs %s (%s) cannot be idmapped: chowned %d entries to the pod's range in %s (userns.rootfsChown); the image stays owned by that range", c.id, src, idmap.FSType(src), n, time.Since(start).Round(time.Millisecond))
	return idmap.BindClone(src, staged)
}

type rootfsModifier string

func (r rootfsModifier) Modify(s *specs.Spec) error {
	s.Root.Path = string(r)
	return nil
}

// sourceModifier points mount index at source.
type sourceModifier struct {
	index  int
	source string
}

func (m sourceModifier) Modify(s *specs.Spec) error {
	if m.index < 0 || m.index >= len(s.Mounts) {
		return fmt.Errorf("mount index %d out of range", m.index)
	}
	s.Mounts[m.index].Source = m.source
	return nil
}

type annotationModifier struct{ key, value string }

func (m annotationModifier) Modify(s *specs.Spec) error {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[m.key] = m.value
	return nil
}

type stampModifier struct{ *oci.Stamp }

func (m stampModifier) Modify(s *specs.Spec) error {
	v := m.Encode()
	if len(v) > oci.MaxStampValue {
		// A second create of the bundle would refuse to read it back.
		return fmt.Errorf("the record of this create's edits (%s) would take %d bytes, more than %d, mostly the caller's %d mounts and net.* sysctls: give the container fewer mounts (or shorter options), or run it without a pool user namespace and idmapped mounts", oci.AnnotationStamp, len(v), oci.MaxStampValue, len(s.Mounts))
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[oci.AnnotationStamp] = v
	return nil
}

// planJoin resolves the container's container:<ID> reference, if it has
// one (nsjoin): the target's PID namespace, and the user namespace that
// owns it, which rules out one from the pool unless it is the very one
// the pool gives. Its pins are mounts in the container directory.
func (c *creation) planJoin(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features) error {
	if !nsjoin.Wanted(s, c.req.PIDNamespace) {
		return nil
	}
	if err := c.stageContainerDir(0); err != nil {
		return err
	}
	join, err := nsjoin.Plan(s, c.joinRequest(s, feat), joinHost{c.app})
	if err != nil || join == nil {
		return err
	}
	c.p.join = join
	c.p.undo = append(c.p.undo, join.Cleanup)
	fault.Point(fault.Joined)
	if join.TakesUserns() {
		c.p.poolUserns = false
		// Recorded so that a second create of the bundle undoes it
		// (undoStamp) and resolves the reference afresh.
		stamp.UsernsPath = join.Userns()
	}
	return nil
}

// joinRequest is nsjoin's view of this create: what its spec and
// annotations ask, the pool's part (c.want) and the runtime's features.
func (c *creation) joinRequest(s *specs.Spec, feat *runc.Features) nsjoin.Request {
	r := nsjoin.Request{
		ID:           c.id,
		Root:         c.root,
		PinDir:       c.lay.ContainerDir(c.root, c.id),
		PinBase:      c.lay.ContainersDir(),
		PIDNamespace: c.req.PIDNamespace,
		Keys:         nsjoin.Keys{PIDNamespace: oci.AnnotationPIDNamespace, Userns: oci.AnnotationUserns},
		Pod:          joinPod(c.req.Pod),
		PodIdentity:  oci.CheckPodIdentity(c.id, s.Annotations),
		Cgroup:       oci.PodCgroup(cgroupsPath(s)),
		Features: nsjoin.Features{
			WithMappings:     !feat.NativeIdmap,
			JoinsUsernsFirst: feat.JoinsUsernsFirst,
			Version:          feat.Version,
			Sysfs:            netns.SysfsModifier{Native: feat.NativeIdmap},
		},
		Log: c.log,
	}
	switch c.req.Userns {
	case oci.UsernsAuto:
		r.Userns = nsjoin.UsernsAuto
	case oci.UsernsHost:
		r.Userns = nsjoin.UsernsHost
	}
	// An app container of a pool pod gets the pod's user namespace from
	// the pool; a sandbox a new one.
	if c.want && !c.req.Pod.Sandbox {
		r.PoolUserns = c.lay.Pin(c.req.Pod.Owner)
	}
	return r
}

// joinHost adapts internal/runc, internal/oci, libuserns and the state
// directory to nsjoin.Host.
type joinHost struct{ a *app }

func (joinHost) ValidateID(id string) error { return oci.ValidateID(id) }

// State reads runc's state.json and exec.fifo of container id of root.
func (joinHost) State(root, id string) (*nsjoin.State, error) {
	st, err := runc.ReadState(root, id)
	if err != nil {
		return nil, err
	}
	ann := st.Annotations()
	return &nsjoin.State{
		InitPID:      st.InitPID,
		InitStart:    st.InitStart,
		Annotations:  ann,
		Pod:          joinPod(oci.PodOf(id, ann)),
		Cgroup:       st.Config.Cgroups.PodCgroup(),
		PIDNamespace: st.HasNamespace("NEWPID"),
		Created:      runc.Created(root, id),
	}, nil
}

// UsernsPins names the paths that may already pin a target's user
// namespace: its pod's pin under our state dir, and the one its stamp
// records if this node wrote the stamp. nsjoin uses one only if it is the
// target's namespace (same inode).
func (h joinHost) UsernsPins(id string, annotations map[string]string) []string {
	var out []string
	if owner := oci.PodOf(id, annotations).Owner; oci.ValidateID(owner) == nil {
		out = append(out, state.Layout(h.a.cfg.StateDir).Pin(owner))
	}
	if v, ok := annotations[oci.AnnotationStamp]; ok {
		root, _ := filepath.Abs(h.a.inv.Root)
		if st, err := oci.DecodeStamp(v); err == nil && st.UsernsPath != "" && h.a.verifyStamp(st, oci.Binding{ID: id, Root: root}, false) == nil {
			out = append(out, st.UsernsPath)
		}
	}
	return out
}

func (joinHost) ParseMappings(idMap []byte) ([]specs.LinuxIDMapping, error) {
	return libuserns.ParseMappings(bytes.NewReader(idMap))
}

func (joinHost) UsernsModifier(path string, uid, gid []specs.LinuxIDMapping) nsjoin.Modifier {
	return libuserns.Modifier{Path: path, UID: uid, GID: gid}
}

// ForeignNetns: whether the spec joins a network namespace the user
// namespace pinned at userns does not own (netns.Foreign).
func (joinHost) ForeignNetns(s *specs.Spec, userns string) (bool, string, error) {
	return netns.Foreign(s, func(p string) (bool, error) {
		ns, err := libuserns.OpenPinned(userns)
		if err != nil {
			return false, err
		}
		defer ns.Close()
		return ownedBy(ns)(p)
	})
}

// joinPod is nsjoin's view of a container's pod: its sandbox's ID, or
// none for a container of no pod.
func joinPod(p oci.Pod) nsjoin.Pod {
	if p.InPod {
		return nsjoin.Pod{ID: p.Owner}
	}
	return nsjoin.Pod{}
}

// runIn runs runc (create/run) inside the network namespace nj, or where
// the wrapper is when nj is empty: runc < 1.3 joins the namespaces given
// by path after the pod's user namespace, and could not join nj then
// (package netns).
func (c *creation) runIn(nj netns.Record) int {
	if nj.Path == "" {
		return c.run()
	}
	restore, _, err := netns.Enter(nj.Path, nj.ID)
	if err != nil {
		return c.fail(fmt.Errorf("container %s: enter network namespace %s: %w", c.id, nj.Path, err))
	}
	status := c.run()
	if err := restore(); err != nil {
		c.log.Warnf("container %s: %v", c.id, err)
	}
	return status
}
