package oci

import (
	"fmt"
	"strconv"
	"strings"
)

// Invocation is what the wrapper learns from runc's argv. Args is the
// original argv (without argv[0]) and is what reaches the real runc, byte
// for byte; every other field is read from it and never written back.
type Invocation struct {
	Args []string
	// Argv0 is the caller's argv[0] (set by the caller of Parse), which
	// the real runc gets too: runc names itself after it in its help.
	Argv0 string

	// Global flags.
	Root      string // --root, else DefaultRoot (see RuncRoot)
	RootGiven bool   // argv has --root
	Log       string
	LogFormat string
	Debug     bool
	Version   bool // --version / -v with no subcommand
	Help      bool

	// Command is the runc subcommand ("" when there is none).
	Command string

	// Subcommand operands; only create, run, delete and exec are scanned.
	ID      string
	Bundle  string
	Detach  bool
	Keep    bool
	Force   bool
	Scanned bool // the subcommand's flags were understood completely
	// UnknownFlag is the first flag of a scanned subcommand that the
	// scanner does not know (one of a newer runc, or a typo runc refuses).
	UnknownFlag string
}

// Creates reports whether the call makes a container: create or run.
func (inv *Invocation) Creates() bool { return inv.Command == "create" || inv.Command == "run" }

// DefaultRoot is runc's default --root for a privileged caller.
const DefaultRoot = "/run/runc"

// RuncRoot is the root runc uses when argv has no --root: DefaultRoot,
// or $XDG_RUNTIME_DIR/runc when XDG_RUNTIME_DIR is set and runc honours
// it (its shouldHonorXDGRuntimeDir: not euid 0, or euid 0 in a user
// namespace with USER unset or not "root"). inUserNS is asked only then.
func RuncRoot(getenv func(string) (string, bool), euid int, inUserNS func() bool) string {
	xdg, _ := getenv("XDG_RUNTIME_DIR")
	if xdg == "" {
		return DefaultRoot
	}
	if euid != 0 {
		return xdg + "/runc"
	}
	if !inUserNS() {
		return DefaultRoot
	}
	if u, ok := getenv("USER"); ok && u == "root" {
		return DefaultRoot
	}
	return xdg + "/runc"
}

// flagKind says whether a flag takes a value.
type flagKind int

const (
	boolFlag flagKind = iota
	valueFlag
)

// runc's global flags (runc 1.1 main.go and runc 1.5 main.go agree).
var globalFlags = map[string]flagKind{
	"debug":          boolFlag,
	"log":            valueFlag,
	"log-format":     valueFlag,
	"root":           valueFlag,
	"criu":           valueFlag,
	"systemd-cgroup": boolFlag,
	"rootless":       valueFlag,
	"help":           boolFlag,
	"h":              boolFlag,
	"version":        boolFlag,
	"v":              boolFlag,
}

// Flags of the subcommands the wrapper acts on. Flags a newer runc adds
// are listed so that their values are not mistaken for the container ID.
var commandFlags = map[string]map[string]flagKind{
	"create": createFlags(false),
	"run":    createFlags(true),
	"delete": {"force": boolFlag, "f": boolFlag, "help": boolFlag, "h": boolFlag},
	// exec: runc 1.1 and 1.5 (runc's exec.go). Only the ID is read; flags
	// stop at the first positional argument (SkipArgReorder), the rest is
	// the command.
	"exec": {
		"console-socket":  valueFlag,
		"pidfd-socket":    valueFlag,
		"cwd":             valueFlag,
		"env":             valueFlag,
		"e":               valueFlag,
		"tty":             boolFlag,
		"t":               boolFlag,
		"user":            valueFlag,
		"u":               valueFlag,
		"additional-gids": valueFlag,
		"g":               valueFlag,
		"process":         valueFlag,
		"p":               valueFlag,
		"detach":          boolFlag,
		"d":               boolFlag,
		"pid-file":        valueFlag,
		"process-label":   valueFlag,
		"apparmor":        valueFlag,
		"no-new-privs":    boolFlag,
		"cap":             valueFlag,
		"c":               valueFlag,
		"preserve-fds":    valueFlag,
		"cgroup":          valueFlag,
		"ignore-paused":   boolFlag,
		"help":            boolFlag,
		"h":               boolFlag,
	},
}

func createFlags(run bool) map[string]flagKind {
	m := map[string]flagKind{
		"bundle":         valueFlag,
		"b":              valueFlag,
		"console-socket": valueFlag,
		"pidfd-socket":   valueFlag,
		"pid-file":       valueFlag,
		"no-pivot":       boolFlag,
		"no-new-keyring": boolFlag,
		"preserve-fds":   valueFlag,
		"help":           boolFlag,
		"h":              boolFlag,
	}
	if run {
		m["detach"] = boolFlag
		m["d"] = boolFlag
		m["keep"] = boolFlag
		m["no-subreaper"] = boolFlag
	}
	return m
}

// splitFlag recognises "-x", "--x", "-x=v" and "--x=v" the way Go's flag
// package (under urfave/cli v1, which runc uses) does.
func splitFlag(arg string) (name, value string, hasValue, ok bool) {
	if len(arg) < 2 || arg[0] != '-' || arg == "--" {
		return "", "", false, false
	}
	name = arg[1:]
	if name[0] == '-' {
		name = name[1:]
	}
	if name == "" || name[0] == '-' || name[0] == '=' {
		return "", "", false, false
	}
	if i := strings.IndexByte(name, '='); i >= 0 {
		return name[:i], name[i+1:], true, true
	}
	return name, "", false, true
}

func boolValue(value string, hasValue bool) bool {
	if !hasValue {
		return true
	}
	switch value {
	case "1", "t", "T", "true", "TRUE", "True":
		return true
	}
	return false
}

// Parse scans argv (without argv[0]). It never fails on what runc would
// accept; for a create/run/delete whose flags it does not fully understand
// it leaves Scanned false so that the caller passes argv through untouched
// and lets runc report the problem in its own words.
func Parse(args []string) *Invocation {
	inv := &Invocation{Args: args, Root: DefaultRoot}
	i, ok := inv.scanGlobal(args)
	if !ok {
		return inv
	}
	if i < len(args) && args[i] == "--" {
		i++
	}
	if i >= len(args) {
		return inv
	}
	inv.Command = args[i]
	flags, scanned := commandFlags[inv.Command]
	if !scanned {
		return inv
	}
	positional, ok := inv.scanCommand(flags, args[i+1:])
	if !ok || len(positional) != 1 || inv.Help {
		// runc answers these with its usage text or its own error.
		return inv
	}
	inv.ID = positional[0]
	inv.Scanned = true
	return inv
}

// scanGlobal reads runc's global flags at the head of args and returns the
// index of the first argument after them; ok is false for an unknown flag
// or a value flag without its value (runc itself will refuse them).
func (inv *Invocation) scanGlobal(args []string) (next int, ok bool) {
	i := 0
	for ; i < len(args); i++ {
		name, value, hasValue, isFlag := splitFlag(args[i])
		if !isFlag {
			break
		}
		kind, known := globalFlags[name]
		if !known {
			return i, false
		}
		if kind == valueFlag && !hasValue {
			if i+1 >= len(args) {
				return i, false
			}
			i++
			value = args[i]
		}
		switch name {
		case "root":
			inv.Root, inv.RootGiven = value, true
		case "log":
			inv.Log = value
		case "log-format":
			inv.LogFormat = value
		case "debug":
			inv.Debug = boolValue(value, hasValue)
		case "version", "v":
			inv.Version = boolValue(value, hasValue)
		case "help", "h":
			inv.Help = boolValue(value, hasValue)
		}
	}
	return i, true
}

// scanCommand reads the command's flags (those in flags) from rest, the
// arguments after the command, and returns its positional arguments; ok
// is false for a flag it does not know or one missing its value. For exec
// the first positional ends the scan: the rest is the command to run.
func (inv *Invocation) scanCommand(flags map[string]flagKind, rest []string) (positional []string, ok bool) {
	for j := 0; j < len(rest); j++ {
		if rest[j] == "--" {
			return append(positional, rest[j+1:]...), true
		}
		name, value, hasValue, isFlag := splitFlag(rest[j])
		if !isFlag {
			positional = append(positional, rest[j])
			if inv.Command == "exec" {
				break // the rest is the command
			}
			continue
		}
		kind, known := flags[name]
		if !known {
			inv.UnknownFlag = rest[j]
			inv.guessBundle(rest[j+1:])
			return nil, false
		}
		if kind == valueFlag && !hasValue {
			if j+1 >= len(rest) {
				return nil, false
			}
			j++
			value = rest[j]
		}
		switch name {
		case "bundle", "b":
			inv.Bundle = value
		case "detach", "d":
			inv.Detach = boolValue(value, hasValue)
		case "keep":
			inv.Keep = boolValue(value, hasValue)
		case "force", "f":
			inv.Force = boolValue(value, hasValue)
		case "help", "h":
			inv.Help = boolValue(value, hasValue)
		}
	}
	return positional, true
}

// guessBundle reads a --bundle / -b among the arguments after a flag the
// scanner does not know, whose value (if it takes one) may be any of
// them: a guess, good enough to tell which spec such a create is about
// (create.Call.CreateUnscanned refuses it if that spec needs runc-userns).
func (inv *Invocation) guessBundle(rest []string) {
	for k := 0; k < len(rest); k++ {
		name, value, hasValue, isFlag := splitFlag(rest[k])
		if !isFlag || name != "bundle" && name != "b" {
			continue
		}
		if !hasValue && k+1 < len(rest) {
			k++
			value = rest[k]
		}
		inv.Bundle = value
	}
}

// ValidateID applies the rule runc applies to container IDs (runc's
// libcontainer/factory_linux.go validateID) before any ID is used in a
// file name of ours: a reference like "../x" must never reach the disk.
// Errors quote at most the ID's first 40 bytes: IDs come from pod
// authors too (container:<ID>), and an error must stay one readable line.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("invalid container id %q: must not be empty", id)
	}
	if len(id) > 1024 {
		return fmt.Errorf("invalid container id %s: longer than 1024 bytes", shortQuote(id))
	}
	if id == "." || id == ".." {
		return fmt.Errorf("invalid container id %q: must not be %q", id, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_', c == '+', c == '-', c == '.':
		default:
			return fmt.Errorf("invalid container id %s: byte %q is not allowed (allowed: letters, digits, '_', '+', '-', '.')", shortQuote(id), c)
		}
	}
	return nil
}

// shortQuote quotes s cut to its first 40 bytes, marking the cut.
func shortQuote(s string) string {
	const max = 40
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:max]) + "..."
}
