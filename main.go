// Command runc-userns is a drop-in runc wrapper: it gives pods that ask for
// it their own user namespace from a pool of host ID ranges, with idmapped
// rootfs, and passes every other call to the real runc untouched.
package main

import (
	"fmt"
	"os"

	"github.com/moby/sys/userns"

	"github.com/runc-userns/runc-userns/internal/admin"
	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/create"
	"github.com/runc-userns/runc-userns/internal/logging"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
)

// version is set at build time (Makefile: -ldflags "-X main.version=...").
var version = "dev"

func main() {
	os.Exit(dispatch(os.Args))
}

// dispatch: argv → Invocation, logging, config, then one of: our admin
// verbs, the create/run pipeline, the delete path, or exec of the real runc
// with argv untouched.
func dispatch(argv []string) int {
	if len(argv) > 1 && admin.IsVerb(argv[1]) {
		return admin.Run(argv)
	}
	inv := oci.Parse(argv[1:])
	inv.Argv0 = argv[0]
	if !inv.RootGiven {
		inv.Root = oci.RuncRoot(os.LookupEnv, os.Geteuid(), userns.RunningInUserNS)
	}
	log, sink, err := logging.New(inv.Log, inv.LogFormat, inv.Debug)
	if err != nil {
		// An unusable --log or --log-format: runc reports it in its words.
		return passThrough(inv)
	}
	a := &app{Call: create.Call{Inv: inv, Log: log, Sink: sink, Phases: logging.NewPhases()}}
	a.Runc = a
	if a.Cfg, err = loadConfig(inv); a.Cfg == nil {
		return a.Fail(err)
	} else if err != nil {
		a.Log.Warnf("%v: this %s goes on with the file's runtime and stateDir only; fix the file (every create is refused until then)", err, inv.Command)
	}
	if a.Runtime, err = runc.Find(a.Cfg.Runtime, os.Getenv("PATH")); err != nil {
		if a.Cfg.Runtime != "" && a.Cfg.Path != "" {
			err = fmt.Errorf("%w (fix \"runtime\" in %s)", err, a.Cfg.Path)
		}
		return a.Fail(err)
	}
	switch {
	case inv.Version && inv.Command == "":
		return a.version()
	case inv.Help && inv.Command == "" || inv.Command == "help" && len(inv.Args) > 0 && inv.Args[len(inv.Args)-1] == "help":
		return a.help()
	case inv.Creates() && inv.Scanned:
		return a.create()
	case inv.Creates() && inv.UnknownFlag != "":
		return a.createUnscanned()
	case inv.Command == "delete" && inv.Scanned:
		return a.delete()
	case inv.Command == "exec":
		return a.execIn()
	case inv.Command == "features" && !inv.Help && inv.Args[len(inv.Args)-1] == "features":
		return a.features()
	case admin.IsVerb(inv.Command):
		// runc would answer "No help topic for 'pool'".
		return a.Fail(fmt.Errorf("%s is runc-userns's own command, not runc's, and takes none of runc's global flags before it: run `runc-userns %s ...` with nothing between the two", inv.Command, inv.Command))
	}
	return a.Exec()
}

// loadConfig is config.Load for this call. A mistake in the file must not
// keep the node from stopping and removing its pods: it fails only a
// create (nil config); any other call gets the file's runtime and stateDir
// with the error, to warn about.
func loadConfig(inv *oci.Invocation) (*config.Config, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil && inv.Creates() {
		return nil, err
	}
	return cfg, err
}

// passThrough execs runc when even our logging could not be set up.
func passThrough(inv *oci.Invocation) int {
	cfg, err := loadConfig(inv)
	if cfg == nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	path, err := runc.Find(cfg.Runtime, os.Getenv("PATH"))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	err = runc.Exec(path, inv.Argv0, inv.Args)
	os.Stderr.WriteString(err.Error() + "\n")
	return 1
}
