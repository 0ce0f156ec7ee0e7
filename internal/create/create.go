package create

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/fault"
	"github.com/runc-userns/runc-userns/internal/logging"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/netns"
	"github.com/runc-userns/runc-userns/pool"
)

// Call is one call of the wrapper as the pipeline sees it: runc's argv,
// scanned; the operator's config; the real runtime and how to hand it
// the call; where the call logs. The root package's app embeds it.
type Call struct {
	Inv     *oci.Invocation
	Cfg     *config.Config
	Runtime string // the real runc (DeleteStamp may switch to the one that created the container)
	Log     *logrus.Logger
	Sink    *logging.Sink
	Phases  *logging.Phases // create and delete: step times for --debug
	Runc    Runner
}

// Runner hands the call to the real runc with argv untouched, as every
// command of the wrapper does (package main's app).
type Runner interface {
	// Exec replaces the wrapper with runc, or runs it as a child and
	// waits while log lines are held (logging.Sink).
	Exec() int
	// Run runs runc as a child and returns its exit status.
	Run() int
}

// Fail reports err like runc's fatal() and returns exit status 1.
func (a *Call) Fail(err error) int {
	return logging.Fatal(a.Log, a.Sink, err)
}

func (a *Call) exec() int { return a.Runc.Exec() }

func (a *Call) run() int { return a.Runc.Run() }

// Create runs the create/run pipeline: load config.json → Request → plan
// (the only step that touches the outside world) → modifiers → validate →
// atomic write → run runc. What the plan took is given back if runc fails.
func (a *Call) Create() int {
	inv := a.Inv
	if err := oci.ValidateID(inv.ID); err != nil {
		if a.asksForUs() != "" {
			return a.Fail(fmt.Errorf("%w: container IDs become file names of runc and runc-userns; nothing was created", err))
		}
		// runc refuses it in its own words; nothing of ours is named
		// after an ID it refuses.
		return a.exec()
	}
	bundle, err := bundleDir(inv.Bundle)
	if err != nil {
		return a.Fail(fmt.Errorf("container %s: %w", inv.ID, err))
	}
	doc, err := oci.Load(bundle)
	if err != nil {
		return a.Fail(fmt.Errorf("container %s: %w", inv.ID, err))
	}
	a.Phases.Mark("load")
	req, want, untouched, err := a.createPlan(doc, bundle)
	if err != nil {
		return a.Fail(err)
	}
	if untouched {
		// Only undoing an earlier create's edits can have changed the
		// spec: without a stamp there is nothing to encode or write.
		if req.Stamp != nil {
			if _, err := doc.Flush(); err != nil {
				return a.Fail(fmt.Errorf("container %s: %w", inv.ID, err))
			}
		}
		return a.exec()
	}

	c := &creation{Call: a, id: inv.ID, bundle: bundle, req: req, want: want, caps: doc.Capabilities}
	a.Phases.Mark("request")
	status := c.do(doc)
	a.Log.Debugf("container %s: %s took %s", inv.ID, inv.Command, a.Phases)
	if status == 0 {
		a.Sink.Commit()
	} else {
		a.Sink.Discard()
	}
	return status
}

// CreateUnscanned handles a create or run whose argv holds a flag the
// scanner does not know: runc gets it as it is, unless the spec asks for a
// pool user namespace (or its pod has one). Without the rest of argv
// understood the wrapper cannot edit the spec, and the container would run
// without its user namespace, as host root: such a create is refused.
func (a *Call) CreateUnscanned() int {
	why := a.asksForUs()
	if why == "" {
		return a.exec()
	}
	bundle := a.Inv.Bundle
	if bundle == "" {
		bundle = "the current directory"
	}
	return a.Fail(fmt.Errorf("runc-userns does not know the flag %s of `runc %s`, so it cannot read the rest of the arguments; the bundle (%s) needs runc-userns: %s. Refusing the %s rather than running the container without its user namespace, as host root: run it without that flag, or use a runc-userns that knows it (and report it if none does)", a.Inv.UnknownFlag, a.Inv.Command, bundle, why, a.Inv.Command))
}

// creation is the context of one create/run that the wrapper acts on:
// who asks (the container, its bundle and runc root), what it asks (the
// request) and where the node keeps its state. What the container gets is
// the plan.
type creation struct {
	*Call
	id, bundle string
	req        oci.Request
	want       bool // a pool user namespace, as the request and the node's mode decide
	caps       capsOf
	root       string
	lay        state.Layout
	p          *plan           // what creation.plan took and decided, once it ran
	alloc      pool.Allocation // the pod's range, once planUserns took it
}

// do runs the create: lock the ID → plan → modify → validate → write →
// start runc → keep what the container holds, or roll back.
func (c *creation) do(doc *oci.Document) int {
	var err error
	if c.root, err = filepath.Abs(c.Inv.Root); err != nil {
		return c.Fail(err)
	}
	c.lay = state.Layout(c.Cfg.StateDir)
	// Nothing is taken for a container runc has or another create is
	// making: everything taken below is named after its ID, and undone
	// by ID if this create fails.
	marker, err := c.lay.AcquireInflight(c.root, c.id)
	if errors.Is(err, state.ErrRuncHas) {
		return c.exec()
	}
	if err != nil {
		return c.Fail(fmt.Errorf("container %s: %w", c.id, err))
	}
	c.p = &plan{marker: marker}
	c.p.undo = append(c.p.undo, func() error {
		err := c.lay.RemoveInflight(c.root, c.id)
		marker.Close()
		return err
	})
	err = c.plan(doc.Spec)
	c.Phases.Mark("stamp")
	if err == nil {
		err = c.apply(doc)
	}
	if err != nil {
		c.rollback()
		return c.Fail(fmt.Errorf("container %s: %w", c.id, err))
	}
	if st := c.p.stamp; c.p.poolUserns {
		c.Log.Infof("container %s: pod %s runs in user namespace %s, uid/gid 0-%d -> host %d-%d, rootfs idmapped at %s", c.id, st.Owner, st.UsernsPath, st.Size-1, st.HostID, uint64(st.HostID)+uint64(st.Size)-1, st.Staged)
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
	c.Phases.Mark("modify")
	_, err := doc.Flush()
	fault.Point(fault.Written)
	c.Phases.Mark("write")
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
			return c.Fail(fmt.Errorf("container %s: %w", c.id, err))
		}
		if len(fds) > 0 {
			c.Log.Debugf("container %s: stdio fds %v were host device nodes: the runtime gets private nodes of the same devices", c.id, fds)
		}
	}
	c.Phases.Mark("stdio")
	if err := c.p.netSysctls.Write(); err != nil {
		c.rollback()
		return c.Fail(fmt.Errorf("container %s: %w", c.id, err))
	}
	// The pod's user namespace's holder exited soon after NewUserns
	// returned (libuserns.newUserns): reap it and free its stack here,
	// while runc is still starting on the other CPU, rather than after
	// runc, where freeing the stack (a TLB shootdown across CPUs) cost the
	// create's tail ~0.2 ms on the VM measured.
	libuserns.ReapHolders()
	if err := state.InheritMarker(c.p.marker); err != nil {
		c.rollback()
		return c.Fail(fmt.Errorf("container %s: %w", c.id, err))
	}
	status := c.runIn(c.p.netjoin)
	c.Phases.Mark("runc")
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
		c.Log.Warnf("container %s: %v", c.id, err)
	}
	// Likewise the pins of a container:<ID> target's namespaces: the
	// container's init has joined them, and `runc exec` enters through the
	// init's /proc/<pid>/ns entries, not the spec's paths.
	if c.p.join != nil {
		if err := c.p.join.Cleanup(); err != nil {
			c.Log.Warnf("container %s: %v", c.id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.root, c.id, "state.json")); errors.Is(err, os.ErrNotExist) {
		c.rollback()
	}
	c.Phases.Mark("detach")
	return status
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
		return c.Fail(fmt.Errorf("container %s: enter network namespace %s: %w", c.id, nj.Path, err))
	}
	status := c.run()
	if err := restore(); err != nil {
		c.Log.Warnf("container %s: %v", c.id, err)
	}
	return status
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
