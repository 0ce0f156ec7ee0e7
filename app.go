package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/runc-userns/runc-userns/internal/admin"
	"github.com/runc-userns/runc-userns/internal/create"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/netns"
)

// app is one invocation of the wrapper: the call (package create), and
// the real runc it hands the call to.
type app struct {
	create.Call
}

// Exec replaces the wrapper with the real runc, argv untouched. Log lines
// held (warnings about the spec, the stamp or the config) are written only
// if runc succeeds (logging.Sink), so a create, run or delete that holds some
// runs runc as a child instead and waits (a socket-activated create still
// execs: LISTEN_PID must be runc's). Any other command is handed to runc
// whole, signals and exit by signal and all, and its held lines are
// dropped: a config's mistake shows in every create it refuses.
func (a *app) Exec() int {
	keep := a.Inv.Command == "delete" || a.Inv.Creates() && os.Getenv("LISTEN_PID") == ""
	if keep && a.Sink.Held() {
		status := a.Run()
		if status == 0 {
			a.Sink.Commit()
		} else {
			a.Sink.Discard()
		}
		return status
	}
	a.Sink.Discard()
	return a.Fail(runc.Exec(a.Runtime, a.Inv.Argv0, a.Inv.Args))
}

// Run runs the real runc as a child with argv untouched and returns its
// exit status; our held log lines are kept only if it succeeded.
func (a *app) Run() int {
	status, err := runc.Run(a.Runtime, a.Inv.Argv0, a.Inv.Args, a.Inv.Command == "run" && !a.Inv.Detach)
	if err != nil {
		return a.Fail(err)
	}
	return status
}

// version prints runc's version lines unchanged (containerd parses them)
// and one line of ours.
func (a *app) version() int {
	return a.runThenAdd(func(out []byte) string {
		nl := ""
		if len(out) > 0 && out[len(out)-1] != '\n' {
			nl = "\n"
		}
		return fmt.Sprintf("%srunc-userns: %s (real runtime %s)\n", nl, version, a.Runtime)
	})
}

// help prints runc's help unchanged, then what runc-userns adds (its own
// commands and annotations), for --help, -h and help without a topic.
func (a *app) help() int {
	return a.runThenAdd(func([]byte) string {
		return admin.HelpTail([]string{
			oci.AnnotationUserns + "=auto|host", oci.AnnotationPIDNamespace + "=container:<ID>", oci.AnnotationIdmapSkip + "=<path>,...",
		})
	})
}

// runThenAdd runs runc with argv untouched as a child, prints its stdout
// unchanged and, if it succeeded, what more(that output) says; runc's
// exit status is ours.
func (a *app) runThenAdd(more func(out []byte) string) int {
	cmd := exec.Command(a.Runtime, a.Inv.Args...)
	cmd.Args[0] = runc.Argv0(a.Inv.Argv0, a.Runtime)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	os.Stdout.Write(out.Bytes())
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return a.Fail(fmt.Errorf("%s %s: %w", a.Runtime, strings.Join(a.Inv.Args, " "), err))
	}
	os.Stdout.WriteString(more(out.Bytes()))
	return 0
}

// execIn runs `runc exec` for a container whose network namespace the
// wrapper entered at create: inside that namespace, or not at all.
func (a *app) execIn() int {
	root, err := filepath.Abs(a.Inv.Root)
	if err != nil {
		return a.Fail(err)
	}
	if a.Inv.Help || (a.Inv.Scanned && oci.ValidateID(a.Inv.ID) != nil) {
		return a.Exec() // runc prints its usage, or refuses the ID
	}
	if !a.Inv.Scanned {
		// Without the ID we cannot tell whether the container needs its
		// network namespace entered: refuse rather than let runc run the
		// process in the host's, if any container of this root needs it.
		// (A flag no runc knows is refused by runc itself; this catches
		// one that a newer runc knows and our scanner does not.)
		if create.NetjoinsUnder(root) {
			return a.Fail(fmt.Errorf("runc-userns could not read the container ID from exec's arguments %q, and containers under --root %s run in a network namespace that runc-userns enters for runc (runc < 1.3): report the arguments as a bug", a.Inv.Args, root))
		}
		return a.Exec()
	}
	nj, found, err := a.Call.NetjoinOf(root, a.Inv.ID)
	if err != nil {
		return a.Fail(fmt.Errorf("container %s: %w", a.Inv.ID, err))
	}
	if !found {
		return a.Exec()
	}
	if _, _, err := netns.Enter(nj.Path, nj.ID); err != nil {
		return a.Fail(fmt.Errorf("container %s: cannot enter its network namespace for exec: %w (the pod's network namespace must outlive its containers)", a.Inv.ID, err))
	}
	// The thread stays locked and in the namespace: runc replaces it.
	return a.Exec()
}
