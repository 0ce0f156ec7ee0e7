package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/admin"
	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/logging"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/netns"
)

// app is one invocation of the wrapper.
type app struct {
	inv     *oci.Invocation
	cfg     *config.Config
	runtime string
	log     *logrus.Logger
	sink    *logging.Sink
	ph      *logging.Phases // create and delete: step times for --debug
}

// fail reports err like runc's fatal() and returns exit status 1.
func (a *app) fail(err error) int {
	return logging.Fatal(a.log, a.sink, err)
}

// exec replaces the wrapper with the real runc, argv untouched. Log lines
// held (warnings about the spec, the stamp or the config) are written only
// if runc succeeds (logging.Sink), so a create, run or delete that holds some
// runs runc as a child instead and waits (a socket-activated create still
// execs: LISTEN_PID must be runc's). Any other command is handed to runc
// whole, signals and exit by signal and all, and its held lines are
// dropped: a config's mistake shows in every create it refuses.
func (a *app) exec() int {
	keep := a.inv.Command == "delete" || a.inv.Creates() && os.Getenv("LISTEN_PID") == ""
	if keep && a.sink.Held() {
		status := a.run()
		if status == 0 {
			a.sink.Commit()
		} else {
			a.sink.Discard()
		}
		return status
	}
	a.sink.Discard()
	return a.fail(runc.Exec(a.runtime, a.inv.Argv0, a.inv.Args))
}

// run runs the real runc as a child with argv untouched and returns its
// exit status; our held log lines are kept only if it succeeded.
func (a *app) run() int {
	status, err := runc.Run(a.runtime, a.inv.Argv0, a.inv.Args, a.inv.Command == "run" && !a.inv.Detach)
	if err != nil {
		return a.fail(err)
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
		return fmt.Sprintf("%srunc-userns: %s (real runtime %s)\n", nl, version, a.runtime)
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
	cmd := exec.Command(a.runtime, a.inv.Args...)
	cmd.Args[0] = runc.Argv0(a.inv.Argv0, a.runtime)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	os.Stdout.Write(out.Bytes())
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return a.fail(fmt.Errorf("%s %s: %w", a.runtime, strings.Join(a.inv.Args, " "), err))
	}
	os.Stdout.WriteString(more(out.Bytes()))
	return 0
}

// The network namespace a runc < 1.3 cannot join (package netns): exec of
// a container whose create entered it for runc finds its record through
// the container's stamp and execs runc inside it too (runc exec joins only
// the namespaces the container's config lists), or refuses: it never lets
// runc run a process of such a container in the host's network namespace.

// execIn runs `runc exec` for a container whose network namespace the
// wrapper entered at create: inside that namespace, or not at all.
func (a *app) execIn() int {
	root, err := filepath.Abs(a.inv.Root)
	if err != nil {
		return a.fail(err)
	}
	if a.inv.Help || (a.inv.Scanned && oci.ValidateID(a.inv.ID) != nil) {
		return a.exec() // runc prints its usage, or refuses the ID
	}
	if !a.inv.Scanned {
		// Without the ID we cannot tell whether the container needs its
		// network namespace entered: refuse rather than let runc run the
		// process in the host's, if any container of this root needs it.
		// (A flag no runc knows is refused by runc itself; this catches
		// one that a newer runc knows and our scanner does not.)
		if netjoinsUnder(root) {
			return a.fail(fmt.Errorf("runc-userns could not read the container ID from exec's arguments %q, and containers under --root %s run in a network namespace that runc-userns enters for runc (runc < 1.3): report the arguments as a bug", a.inv.Args, root))
		}
		return a.exec()
	}
	nj, found, err := a.netjoinOf(root, a.inv.ID)
	if err != nil {
		return a.fail(fmt.Errorf("container %s: %w", a.inv.ID, err))
	}
	if !found {
		return a.exec()
	}
	if _, _, err := netns.Enter(nj.Path, nj.ID); err != nil {
		return a.fail(fmt.Errorf("container %s: cannot enter its network namespace for exec: %w (the pod's network namespace must outlive its containers)", a.inv.ID, err))
	}
	// The thread stays locked and in the namespace: runc replaces it.
	return a.exec()
}

// netjoinMarker is how a stamp that removed a network namespace looks in
// runc's state.json: a "runc-userns.io/stamp=..." label whose JSON,
// escaped inside that label's string, has a netns field.
var netjoinMarker = []byte(`\"netns\":`)

// netjoinOf finds the network namespace record of container id under runc
// root from the container itself: the stamp on its spec, which runc's
// state keeps, names the state dir that holds the record, once it verifies
// with the configured stateDir's key (a call with no environment reads the
// operator's config at its default path). A container whose stamp says the
// wrapper entered its network namespace is exec'd in that namespace or not
// at all, never in the host's. Containers we did not edit that way cost
// one read of their state.json.
func (a *app) netjoinOf(root, id string) (nj netns.Record, found bool, err error) {
	raw, err := os.ReadFile(filepath.Join(root, id, "state.json"))
	if err != nil || !hasNetjoinStamp(raw) {
		return netns.Record{}, false, nil // runc reports a missing container
	}
	var st runc.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return netns.Record{}, false, fmt.Errorf("read runc state of the container: %w", err)
	}
	v, _ := st.Annotation(oci.AnnotationStamp)
	stamp, err := oci.DecodeStamp(v)
	if err == nil {
		err = a.verifyStamp(stamp, oci.Binding{ID: id, Root: root}, false)
	}
	if err != nil {
		return netns.Record{}, false, fmt.Errorf("its %s annotation does not verify (%w): refusing to exec a process that might land in the host's network namespace; delete and recreate the container", oci.AnnotationStamp, err)
	}
	if stamp.Netns == "" {
		return netns.Record{}, false, nil
	}
	rec := state.Layout(stamp.StateDir).NetjoinRecord(root, id)
	nj, found, err = netns.ReadRecord(rec)
	if err == nil && !found {
		err = fmt.Errorf("runc-userns entered network namespace %s for it at create, but its record %s is gone: refusing to exec a process in the host's network namespace; delete and recreate the container", stamp.Netns, rec)
	}
	return nj, err == nil, err
}

// hasNetjoinStamp is netjoinOf's first look: a stamp that removed a network
// namespace, or an annotation that looks like one.
func hasNetjoinStamp(stateJSON []byte) bool {
	return bytes.Contains(stateJSON, []byte(oci.AnnotationStamp+"=")) && bytes.Contains(stateJSON, netjoinMarker)
}

// netjoinsUnder reports whether any container under runc root has a stamp
// that removed its network namespace. The substrings only select what to
// decode: a pod author can put both in any annotation value, and so, had
// they been enough, refuse every unparsed exec under the root. (A stamp
// that does not verify never reaches runc's state: create refuses it.)
func netjoinsUnder(root string) bool {
	list, err := os.ReadDir(root)
	if err != nil {
		return false
	}
	for _, e := range list {
		path := filepath.Join(root, e.Name(), "state.json")
		raw, err := os.ReadFile(path)
		if err != nil || !hasNetjoinStamp(raw) {
			continue
		}
		st, err := runc.ParseState(raw, path)
		if err != nil {
			return true // in doubt: it may be one
		}
		v, _ := st.Annotation(oci.AnnotationStamp)
		if stamp, err := oci.DecodeStamp(v); err == nil && stamp.Netns != "" {
			return true
		}
	}
	return false
}
