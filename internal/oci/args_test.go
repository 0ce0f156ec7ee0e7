package oci

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// want is the part of an Invocation a case checks; Args is checked
// separately (it must be the very slice passed in).
type want struct {
	Root, Log, LogFormat string
	Debug, Version, Help bool
	Command, ID, Bundle  string
	Detach, Keep, Force  bool
	Scanned              bool
	UnknownFlag          string
}

func got(inv *Invocation) want {
	return want{
		Root: inv.Root, Log: inv.Log, LogFormat: inv.LogFormat,
		Debug: inv.Debug, Version: inv.Version, Help: inv.Help,
		Command: inv.Command, ID: inv.ID, Bundle: inv.Bundle,
		Detach: inv.Detach, Keep: inv.Keep, Force: inv.Force,
		Scanned: inv.Scanned, UnknownFlag: inv.UnknownFlag,
	}
}

// flagForms spells a value flag the four ways Go's flag package accepts.
func flagForms(name, value string) map[string][]string {
	return map[string][]string{
		"--" + name + " v": {"--" + name, value},
		"--" + name + "=v": {"--" + name + "=" + value},
		"-" + name + " v":  {"-" + name, value},
		"-" + name + "=v":  {"-" + name + "=" + value},
	}
}

func TestParseGlobalValueFlags(t *testing.T) {
	type tc struct {
		name string
		args []string
		want want
	}
	var cases []tc
	for _, f := range []struct {
		flag, value string
		set         func(*want)
	}{
		{"root", "/run/containerd/runc/k8s.io", func(w *want) { w.Root = "/run/containerd/runc/k8s.io" }},
		{"log", "/run/log.json", func(w *want) { w.Log = "/run/log.json" }},
		{"log-format", "json", func(w *want) { w.LogFormat = "json" }},
		// --criu and --rootless take a value the wrapper does not keep:
		// what matters is that the value is not taken for the command.
		{"criu", "/usr/sbin/criu", func(*want) {}},
		{"rootless", "auto", func(*want) {}},
	} {
		for form, flagArgs := range flagForms(f.flag, f.value) {
			w := want{Root: DefaultRoot, Command: "delete", ID: "c1", Scanned: true}
			f.set(&w)
			cases = append(cases, tc{name: form, args: append(flagArgs, "delete", "c1"), want: w})
		}
	}
	slices.SortFunc(cases, func(a, b tc) int { return strings.Compare(a.name, b.name) })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if g := got(Parse(c.args)); g != c.want {
				t.Errorf("Parse(%q):\n got %+v\nwant %+v", c.args, g, c.want)
			}
		})
	}
}

func TestParseGlobalBoolFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want want
	}{
		{"--debug", []string{"--debug", "state", "c1"}, want{Root: DefaultRoot, Debug: true, Command: "state"}},
		{"-debug", []string{"-debug", "state", "c1"}, want{Root: DefaultRoot, Debug: true, Command: "state"}},
		{"--debug=true", []string{"--debug=true", "state"}, want{Root: DefaultRoot, Debug: true, Command: "state"}},
		{"-debug=1", []string{"-debug=1", "state"}, want{Root: DefaultRoot, Debug: true, Command: "state"}},
		{"--debug=false", []string{"--debug=false", "state"}, want{Root: DefaultRoot, Command: "state"}},
		{"-debug=0", []string{"-debug=0", "state"}, want{Root: DefaultRoot, Command: "state"}},
		// A bool flag never takes the next argument as its value.
		{"--debug false is a command", []string{"--debug", "false"}, want{Root: DefaultRoot, Debug: true, Command: "false"}},
		{"--systemd-cgroup", []string{"--systemd-cgroup", "delete", "c1"}, want{Root: DefaultRoot, Command: "delete", ID: "c1", Scanned: true}},
		{"-systemd-cgroup", []string{"-systemd-cgroup", "delete", "c1"}, want{Root: DefaultRoot, Command: "delete", ID: "c1", Scanned: true}},
		{"--systemd-cgroup=false", []string{"--systemd-cgroup=false", "delete", "c1"}, want{Root: DefaultRoot, Command: "delete", ID: "c1", Scanned: true}},
		{"-systemd-cgroup=true", []string{"-systemd-cgroup=true", "delete", "c1"}, want{Root: DefaultRoot, Command: "delete", ID: "c1", Scanned: true}},
		{"--help", []string{"--help"}, want{Root: DefaultRoot, Help: true}},
		{"-help", []string{"-help"}, want{Root: DefaultRoot, Help: true}},
		{"--h", []string{"--h"}, want{Root: DefaultRoot, Help: true}},
		{"-h", []string{"-h"}, want{Root: DefaultRoot, Help: true}},
		{"-h=false", []string{"-h=false", "list"}, want{Root: DefaultRoot, Command: "list"}},
		{"--help=true", []string{"--help=true"}, want{Root: DefaultRoot, Help: true}},
		{"--version", []string{"--version"}, want{Root: DefaultRoot, Version: true}},
		{"-version", []string{"-version"}, want{Root: DefaultRoot, Version: true}},
		{"--v", []string{"--v"}, want{Root: DefaultRoot, Version: true}},
		{"-v", []string{"-v"}, want{Root: DefaultRoot, Version: true}},
		{"-v=true", []string{"-v=true"}, want{Root: DefaultRoot, Version: true}},
		{"--version=false", []string{"--version=false", "list"}, want{Root: DefaultRoot, Command: "list"}},
		{
			"every global flag",
			[]string{"--root", "/r", "--log=/l", "-log-format", "json", "--criu=/c", "-rootless=false", "--debug", "-systemd-cgroup", "create", "--bundle", "/b", "c1"},
			want{Root: "/r", Log: "/l", LogFormat: "json", Debug: true, Command: "create", ID: "c1", Bundle: "/b", Scanned: true},
		},
		{"a later --root wins", []string{"--root", "/a", "--root=/b", "delete", "c1"}, want{Root: "/b", Command: "delete", ID: "c1", Scanned: true}},
		// Go's flag package gives a value flag the next argument whatever
		// it looks like.
		{"value that looks like a flag", []string{"--root", "--debug", "delete", "c1"}, want{Root: "--debug", Command: "delete", ID: "c1", Scanned: true}},
		{"empty value", []string{"--root=", "delete", "c1"}, want{Root: "", Command: "delete", ID: "c1", Scanned: true}},
		{"value with =", []string{"--log=/a=b", "delete", "c1"}, want{Root: DefaultRoot, Log: "/a=b", Command: "delete", ID: "c1", Scanned: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if g := got(Parse(c.args)); g != c.want {
				t.Errorf("Parse(%q):\n got %+v\nwant %+v", c.args, g, c.want)
			}
		})
	}
}

func TestParseEdges(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want want
	}{
		{"no args", nil, want{Root: DefaultRoot}},
		{"empty args", []string{}, want{Root: DefaultRoot}},
		{"missing value at the end: --root", []string{"--root"}, want{Root: DefaultRoot}},
		{"missing value at the end: -log", []string{"--debug", "-log"}, want{Root: DefaultRoot, Debug: true}},
		{"missing value at the end: --log-format", []string{"--root", "/r", "--log-format"}, want{Root: "/r"}},
		{"missing value at the end: --criu", []string{"--criu"}, want{Root: DefaultRoot}},
		{"missing value at the end: --rootless", []string{"--rootless"}, want{Root: DefaultRoot}},
		{"unknown global flag", []string{"--bogus", "create", "c1"}, want{Root: DefaultRoot}},
		{"unknown global flag after known ones", []string{"--root", "/r", "--bundle", "/b", "create", "c1"}, want{Root: "/r"}},
		{"subcommand flag in global position", []string{"-b", "/b", "create", "c1"}, want{Root: DefaultRoot}},
		{"-- before the command", []string{"--", "create", "c1"}, want{Root: DefaultRoot, Command: "create", ID: "c1", Scanned: true}},
		{"flags then --", []string{"--root", "/r", "--", "delete", "--force", "c1"}, want{Root: "/r", Command: "delete", ID: "c1", Force: true, Scanned: true}},
		{"-- alone", []string{"--"}, want{Root: DefaultRoot}},
		{"-- then a flag-like command", []string{"--", "--root", "x"}, want{Root: DefaultRoot, Command: "--root"}},
		{"single dash is the command", []string{"-", "c1"}, want{Root: DefaultRoot, Command: "-"}},
		{"other commands are not scanned", []string{"state", "c1"}, want{Root: DefaultRoot, Command: "state"}},
		{"exec: ID, the command's flags are not ours", []string{"exec", "-t", "c1", "sh", "-c", "--root"}, want{Root: DefaultRoot, Command: "exec", ID: "c1", Scanned: true}},
		{"exec as containerd runs it", []string{"--root", "/r", "--log", "l", "--log-format", "json", "exec", "--process", "/tmp/p.json", "--console-socket", "/s", "--detach", "--pid-file", "/p", "c1"}, want{Root: "/r", Log: "l", LogFormat: "json", Command: "exec", ID: "c1", Detach: true, Scanned: true}},
		{"exec with value flags in = form", []string{"exec", "--user=0:0", "-e", "A=1", "--cwd=/", "c1", "id"}, want{Root: DefaultRoot, Command: "exec", ID: "c1", Scanned: true}},
		{"exec with an unknown flag", []string{"exec", "--future", "x", "c1", "id"}, want{Root: DefaultRoot, Command: "exec", UnknownFlag: "--future"}},
		{"exec without an ID", []string{"exec", "-t"}, want{Root: DefaultRoot, Command: "exec"}},
		{"features", []string{"features"}, want{Root: DefaultRoot, Command: "features"}},
		{"help command", []string{"help", "create"}, want{Root: DefaultRoot, Command: "help"}},
		{"global --help with a command", []string{"--help", "create", "c1"}, want{Root: DefaultRoot, Help: true, Command: "create", ID: "", Scanned: false}},
		{"--version with a command", []string{"-v", "list"}, want{Root: DefaultRoot, Version: true, Command: "list"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if g := got(Parse(c.args)); g != c.want {
				t.Errorf("Parse(%q):\n got %+v\nwant %+v", c.args, g, c.want)
			}
		})
	}
}

func TestParseCreateRunDelete(t *testing.T) {
	def := func(w want) want {
		if w.Root == "" {
			w.Root = DefaultRoot
		}
		return w
	}
	cases := []struct {
		name string
		args []string
		want want
	}{
		// create
		{"create id", []string{"create", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},
		{"create -b", []string{"create", "-b", "/b", "c1"}, def(want{Command: "create", ID: "c1", Bundle: "/b", Scanned: true})},
		{"create -b=", []string{"create", "-b=/b", "c1"}, def(want{Command: "create", ID: "c1", Bundle: "/b", Scanned: true})},
		{"create --bundle", []string{"create", "--bundle", "/b", "c1"}, def(want{Command: "create", ID: "c1", Bundle: "/b", Scanned: true})},
		{"create --bundle=", []string{"create", "--bundle=/b", "c1"}, def(want{Command: "create", ID: "c1", Bundle: "/b", Scanned: true})},
		{"create -bundle", []string{"create", "-bundle", "/b", "c1"}, def(want{Command: "create", ID: "c1", Bundle: "/b", Scanned: true})},
		{
			"create with every flag",
			[]string{"create", "--bundle", "/b", "--console-socket", "/tmp/pty.sock", "--pid-file=/run/init.pid", "--preserve-fds", "3", "--pidfd-socket", "/s", "--no-pivot", "--no-new-keyring", "c1"},
			def(want{Command: "create", ID: "c1", Bundle: "/b", Scanned: true}),
		},
		{"create --console-socket value is not the id", []string{"create", "--console-socket", "/s", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},
		{"create --pid-file value is not the id", []string{"create", "--pid-file", "/p", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},
		{"create --preserve-fds value is not the id", []string{"create", "--preserve-fds", "2", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},
		{"create --no-pivot takes no value", []string{"create", "--no-pivot", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},
		{"create --no-pivot=true", []string{"create", "--no-pivot=true", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},
		{"create flags after the id", []string{"create", "c1", "--bundle", "/b", "--pid-file", "/p"}, def(want{Command: "create", ID: "c1", Bundle: "/b", Scanned: true})},
		{"create flags around the id", []string{"create", "-b", "/b", "c1", "--console-socket=/s"}, def(want{Command: "create", ID: "c1", Bundle: "/b", Scanned: true})},
		{"create -- id", []string{"create", "--", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},
		{"create -- flag-like id", []string{"create", "-b", "/b", "--", "-c1"}, def(want{Command: "create", ID: "-c1", Bundle: "/b", Scanned: true})},
		{"create id -- extra", []string{"create", "c1", "--", "c2"}, def(want{Command: "create", ID: "", Scanned: false})},
		{"create two positionals", []string{"create", "c1", "c2"}, def(want{Command: "create", Scanned: false})},
		{"create two positionals around a flag", []string{"create", "c1", "-b", "/b", "c2"}, def(want{Command: "create", Bundle: "/b", Scanned: false})},
		{"create no positional", []string{"create", "--bundle", "/b"}, def(want{Command: "create", Bundle: "/b", Scanned: false})},
		{"create missing value at the end", []string{"create", "c1", "--bundle"}, def(want{Command: "create", Scanned: false})},
		{"create unknown flag", []string{"create", "--bogus", "c1"}, def(want{Command: "create", Scanned: false, UnknownFlag: "--bogus"})},
		{"create unknown flag, the bundle after it", []string{"create", "--future", "--bundle", "/b", "c1"}, def(want{Command: "create", Bundle: "/b", Scanned: false, UnknownFlag: "--future"})},
		{"create unknown flag, -b= after it", []string{"create", "--future", "x", "-b=/b", "c1"}, def(want{Command: "create", Bundle: "/b", Scanned: false, UnknownFlag: "--future"})},
		{"create unknown flag with a value, after the bundle", []string{"create", "-b", "/b", "--future=x", "c1"}, def(want{Command: "create", Bundle: "/b", Scanned: false, UnknownFlag: "--future=x"})},
		{"create does not know -d", []string{"create", "-d", "c1"}, def(want{Command: "create", Scanned: false, UnknownFlag: "-d"})},
		{"create --help", []string{"create", "--help"}, def(want{Command: "create", Help: true, Scanned: false})},
		{"create -h with an id", []string{"create", "-h", "c1"}, def(want{Command: "create", Help: true, Scanned: false})},
		{"create value that looks like a flag", []string{"create", "--pid-file", "--bundle", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},
		{"create empty bundle", []string{"create", "--bundle=", "c1"}, def(want{Command: "create", ID: "c1", Scanned: true})},

		// run
		{"run id", []string{"run", "c1"}, def(want{Command: "run", ID: "c1", Scanned: true})},
		{"run -d", []string{"run", "-d", "c1"}, def(want{Command: "run", ID: "c1", Detach: true, Scanned: true})},
		{"run --detach", []string{"run", "--detach", "c1"}, def(want{Command: "run", ID: "c1", Detach: true, Scanned: true})},
		{"run --detach=false", []string{"run", "--detach=false", "c1"}, def(want{Command: "run", ID: "c1", Detach: false, Scanned: true})},
		{"run -d=true", []string{"run", "-d=true", "c1"}, def(want{Command: "run", ID: "c1", Detach: true, Scanned: true})},
		{"run --keep", []string{"run", "--keep", "c1"}, def(want{Command: "run", ID: "c1", Keep: true, Scanned: true})},
		{"run --keep=false", []string{"run", "--keep=false", "c1"}, def(want{Command: "run", ID: "c1", Scanned: true})},
		{"run --no-subreaper", []string{"run", "--no-subreaper", "c1"}, def(want{Command: "run", ID: "c1", Scanned: true})},
		{"run with create flags", []string{"run", "-b", "/b", "--pid-file", "/p", "--console-socket", "/s", "-d", "c1"}, def(want{Command: "run", ID: "c1", Bundle: "/b", Detach: true, Scanned: true})},
		{"run flags after the id", []string{"run", "c1", "--keep", "-d", "--bundle=/b"}, def(want{Command: "run", ID: "c1", Bundle: "/b", Detach: true, Keep: true, Scanned: true})},
		{"run two positionals", []string{"run", "-d", "c1", "c2"}, def(want{Command: "run", Detach: true, Scanned: false})},
		{"run --help", []string{"run", "--help"}, def(want{Command: "run", Help: true})},

		// delete
		{"delete id", []string{"delete", "c1"}, def(want{Command: "delete", ID: "c1", Scanned: true})},
		{"delete -f", []string{"delete", "-f", "c1"}, def(want{Command: "delete", ID: "c1", Force: true, Scanned: true})},
		{"delete --force", []string{"delete", "--force", "c1"}, def(want{Command: "delete", ID: "c1", Force: true, Scanned: true})},
		{"delete --force=false", []string{"delete", "--force=false", "c1"}, def(want{Command: "delete", ID: "c1", Scanned: true})},
		{"delete -force", []string{"delete", "-force", "c1"}, def(want{Command: "delete", ID: "c1", Force: true, Scanned: true})},
		{"delete flag after the id", []string{"delete", "c1", "--force"}, def(want{Command: "delete", ID: "c1", Force: true, Scanned: true})},
		{"delete -f after the id", []string{"delete", "c1", "-f"}, def(want{Command: "delete", ID: "c1", Force: true, Scanned: true})},
		{"delete with global flags (containerd)", []string{"--root", "/run/containerd/runc/k8s.io", "--log", "/l", "--log-format", "json", "delete", "--force", "c1"}, def(want{Root: "/run/containerd/runc/k8s.io", Log: "/l", LogFormat: "json", Command: "delete", ID: "c1", Force: true, Scanned: true})},
		{"delete does not know -b", []string{"delete", "-b", "/b", "c1"}, def(want{Command: "delete", Scanned: false, UnknownFlag: "-b"})},
		{"delete two positionals", []string{"delete", "c1", "c2"}, def(want{Command: "delete", Scanned: false})},
		{"delete no positional", []string{"delete", "--force"}, def(want{Command: "delete", Force: true, Scanned: false})},
		{"delete --help", []string{"delete", "--help", "c1"}, def(want{Command: "delete", Help: true, Scanned: false})},
		{"delete -h", []string{"delete", "-h"}, def(want{Command: "delete", Help: true, Scanned: false})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if g := got(Parse(c.args)); g != c.want {
				t.Errorf("Parse(%q):\n got %+v\nwant %+v", c.args, g, c.want)
			}
		})
	}
}

// The argv that reaches runc is the one we were given, byte for byte: the
// very slice, unmodified.
func TestParseKeepsArgs(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"containerd create", containerdCreate},
		{"run with trailing flags", []string{"run", "c1", "-d", "--keep"}},
		{"unknown flag", []string{"--bogus", "create", "c1"}},
		{"not scanned", []string{"exec", "c1", "sh", "-c", "echo --root"}},
		{"odd bytes", []string{"--log=\xff\x00", "create", "--bundle", "/b\n", "c 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.args)
			inv := Parse(c.args)
			if len(inv.Args) != len(c.args) || cap(inv.Args) != cap(c.args) || &inv.Args[0] != &c.args[0] {
				t.Fatalf("Args is not the slice passed in")
			}
			if !reflect.DeepEqual(c.args, before) {
				t.Errorf("Parse changed argv: %q, was %q", c.args, before)
			}
		})
	}
	if inv := Parse(nil); inv.Args != nil {
		t.Errorf("Parse(nil).Args = %q, want nil", inv.Args)
	}
}

func TestValidateID(t *testing.T) {
	cases := []struct {
		name string
		id   string
		ok   bool
	}{
		{"letters", "abc", true},
		{"containerd sha", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", true},
		{"every allowed byte", "aZ09_+-.", true},
		{"dots inside", "a..b", true},
		{"leading dots", "..a", true},
		{"trailing dot", "a.", true},
		{"1024 bytes", strings.Repeat("a", 1024), true},
		{"empty", "", false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"parent", "../x", false},
		{"slash", "a/b", false},
		{"absolute", "/a", false},
		{"NUL byte", "a\x00b", false},
		{"1025 bytes", strings.Repeat("a", 1025), false},
		{"non-ASCII", "café", false},
		{"invalid UTF-8", "a\xffb", false},
		{"space", "a b", false},
		{"colon", "container:a", false},
		{"comma", "a,b", false},
		{"newline", "a\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateID(c.id)
			if c.ok {
				if err != nil {
					t.Errorf("ValidateID(%.50q) = %v, want nil", c.id, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateID(%.50q) = nil, want an error", c.id)
			}
			if !strings.Contains(err.Error(), "invalid container id") {
				t.Errorf("ValidateID(%.50q) = %q, want it to say %q", c.id, err, "invalid container id")
			}
			if len(err.Error()) > 200 {
				t.Errorf("ValidateID(%.50q): message is %d bytes: it must not repeat a long id in full", c.id, len(err.Error()))
			}
		})
	}
}

// FuzzParse feeds NUL-separated argv (a real argv cannot hold NUL).
func FuzzParse(f *testing.F) {
	for _, args := range [][]string{
		containerdCreate,
		{"create", "c1"},
		{"run", "-d", "--keep", "c1"},
		{"delete", "--force", "c1"},
		{"--", "create", "--", "c1"},
		{"--root=/r", "-log", "/l", "delete", "c1", "-f=false"},
		{"--help"},
		{"create", "--bundle"},
		{"-=", "--=x", "---x", "-"},
	} {
		f.Add(strings.Join(args, "\x00"))
	}
	commands := map[string]bool{"create": true, "run": true, "delete": true}
	f.Fuzz(func(t *testing.T, s string) {
		var args []string
		if s != "" {
			args = strings.Split(s, "\x00")
		}
		before := slices.Clone(args)
		inv := Parse(args)
		if !reflect.DeepEqual(args, before) {
			t.Fatalf("Parse changed argv %q to %q", before, args)
		}
		if len(inv.Args) != len(args) || (len(args) > 0 && &inv.Args[0] != &args[0]) {
			t.Fatalf("Args is not the slice passed in")
		}
		if inv.Command == "" && (inv.Scanned || inv.ID != "") {
			t.Fatalf("Parse(%q): no command but %+v", args, inv)
		}
		if !inv.Scanned {
			if inv.ID != "" {
				t.Fatalf("Parse(%q): not scanned but ID %q", args, inv.ID)
			}
			return
		}
		if !commands[inv.Command] {
			t.Fatalf("Parse(%q): scanned command %q", args, inv.Command)
		}
		if inv.Help {
			t.Fatalf("Parse(%q): scanned a help request", args)
		}
		cmd := slices.Index(args, inv.Command)
		if cmd < 0 || !slices.Contains(args[cmd+1:], inv.ID) {
			t.Fatalf("Parse(%q): command %q / id %q not in argv in that order", args, inv.Command, inv.ID)
		}
		_ = ValidateID(inv.ID)
	})
}

var containerdCreate = []string{
	"--root", "/run/containerd/runc/k8s.io",
	"--log", "/run/containerd/io.containerd.runtime.v2.task/k8s.io/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/log.json",
	"--log-format", "json",
	"--systemd-cgroup",
	"create",
	"--bundle", "/run/containerd/io.containerd.runtime.v2.task/k8s.io/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	"--pid-file", "/run/containerd/io.containerd.runtime.v2.task/k8s.io/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/init.pid",
	"--console-socket", "/tmp/pty.sock",
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		inv := Parse(containerdCreate)
		if !inv.Scanned {
			b.Fatal("not scanned")
		}
	}
}

func TestRuncRoot(t *testing.T) {
	cases := []struct {
		name   string
		env    map[string]string
		euid   int
		userns bool
		want   string
	}{
		{"root, no XDG_RUNTIME_DIR", nil, 0, false, DefaultRoot},
		{"root outside a user namespace ignores XDG_RUNTIME_DIR", map[string]string{"XDG_RUNTIME_DIR": "/run/user/0"}, 0, false, DefaultRoot},
		{"not root", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, 1000, false, "/run/user/1000/runc"},
		{"not root, no XDG_RUNTIME_DIR", nil, 1000, false, DefaultRoot},
		{"root in a user namespace, USER unset", map[string]string{"XDG_RUNTIME_DIR": "/x"}, 0, true, "/x/runc"},
		{"root in a user namespace, USER=root", map[string]string{"XDG_RUNTIME_DIR": "/x", "USER": "root"}, 0, true, DefaultRoot},
		{"root in a user namespace, USER=alice", map[string]string{"XDG_RUNTIME_DIR": "/x", "USER": "alice"}, 0, true, "/x/runc"},
		{"empty XDG_RUNTIME_DIR", map[string]string{"XDG_RUNTIME_DIR": ""}, 1000, true, DefaultRoot},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			getenv := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
			if got := RuncRoot(getenv, c.euid, func() bool { return c.userns }); got != c.want {
				t.Errorf("RuncRoot = %q, want %q", got, c.want)
			}
		})
	}
}
