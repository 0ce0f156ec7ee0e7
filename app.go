package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"

	"github.com/sirupsen/logrus"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/logging"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
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
	return a.fail(runc.Exec(a.runtime, a.inv.Args))
}

// run runs the real runc as a child with argv untouched and returns its
// exit status; our held log lines are kept only if it succeeded.
func (a *app) run() int {
	status, err := runc.Run(a.runtime, a.inv.Args, a.inv.Command == "run" && !a.inv.Detach)
	if err != nil {
		return a.fail(err)
	}
	return status
}

// version prints runc's version lines unchanged (containerd parses them)
// and one line of ours.
func (a *app) version() int {
	cmd := exec.Command(a.runtime, a.inv.Args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	os.Stdout.Write(out.Bytes())
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return a.fail(fmt.Errorf("%s --version: %w", a.runtime, err))
	}
	w := bufio.NewWriter(os.Stdout)
	if out.Len() > 0 && out.Bytes()[out.Len()-1] != '\n' {
		w.WriteByte('\n')
	}
	fmt.Fprintf(w, "runc-userns: %s (real runtime %s)\n", version, a.runtime)
	w.Flush()
	return 0
}
