//go:build cgo

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
)

const (
	fpExec = 0o100755 // S_IFREG | 0755
	fpData = 0o100644
	fpDir  = 0o040755
)

// fpFiles: this binary is /proc/self/exe and is also installed as
// /usr/local/sbin/runc (the first runc on the test PATH); the real runc is
// /usr/sbin/runc, the configured one /opt/runc.
var fpFiles = []fastpathFile{
	{"/proc/self/exe", 1, 100, fpExec, 0, 0},
	{"/usr/local/sbin/runc", 1, 100, fpExec, 0, 0},
	{"/usr/sbin/runc", 1, 200, fpExec, 0, 0},
	{"/opt/runc", 1, 300, fpExec, 9_876_543, 1_764_000_000_123_456_789},
	{"/opt/self", 1, 100, fpExec, 0, 0},
	{"/opt/noexec", 1, 400, fpData, 0, 0},
	{"/opt/dir/runc", 1, 500, fpDir, 0, 0},
	{"/opt/data/runc", 1, 600, fpData, 0, 0},
}

const fpDefault = "/etc/runc-userns/config.json"

// manyVars is env padded with distinct variables to n entries.
func manyVars(env []string, n int) []string {
	out := append([]string(nil), env...)
	for i := len(out); i < n; i++ {
		out = append(out, fmt.Sprintf("V%d=x", i))
	}
	return out
}

func TestFastpathDecide(t *testing.T) {
	const cfg = "/cfg.json"
	withConfig := func(json string) fastpathSys {
		return fastpathSys{configPath: cfg, config: []byte(json), files: fpFiles}
	}
	configured := withConfig(`{"runtime": "/opt/runc"}`)
	env := []string{"PATH=/usr/local/sbin:/usr/sbin", "RUNC_USERNS_CONFIG=" + cfg}
	noConfigEnv := []string{"PATH=/usr/local/sbin:/usr/sbin"}
	defaults := fastpathSys{files: fpFiles}
	deep := `{"userns": {"ranges": [` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `]}}`
	readme := `{
  "runtime": "/opt/runc",
  "stateDir": "/run/runc-userns",
  "userns": {
    "mode": "annotation",
    "subidUser": "runc-userns",
    "ranges": [{"hostID": 2147483648, "size": 67108864}],
    "slotSize": 65536,
    "rootfsChown": false
  }
}
`
	pad := func(n int) string { // a valid config of exactly n bytes
		s := `{"runtime":"/opt/runc"}`
		return s + strings.Repeat(" ", n-len(s))
	}

	cases := []fastpathCase{
		// The commands dispatch answers with a bare exec.
		{"start", []string{"start", "c"}, env, configured, "/opt/runc"},
		{"state", []string{"state", "c"}, env, configured, "/opt/runc"},
		{"kill", []string{"kill", "c", "KILL"}, env, configured, "/opt/runc"},
		{"list", []string{"list"}, env, configured, "/opt/runc"},
		{"ps", []string{"ps", "c", "--", "-ef"}, env, configured, "/opt/runc"},
		{"events", []string{"events", "--stats", "c"}, env, configured, "/opt/runc"},
		{"pause", []string{"pause", "c"}, env, configured, "/opt/runc"},
		{"resume", []string{"resume", "c"}, env, configured, "/opt/runc"},
		{"update", []string{"update", "--memory", "1M", "c"}, env, configured, "/opt/runc"},
		{"command help is runc's", []string{"state", "--help"}, env, configured, "/opt/runc"},

		// The environment runc gets is the one Go would give it: of two
		// entries of one name Go keeps the first; entries without "="
		// are kept as they are.
		{"a variable twice", []string{"state", "c"}, append(env, "PATH=/x"), configured, ""},
		{"4096 variables", []string{"state", "c"}, manyVars(env, 4096), configured, "/opt/runc"},
		{"4097 variables: the duplicate search is Go's", []string{"state", "c"}, manyVars(env, 4097), configured, ""},
		{"a variable twice, empty values", []string{"state", "c"}, append(env, "A=", "A="), configured, ""},
		{"one name the prefix of another", []string{"state", "c"}, append(env, "PATHX=/x", "PAT=/y"), configured, "/opt/runc"},
		{"entries without =, twice", []string{"state", "c"}, append(env, "FOO", "FOO"), configured, "/opt/runc"},

		// Always the Go code's.
		{"create", []string{"create", "c"}, env, configured, ""},
		{"run", []string{"run", "c"}, env, configured, ""},
		{"features", []string{"features"}, env, configured, ""},
		{"pool", []string{"pool", "ls"}, env, configured, ""},
		{"doctor", []string{"doctor"}, env, configured, ""},
		{"checkpoint", []string{"checkpoint", "c"}, env, configured, ""},
		{"spec", []string{"spec"}, env, configured, ""},
		{"help command", []string{"help"}, env, configured, ""},
		{"unknown command", []string{"nosuch"}, env, configured, ""},
		{"command case", []string{"State", "c"}, env, configured, ""},
		{"no command", nil, env, configured, ""},
		{"empty command", []string{""}, env, configured, ""},
		{"dash", []string{"-", "state"}, env, configured, ""},

		// Global flags, every spelling.
		{"--root v", []string{"--root", "/r", "state", "c"}, env, configured, "/opt/runc"},
		{"--root=v", []string{"--root=/r", "state", "c"}, env, configured, "/opt/runc"},
		{"-root v", []string{"-root", "/r", "state", "c"}, env, configured, "/opt/runc"},
		{"-root=v", []string{"-root=/r", "state", "c"}, env, configured, "/opt/runc"},
		{"--root=", []string{"--root=", "state", "c"}, env, configured, "/opt/runc"},
		{"--log --log-format", []string{"--log", "/l", "--log-format", "json", "kill", "c"}, env, configured, "/opt/runc"},
		{"--log= --log-format=", []string{"--log=/l", "--log-format=bogus", "kill", "c"}, env, configured, "/opt/runc"},
		{"--criu", []string{"--criu", "/c", "state", "c"}, env, configured, "/opt/runc"},
		{"-criu=", []string{"-criu=/c", "state", "c"}, env, configured, "/opt/runc"},
		{"--rootless", []string{"--rootless", "auto", "state", "c"}, env, configured, "/opt/runc"},
		{"--rootless=", []string{"--rootless=true", "state", "c"}, env, configured, "/opt/runc"},
		{"--debug", []string{"--debug", "state", "c"}, env, configured, "/opt/runc"},
		{"-debug=false", []string{"-debug=false", "state", "c"}, env, configured, "/opt/runc"},
		{"--systemd-cgroup", []string{"--systemd-cgroup", "start", "c"}, env, configured, "/opt/runc"},
		{"--systemd-cgroup=true", []string{"--systemd-cgroup=true", "start", "c"}, env, configured, "/opt/runc"},
		{"a value that looks like a flag", []string{"--root", "--debug", "state", "c"}, env, configured, "/opt/runc"},
		{"a value that is --", []string{"--root", "--", "state", "c"}, env, configured, "/opt/runc"},
		{"every flag", []string{"--debug", "--log", "/l", "--log-format=json", "-root", "/r", "--criu=/c", "--systemd-cgroup", "--rootless", "false", "list", "-q"}, env, configured, "/opt/runc"},
		{"--help", []string{"--help", "state", "c"}, env, configured, ""},
		{"-h", []string{"-h", "state", "c"}, env, configured, ""},
		{"--help=false", []string{"--help=false", "state", "c"}, env, configured, ""},
		{"--version", []string{"--version"}, env, configured, ""},
		{"-v before a command", []string{"-v", "state", "c"}, env, configured, ""},
		{"--version=false", []string{"--version=false", "state", "c"}, env, configured, ""},
		{"help after --root", []string{"--root", "/r", "-h", "list"}, env, configured, ""},
		{"unknown flag", []string{"--nosuch", "state", "c"}, env, configured, ""},
		{"unknown flag=v", []string{"--nosuch=1", "state", "c"}, env, configured, ""},
		{"flag case", []string{"--Root", "/r", "state", "c"}, env, configured, ""},
		{"three dashes", []string{"---root", "/r", "state", "c"}, env, configured, ""},
		{"missing value", []string{"--root"}, env, configured, ""},
		{"value swallows the command", []string{"--root", "state"}, env, configured, ""},
		{"-- then the command", []string{"--", "state", "c"}, env, configured, "/opt/runc"},
		{"flags, --, command", []string{"--debug", "--", "kill", "c"}, env, configured, "/opt/runc"},
		{"-- twice", []string{"--", "--", "state", "c"}, env, configured, ""},
		{"-- alone", []string{"--"}, env, configured, ""},
		{"-- after the command", []string{"state", "--", "c"}, env, configured, "/opt/runc"},
		{"-=", []string{"-=x", "state", "c"}, env, configured, ""},

		// The environment.
		{"kill switch", []string{"state", "c"}, append([]string{"RUNC_USERNS_FASTPATH=0"}, env...), configured, ""},
		{"kill switch other value", []string{"state", "c"}, append([]string{"RUNC_USERNS_FASTPATH=1"}, env...), configured, "/opt/runc"},
		{"kill switch empty", []string{"state", "c"}, append([]string{"RUNC_USERNS_FASTPATH="}, env...), configured, "/opt/runc"},
		// A name given twice is the Go code's (below), whichever the second.
		{"kill switch given twice", []string{"state", "c"}, append(env, "RUNC_USERNS_FASTPATH=1", "RUNC_USERNS_FASTPATH=0"), configured, ""},
		{"an empty environment entry", []string{"state", "c"}, append([]string{""}, env...), configured, ""},
		{"an entry without =", []string{"state", "c"}, append([]string{"RUNC_USERNS_CONFIG"}, env...), configured, "/opt/runc"},
		{"RUNC_USERNS_CONFIG given twice", []string{"state", "c"}, append(env, "RUNC_USERNS_CONFIG=/other"), configured, ""},
		{"no environment", []string{"state", "c"}, nil, defaults, "/usr/sbin/runc"},

		// Where the config comes from.
		{"default absent", []string{"state", "c"}, noConfigEnv, defaults, "/usr/sbin/runc"},
		{"RUNC_USERNS_CONFIG empty", []string{"state", "c"}, []string{"RUNC_USERNS_CONFIG=", "PATH=/usr/sbin"}, defaults, "/usr/sbin/runc"},
		{"default present", []string{"state", "c"}, noConfigEnv,
			fastpathSys{configPath: fpDefault, config: []byte(`{"runtime":"/opt/runc"}`), files: fpFiles}, "/opt/runc"},
		{"default unreadable", []string{"state", "c"}, noConfigEnv,
			fastpathSys{configPath: fpDefault, configUnreadable: true, files: fpFiles}, ""},
		{"explicit absent", []string{"state", "c"}, []string{"RUNC_USERNS_CONFIG=/missing.json", "PATH=/usr/sbin"}, configured, ""},
		{"explicit default path absent", []string{"state", "c"}, []string{"RUNC_USERNS_CONFIG=" + fpDefault, "PATH=/usr/sbin"}, defaults, "/usr/sbin/runc"},
		{"explicit unreadable", []string{"state", "c"}, env,
			fastpathSys{configPath: cfg, configUnreadable: true, files: fpFiles}, ""},

		// What the config says.
		{"README's config", []string{"state", "c"}, env, withConfig(readme), "/opt/runc"},
		{"no runtime", []string{"state", "c"}, env, withConfig(`{}`), "/usr/sbin/runc"},
		{"empty runtime", []string{"state", "c"}, env, withConfig(`{"runtime": ""}`), "/usr/sbin/runc"},
		{"white space", []string{"state", "c"}, env, withConfig(" \t\r\n{ \"runtime\" :\n\"/opt/runc\" } \n\t"), "/opt/runc"},
		{"escaped runtime", []string{"state", "c"}, env, withConfig(`{"runtime": "\/opt\/runc"}`), ""},
		{"unicode escape", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/r\u0075nc"}`), ""},
		{"non-ASCII runtime", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/r\xc3\xbcnc"}`), ""},
		{"invalid UTF-8 runtime", []string{"state", "c"}, env, withConfig("{\"runtime\": \"/opt/r\xffnc\"}"), ""},
		{"runtime twice", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/runc", "runtime": "/opt/runc"}`), ""},
		{"Runtime", []string{"state", "c"}, env, withConfig(`{"Runtime": "/opt/runc"}`), ""},
		{"RUNTIME", []string{"state", "c"}, env, withConfig(`{"RUNTIME": "/opt/runc"}`), ""},
		{"escaped key", []string{"state", "c"}, env, withConfig(`{"r\u0075ntime": "/opt/runc"}`), ""},
		{"runtime number", []string{"state", "c"}, env, withConfig(`{"runtime": 1}`), ""},
		{"runtime null", []string{"state", "c"}, env, withConfig(`{"runtime": null}`), ""},
		{"runtime object", []string{"state", "c"}, env, withConfig(`{"runtime": {}}`), ""},
		{"runtime array", []string{"state", "c"}, env, withConfig(`{"runtime": ["/opt/runc"]}`), ""},
		{"relative runtime", []string{"state", "c"}, env, withConfig(`{"runtime": "runc"}`), ""},
		{"runtime is this binary", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/self"}`), ""},
		{"runtime missing", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/nosuch"}`), ""},
		// Find does not test the configured file further; the execve
		// fails and the Go code reports it.
		{"runtime not executable", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/noexec"}`), "/opt/noexec"},
		{"unknown key", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/runc", "bogus": 1}`), ""},
		{"unknown userns key", []string{"state", "c"}, env, withConfig(`{"userns": {"bogus": 1}}`), ""},
		{"mode always", []string{"state", "c"}, env, withConfig(`{"userns": {"mode": "always"}}`), "/usr/sbin/runc"},
		{"mode off", []string{"state", "c"}, env, withConfig(`{"userns": {"mode": "off"}}`), "/usr/sbin/runc"},
		{"mode empty", []string{"state", "c"}, env, withConfig(`{"userns": {"mode": ""}}`), "/usr/sbin/runc"},
		{"mode auto", []string{"state", "c"}, env, withConfig(`{"userns": {"mode": "auto"}}`), ""},
		{"mode escaped", []string{"state", "c"}, env, withConfig(`{"userns": {"mode": "\u0061lways"}}`), ""},
		{"stateDir relative", []string{"state", "c"}, env, withConfig(`{"stateDir": "run"}`), ""},
		{"stateDir escaped", []string{"state", "c"}, env, withConfig(`{"stateDir": "\/run"}`), ""},
		{"stateDir with an escape later", []string{"state", "c"}, env, withConfig(`{"stateDir": "/r\u00fcn"}`), "/usr/sbin/runc"},
		{"stateDir empty", []string{"state", "c"}, env, withConfig(`{"stateDir": ""}`), "/usr/sbin/runc"},
		{"slotSize max", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": 4294967295}}`), "/usr/sbin/runc"},
		{"slotSize overflow", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": 4294967296}}`), ""},
		{"slotSize huge", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": 99999999999999999999999}}`), ""},
		{"slotSize negative", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": -1}}`), ""},
		{"slotSize fraction", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": 1.0}}`), ""},
		{"slotSize exponent", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": 1e3}}`), ""},
		{"slotSize leading zero", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": 01}}`), ""},
		{"slotSize zero", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": 0}}`), "/usr/sbin/runc"},
		{"slotSize string", []string{"state", "c"}, env, withConfig(`{"userns": {"slotSize": "1"}}`), ""},
		{"ranges empty", []string{"state", "c"}, env, withConfig(`{"userns": {"ranges": []}}`), "/usr/sbin/runc"},
		{"ranges", []string{"state", "c"}, env, withConfig(`{"userns": {"ranges": [{"hostID": 1, "size": 2}, {}]}}`), "/usr/sbin/runc"},
		{"ranges null", []string{"state", "c"}, env, withConfig(`{"userns": {"ranges": null}}`), ""},
		{"range key case", []string{"state", "c"}, env, withConfig(`{"userns": {"ranges": [{"hostid": 1}]}}`), ""},
		{"ranges trailing comma", []string{"state", "c"}, env, withConfig(`{"userns": {"ranges": [{"size": 1},]}}`), ""},
		{"rootfsChown", []string{"state", "c"}, env, withConfig(`{"userns": {"rootfsChown": true}}`), "/usr/sbin/runc"},
		{"rootfsChown string", []string{"state", "c"}, env, withConfig(`{"userns": {"rootfsChown": "true"}}`), ""},
		{"rootfsChown truex", []string{"state", "c"}, env, withConfig(`{"userns": {"rootfsChown": truex}}`), ""},
		{"userns null", []string{"state", "c"}, env, withConfig(`{"userns": null}`), ""},
		{"subidUser with escapes", []string{"state", "c"}, env, withConfig(`{"userns": {"subidUser": "a\"b\\c\u0041\n"}}`), "/usr/sbin/runc"},
		{"bad escape", []string{"state", "c"}, env, withConfig(`{"userns": {"subidUser": "\x"}}`), ""},
		{"short unicode escape", []string{"state", "c"}, env, withConfig(`{"userns": {"subidUser": "\u00"}}`), ""},
		{"control byte in a string", []string{"state", "c"}, env, withConfig("{\"userns\": {\"subidUser\": \"a\tb\"}}"), ""},
		{"NUL in a string", []string{"state", "c"}, env, withConfig("{\"runtime\": \"/opt/runc\x00\"}"), ""},
		{"empty file", []string{"state", "c"}, env, withConfig(``), ""},
		{"white space only", []string{"state", "c"}, env, withConfig("  \n"), ""},
		{"null", []string{"state", "c"}, env, withConfig(`null`), ""},
		{"array", []string{"state", "c"}, env, withConfig(`[]`), ""},
		{"unterminated object", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/runc"`), ""},
		{"unterminated string", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/runc}`), ""},
		{"trailing comma", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/runc",}`), ""},
		{"missing colon", []string{"state", "c"}, env, withConfig(`{"runtime" "/opt/runc"}`), ""},
		{"single quotes", []string{"state", "c"}, env, withConfig(`{'runtime': '/opt/runc'}`), ""},
		{"byte order mark", []string{"state", "c"}, env, withConfig("\xef\xbb\xbf{}"), ""},
		{"trailing data", []string{"state", "c"}, env, withConfig(`{"runtime": "/opt/runc"}x`), ""},
		{"two objects", []string{"state", "c"}, env, withConfig(`{}{}`), ""},
		{"deep nesting", []string{"state", "c"}, env, withConfig(deep), ""},
		{"deep top level", []string{"state", "c"}, env, withConfig(strings.Repeat("[", 100000)), ""},
		{"64 KiB", []string{"state", "c"}, env, withConfig(pad(65536)), "/opt/runc"},
		{"over 64 KiB", []string{"state", "c"}, env, withConfig(pad(65537)), ""},

		// The PATH search (runc.Find).
		{"PATH skips this binary", []string{"state", "c"}, []string{"PATH=/usr/local/sbin:/usr/sbin"}, defaults, "/usr/sbin/runc"},
		{"PATH unset: fallbacks", []string{"state", "c"}, []string{"HOME=/"}, defaults, "/usr/sbin/runc"},
		{"PATH empty: fallbacks", []string{"state", "c"}, []string{"PATH="}, defaults, "/usr/sbin/runc"},
		{"PATH given twice", []string{"state", "c"}, []string{"PATH=/opt", "PATH=/usr/sbin"}, defaults, ""},
		{"PATH dir, data file and no runc skipped", []string{"state", "c"}, []string{"PATH=/opt/dir:/opt/data:/nosuch:/opt"}, defaults, "/opt/runc"},
		{"PATH cleaned", []string{"state", "c"}, []string{"PATH=/usr//local/../sbin/./"}, defaults, "/usr/sbin/runc"},
		{"PATH dot-dot above the root", []string{"state", "c"}, []string{"PATH=/../../opt"}, defaults, "/opt/runc"},
		{"PATH root", []string{"state", "c"}, []string{"PATH=/"}, fastpathSys{files: append([]fastpathFile{{"/runc", 2, 1, fpExec, 0, 0}}, fpFiles...)}, "/runc"},
		{"PATH empty entry first", []string{"state", "c"}, []string{"PATH=:/usr/sbin"}, defaults, ""},
		{"PATH empty entry after runc", []string{"state", "c"}, []string{"PATH=/usr/sbin:"}, defaults, "/usr/sbin/runc"},
		{"PATH empty entry before runc", []string{"state", "c"}, []string{"PATH=/nosuch::/usr/sbin"}, defaults, ""},
		{"PATH trailing empty entry, no runc", []string{"state", "c"}, []string{"PATH=/nosuch:"}, defaults, ""},
		{"PATH relative entry", []string{"state", "c"}, []string{"PATH=bin:/usr/sbin"}, defaults, ""},
		{"PATH dot", []string{"state", "c"}, []string{"PATH=.:/usr/sbin"}, defaults, ""},
		{"PATH relative after runc", []string{"state", "c"}, []string{"PATH=/usr/sbin:bin"}, defaults, "/usr/sbin/runc"},
		{"PATH only this binary, fallbacks", []string{"state", "c"}, []string{"PATH=/usr/local/sbin"}, defaults, "/usr/sbin/runc"},
		{"only this binary anywhere", []string{"state", "c"}, []string{"PATH=/usr/local/sbin"},
			fastpathSys{files: fpFiles[:2]}, ""},
		{"no runc anywhere", []string{"state", "c"}, []string{"PATH=/nosuch"}, fastpathSys{files: fpFiles[:1]}, ""},
		{"no /proc/self/exe", []string{"state", "c"}, env, fastpathSys{configPath: cfg, config: []byte(`{"runtime":"/opt/runc"}`), files: fpFiles[1:]}, ""},
	}
	runFastpathCases(t, cases)
}

type fastpathCase struct {
	name string
	argv []string // after argv[0]
	env  []string
	sys  fastpathSys
	want string // the runc it execs, "spawn:" and the runc it starts, or "" for "left to Go"
}

func runFastpathCases(t *testing.T, cases []fastpathCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := fastpathDecide(append([]string{"/usr/local/bin/runc-userns"}, c.argv...), c.env, c.sys)
			got := ""
			switch v.kind {
			case verdictExec:
				got = v.runtime
			case verdictGate:
				got = "gate:" + v.runtime
			case verdictSpawn:
				got = "spawn:" + v.runtime
				if !bytes.Equal(v.state, c.sys.state) {
					t.Errorf("fastpathDecide(%q) keeps state %q; want the file's %q", c.argv, v.state, c.sys.state)
				}
			}
			if v.kind != verdictSpawn && v.state != nil {
				t.Errorf("fastpathDecide(%q) = %d keeps state %q", c.argv, v.kind, v.state)
			}
			if got != c.want {
				t.Errorf("fastpathDecide(%q, %q) = %q; want %q", c.argv, c.env, got, c.want)
			}
		})
	}
}

// fpState is a state.json as runc writes it for a container the wrapper
// never edited (cut down: runc's own, with the spec's annotations as
// labels); fpStamped one it edited.
const (
	fpState   = `{"id":"c","init_process_pid":42,"config":{"labels":["bundle=/b","io.kubernetes.cri.container-type=container"]}}` + "\n"
	fpStamped = `{"id":"c","init_process_pid":42,"config":{"labels":["bundle=/b","runc-userns.io/stamp={\"version\":1}"]}}` + "\n"
)

func TestFastpathDeleteExec(t *testing.T) {
	const cfg = "/cfg.json"
	env := []string{"PATH=/usr/sbin", "RUNC_USERNS_CONFIG=" + cfg}
	// state: the config names /opt/runc; runc's state.json of container c
	// under the default root (or at path) holds st.
	state := func(path, st string) fastpathSys {
		if path == "" {
			path = "/run/runc/c/state.json"
		}
		return fastpathSys{configPath: cfg, config: []byte(`{"runtime": "/opt/runc"}`), files: fpFiles, statePath: path, state: []byte(st)}
	}
	plain := state("", fpState)
	stamped := state("", fpStamped)
	anywhere := state("*", fpState)
	unreadable := plain
	unreadable.stateUnreadable = true
	noState := state("/nosuch", fpState)
	withPresent := func(s fastpathSys, paths ...string) fastpathSys { s.present = paths; return s }
	withConfig := func(s fastpathSys, cfg string) fastpathSys { s.config = []byte(cfg); return s }
	big := func(n int) fastpathSys { // a whole state.json of n bytes
		return state("", "{"+strings.Repeat(" ", n-2)+"}")
	}
	long := strings.Repeat("a", 1024)

	cases := []fastpathCase{
		// Containers the wrapper never edited.
		{"delete", []string{"delete", "c"}, env, plain, "/opt/runc"},
		{"exec", []string{"exec", "c", "true"}, env, plain, "/opt/runc"},
		{"exec without a command", []string{"exec", "c"}, env, plain, "/opt/runc"},
		{"exec: flags after the ID are the command's", []string{"exec", "c", "--help", "-x", "--", "sh"}, env, plain, "/opt/runc"},
		{"exec: -- after the ID", []string{"exec", "c", "--", "true"}, env, plain, "/opt/runc"},
		{"exec: a command that looks like an ID", []string{"exec", "c", "d", "e"}, env, plain, "/opt/runc"},

		// Containers it edited: a delete starts runc at once (with a
		// config file in effect), an exec is Go's; and state it is not
		// sure of.
		{"delete stamped", []string{"delete", "c"}, env, stamped, "spawn:/opt/runc"},
		{"delete --force stamped", []string{"--root", "/r", "delete", "--force", "c"}, env, state("/r/c/state.json", fpStamped), "spawn:/opt/runc"},
		{"delete stamped, PATH search", []string{"delete", "c"}, env, func() fastpathSys { s := stamped; s.config = []byte(`{}`); return s }(), "spawn:/usr/sbin/runc"},
		{"delete stamped, no config file", []string{"delete", "c"}, []string{"PATH=/usr/sbin"}, func() fastpathSys { s := stamped; s.configPath = ""; return s }(), ""},
		{"delete stamped, no runc", []string{"delete", "c"}, []string{"PATH=/nowhere", "RUNC_USERNS_CONFIG=" + cfg}, func() fastpathSys { s := stamped; s.config = []byte(`{}`); s.files = fpFiles[:2]; return s }(), ""},
		{"delete stamped, kill switch", []string{"delete", "c"}, append([]string{"RUNC_USERNS_FASTPATH=0"}, env...), stamped, ""},
		// No --root and XDG_RUNTIME_DIR set: runc may use
		// $XDG_RUNTIME_DIR/runc (oci.RuncRoot), so the Go code decides;
		// with --root, or for a bare exec, nothing changes.
		{"delete, no --root, XDG_RUNTIME_DIR", []string{"delete", "c"}, append([]string{"XDG_RUNTIME_DIR=/run/user/0"}, env...), stamped, ""},
		{"delete --root, XDG_RUNTIME_DIR", []string{"--root", "/r", "delete", "--force", "c"}, append([]string{"XDG_RUNTIME_DIR=/run/user/0"}, env...), state("/r/c/state.json", fpStamped), "spawn:/opt/runc"},
		{"state, no --root, XDG_RUNTIME_DIR", []string{"state", "c"}, append([]string{"XDG_RUNTIME_DIR=/run/user/0"}, env...), plain, "/opt/runc"},
		{"delete, no --root, empty XDG_RUNTIME_DIR", []string{"delete", "c"}, append([]string{"XDG_RUNTIME_DIR="}, env...), stamped, "spawn:/opt/runc"},
		{"delete stamped, truncated", []string{"delete", "c"}, env, state("", fpStamped[:60]), ""},
		{"exec stamped", []string{"exec", "c", "true"}, env, stamped, ""},
		{"the key anywhere", []string{"delete", "c"}, env, state("", `{"env":["X=runc-userns.io/stamp"]}`), "spawn:/opt/runc"},
		{"the key anywhere, exec", []string{"exec", "c"}, env, state("", `{"env":["X=runc-userns.io/stamp"]}`), ""},
		{"the key cut short", []string{"delete", "c"}, env, state("", `{"env":["X=runc-userns.io/stam"]}`), "/opt/runc"},
		// A container runc does not have: runc's delete, when nothing of
		// ours is left for it (containerd's second delete, --force).
		{"delete, no state.json, nothing of ours", []string{"delete", "c"}, env, noState, "/opt/runc"},
		{"delete --force, no state.json, nothing of ours", []string{"--root", "/r", "delete", "--force", "c"}, env, noState, "/opt/runc"},
		{"delete, no state.json, its in-flight marker", []string{"delete", "c"}, env, withPresent(noState, "/run/runc-userns/inflight/"+rootHash("/run/runc")+"-c"), ""},
		{"delete, no state.json, its container directory", []string{"delete", "c"}, env, withPresent(noState, "/run/runc-userns/containers/"+rootHash("/run/runc")+"/c"), ""},
		{"delete --root, no state.json, its in-flight marker", []string{"--root", "/r", "delete", "c"}, env, withPresent(noState, "/run/runc-userns/inflight/"+rootHash("/r")+"-c"), ""},
		{"delete --root, no state.json, another root's marker", []string{"--root", "/r", "delete", "c"}, env, withPresent(noState, "/run/runc-userns/inflight/"+rootHash("/run/runc")+"-c"), "/opt/runc"},
		{"delete, no state.json, another container's marker", []string{"delete", "c"}, env, withPresent(noState, "/run/runc-userns/inflight/"+rootHash("/run/runc")+"-c2"), "/opt/runc"},
		{"delete, no state.json, the configured stateDir's marker", []string{"delete", "c"}, env, withPresent(withConfig(noState, `{"runtime": "/opt/runc", "stateDir": "/sd"}`), "/sd/inflight/"+rootHash("/run/runc")+"-c"), ""},
		{"delete, no state.json, the default stateDir's marker, another configured", []string{"delete", "c"}, env, withPresent(withConfig(noState, `{"runtime": "/opt/runc", "stateDir": "/sd"}`), "/run/runc-userns/inflight/"+rootHash("/run/runc")+"-c"), "/opt/runc"},
		{"delete, no state.json, no config file", []string{"delete", "c"}, []string{"PATH=/usr/sbin"}, func() fastpathSys { s := noState; s.configPath = ""; return s }(), "/usr/sbin/runc"},
		{"delete, no state.json, --debug", []string{"--debug", "delete", "c"}, env, noState, ""},
		{"delete, no state.json, fault injection", []string{"delete", "c"}, append([]string{"RUNC_USERNS_TEST_KILL_AT=released"}, env...), noState, ""},
		{"exec, no state.json", []string{"exec", "c", "true"}, env, noState, ""},
		{"unreadable (not a regular file)", []string{"delete", "c"}, env, unreadable, ""},
		{"truncated", []string{"exec", "c"}, env, state("", fpState[:40]), ""},
		{"truncated after the brace", []string{"exec", "c"}, env, state("", `}{"id":"c"`), ""},
		{"empty", []string{"exec", "c"}, env, state("", ""), ""},
		{"white space only", []string{"exec", "c"}, env, state("", " \n"), ""},
		{"a lone brace", []string{"exec", "c"}, env, state("", " { "), ""},
		{"not an object", []string{"exec", "c"}, env, state("", `[{}]`), ""},
		{"white space around", []string{"exec", "c"}, env, state("", " \t\r\n{}\n\r\t "), "/opt/runc"},
		{"4 MiB", []string{"delete", "c"}, env, big(4 << 20), "/opt/runc"},
		{"over 4 MiB", []string{"delete", "c"}, env, big(4<<20 + 1), ""},

		// The ID: oci.ValidateID.
		{"ID with a slash", []string{"delete", "a/c"}, env, anywhere, ""},
		{"ID ..", []string{"delete", ".."}, env, anywhere, ""},
		{"ID .", []string{"exec", ".", "true"}, env, anywhere, ""},
		{"ID empty", []string{"delete", ""}, env, anywhere, ""},
		{"ID space", []string{"delete", "a c"}, env, anywhere, ""},
		{"ID non-ASCII", []string{"delete", "\xc3\xa9"}, env, anywhere, ""},
		{"ID every allowed byte", []string{"delete", "azAZ09_+-.."}, env, state("/run/runc/azAZ09_+-../state.json", fpState), "/opt/runc"},
		{"ID ...", []string{"delete", "..."}, env, state("/run/runc/.../state.json", fpState), "/opt/runc"},
		{"ID -", []string{"delete", "-"}, env, state("/run/runc/-/state.json", fpState), "/opt/runc"},
		{"ID 1024 bytes", []string{"delete", long}, env, state("/run/runc/"+long+"/state.json", fpState), "/opt/runc"},
		{"ID 1025 bytes", []string{"delete", long + "a"}, env, anywhere, ""},

		// --root: Go's filepath.Join(filepath.Abs(root), id, "state.json").
		{"--root", []string{"--root", "/r", "delete", "c"}, env, state("/r/c/state.json", fpState), "/opt/runc"},
		{"-root=", []string{"-root=/r", "exec", "c"}, env, state("/r/c/state.json", fpState), "/opt/runc"},
		{"the last --root", []string{"--root", "/x", "--root=/r", "exec", "c"}, env, state("/r/c/state.json", fpState), "/opt/runc"},
		{"--root cleaned", []string{"--root", "//x/../r/./", "delete", "c"}, env, state("/r/c/state.json", fpState), "/opt/runc"},
		{"--root /", []string{"--root", "/", "delete", "c"}, env, state("/c/state.json", fpState), "/opt/runc"},
		{"--root relative", []string{"--root", "r", "delete", "c"}, env, anywhere, ""},
		{"--root empty", []string{"--root=", "delete", "c"}, env, anywhere, ""},
		{"global flags", []string{"--debug", "--log=/l", "--log-format", "json", "--", "delete", "c"}, env, plain, "/opt/runc"},
		{"global --help", []string{"--help", "delete", "c"}, env, plain, ""},

		// delete's flags (oci.commandFlags).
		{"delete --force", []string{"delete", "--force", "c"}, env, plain, "/opt/runc"},
		{"delete -f", []string{"delete", "-f", "c"}, env, plain, "/opt/runc"},
		{"delete --force=false", []string{"delete", "--force=false", "c"}, env, plain, "/opt/runc"},
		{"delete: a flag after the ID", []string{"delete", "c", "--force"}, env, plain, "/opt/runc"},
		{"delete: flags around the ID", []string{"delete", "-f", "c", "-force=true"}, env, plain, "/opt/runc"},
		{"delete: a bool flag takes no value", []string{"delete", "--force", "c", "d"}, env, plain, ""},
		{"delete: two IDs", []string{"delete", "c", "d"}, env, plain, ""},
		{"delete: no ID", []string{"delete"}, env, plain, ""},
		{"delete: only flags", []string{"delete", "--force"}, env, plain, ""},
		{"delete --help", []string{"delete", "--help", "c"}, env, plain, ""},
		{"delete -h after the ID", []string{"delete", "c", "-h"}, env, plain, ""},
		{"delete --help=false", []string{"delete", "--help=false", "c"}, env, plain, ""},
		{"delete: unknown flag", []string{"delete", "--nosuch", "c"}, env, plain, ""},
		{"delete: an exec flag", []string{"delete", "--tty", "c"}, env, plain, ""},
		{"delete: -- before the ID", []string{"delete", "--", "c"}, env, plain, ""},
		{"delete: -- after the ID", []string{"delete", "c", "--"}, env, plain, ""},
		{"delete: flag case", []string{"delete", "--Force", "c"}, env, plain, ""},

		// exec's flags before the ID.
		{"exec -t -d", []string{"exec", "-t", "-d", "c", "sh"}, env, plain, "/opt/runc"},
		{"exec --tty=false", []string{"exec", "--tty=false", "c", "sh"}, env, plain, "/opt/runc"},
		{"exec: a value like a flag", []string{"exec", "--cwd", "--help", "c", "sh"}, env, plain, "/opt/runc"},
		{"exec: a value like an ID", []string{"exec", "-u", "d", "c", "sh"}, env, plain, "/opt/runc"},
		{"exec --env=", []string{"exec", "--env=A=b", "-e", "C=d", "c"}, env, plain, "/opt/runc"},
		{"exec: missing value", []string{"exec", "--cwd"}, env, plain, ""},
		{"exec: the value swallows the ID", []string{"exec", "--cwd", "c"}, env, plain, ""},
		{"exec: no ID", []string{"exec"}, env, plain, ""},
		{"exec --help", []string{"exec", "--help", "c", "sh"}, env, plain, ""},
		{"exec -h=false", []string{"exec", "-h=false", "c", "sh"}, env, plain, ""},
		{"exec: unknown flag", []string{"exec", "--nosuch", "c", "sh"}, env, plain, ""},
		{"exec: a delete flag", []string{"exec", "--force", "c", "sh"}, env, plain, ""},
		{"exec: -- before the ID", []string{"exec", "--", "c", "sh"}, env, plain, ""},
		{"exec: a bool flag takes no value", []string{"exec", "--tty", "x", "c"}, env, state("/run/runc/x/state.json", fpState), "/opt/runc"},

		// The rest of the decision as for every command.
		{"kill switch", []string{"delete", "c"}, append([]string{"RUNC_USERNS_FASTPATH=0"}, env...), plain, ""},
		{"a config Go refuses", []string{"delete", "c"}, env, func() fastpathSys { s := plain; s.config = []byte(`{"bogus": 1}`); return s }(), ""},
		{"PATH search", []string{"exec", "c"}, env, func() fastpathSys { s := plain; s.config = []byte(`{}`); return s }(), "/usr/sbin/runc"},
	}
	// Every exec flag, in each form.
	for _, f := range []string{"tty", "t", "detach", "d", "no-new-privs", "ignore-paused"} {
		cases = append(cases,
			fastpathCase{"exec -" + f, []string{"exec", "-" + f, "c"}, env, plain, "/opt/runc"},
			fastpathCase{"exec --" + f + "=true", []string{"exec", "--" + f + "=true", "c"}, env, plain, "/opt/runc"})
	}
	for _, f := range []string{"console-socket", "pidfd-socket", "cwd", "env", "e", "user", "u", "additional-gids", "g",
		"process", "p", "pid-file", "process-label", "apparmor", "cap", "c", "preserve-fds", "cgroup"} {
		cases = append(cases,
			fastpathCase{"exec --" + f + " v", []string{"exec", "--" + f, "v", "c"}, env, plain, "/opt/runc"},
			fastpathCase{"exec -" + f + "=v", []string{"exec", "-" + f + "=v", "c"}, env, plain, "/opt/runc"},
			fastpathCase{"exec --" + f + " missing", []string{"exec", "--" + f}, env, plain, ""})
	}
	runFastpathCases(t, cases)
}

// The C side looks for the annotation key the Go code writes, and for the
// stamp's netjoin mark.
func TestFastpathStampKey(t *testing.T) {
	if fastpathStampKey != oci.AnnotationStamp {
		t.Fatalf("FP_STAMP_KEY is %q, oci.AnnotationStamp %q", fastpathStampKey, oci.AnnotationStamp)
	}
	if fastpathNetjoinMarker != string(netjoinMarker) {
		t.Fatalf("FP_NETJOIN_MARKER is %q, netjoinMarker %q", fastpathNetjoinMarker, netjoinMarker)
	}
}

// fp_read_file: whole regular files up to the cap; nothing else, and a
// FIFO without waiting for a writer.
func TestFastpathReadFile(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), n), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		path string
		want int
	}{
		{"empty", file("empty", 0), 0},
		{"small", file("small", 10), 10},
		{"at the cap", file("cap", 100), 100},
		{"over the cap", file("over", 101), fpReadFail},
		{"missing", filepath.Join(dir, "nosuch"), fpReadENOENT},
		{"directory", dir, fpReadFail},
		{"FIFO", fifo, fpReadFail},
		{"not a directory", filepath.Join(file("notdir", 1), "x"), fpReadFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, n := fastpathReadFile(c.path, 100)
			if n != c.want || (n >= 0 && len(got) != n) {
				t.Errorf("fp_read_file(%s, 100) = %d bytes, %d; want %d", c.path, len(got), n, c.want)
			}
		})
	}
}

// fastCommands are the commands the C side may fast-path (main.go's
// dispatch answers them with a bare exec).
var fastCommands = map[string]bool{
	"start": true, "state": true, "kill": true, "list": true, "ps": true,
	"events": true, "pause": true, "resume": true, "update": true,
}

// FuzzFastPath: whenever the C side would exec runc R, the Go code would
// too: oci.Parse finds a fast command and no --help/--version, or a
// delete or exec it scanned, of a valid ID, whose state.json (state, at
// whatever path C reads) is at Go's path and holds no stamp; config.Parse
// accepts the config and names R, or names nothing and R is what
// runc.Find's search finds on PATH. Whenever it would start R early, the
// same holds of a delete whose state holds the stamp, and it keeps those
// bytes for the Go code (which then runs R before it changes anything).
// A state starting with a NUL byte stands for no state.json at all: then
// only a delete may exec R, without --debug (the fake state dir holds
// nothing of ours: delete.go would run R and release nothing).
func FuzzFastPath(f *testing.F) {
	f.Add([]byte("state\x00c"), []byte(`{"runtime":"/opt/runc"}`), "/usr/sbin", []byte(`{}`))
	f.Add([]byte("--root\x00/r\x00kill\x00c\x00KILL"), []byte(`{}`), "/usr/local/sbin:/usr/sbin", []byte(`{}`))
	f.Add([]byte("--\x00list"), []byte(`{"userns":{"mode":"always","ranges":[{"hostID":1,"size":2}],"slotSize":65536}}`), "/usr//local/../sbin", []byte(`{}`))
	f.Add([]byte("create\x00c"), []byte(`{"runtime":"/opt/runc"}`), "/usr/sbin", []byte(`{}`))
	f.Add([]byte("--log-format=json\x00state\x00c"), []byte(`{"stateDir":"/x","userns":{"subidUser":"a\u0041","rootfsChown":true}}`), "/opt:/usr/sbin", []byte(`{}`))
	f.Add([]byte("delete\x00-f\x00c"), []byte(`{}`), "/usr/sbin", []byte(fpState))
	f.Add([]byte("--root\x00/r\x00delete\x00--force\x00c"), []byte(`{"runtime":"/opt/runc"}`), "/usr/sbin", []byte(fpStamped))
	f.Add([]byte("--root=/x/..//r\x00exec\x00-t\x00--cwd\x00/\x00c\x00sh"), []byte(`{}`), "/usr/sbin", []byte(fpStamped))
	f.Add([]byte("--root\x00/r\x00delete\x00--force\x00c"), []byte(`{"runtime":"/opt/runc"}`), "/usr/sbin", []byte("\x00"))
	f.Add([]byte("--debug\x00delete\x00c"), []byte(`{}`), "/usr/sbin", []byte("\x00"))
	f.Fuzz(func(t *testing.T, argvBytes, raw []byte, pathEnv string, state []byte) {
		if bytes.IndexByte([]byte(pathEnv), 0) >= 0 {
			return // not an environment string
		}
		args := strings.Split(string(argvBytes), "\x00")
		sys := fastpathSys{configPath: "/cfg.json", config: raw, files: fpFiles, statePath: "*", state: state}
		missing := len(state) > 0 && state[0] == 0
		if missing {
			sys.statePath = ""
		}
		v := fastpathDecide(append([]string{"runc-userns"}, args...),
			[]string{"RUNC_USERNS_CONFIG=/cfg.json", "PATH=" + pathEnv}, sys)
		if v.kind == verdictGo {
			if v.state != nil {
				t.Fatalf("left %q to Go, but kept state %q", args, v.state)
			}
			return
		}
		got, read := v.runtime, v.stateRead
		inv := oci.Parse(args)
		if inv.Help || inv.Version || adminVerbs[args[0]] {
			t.Fatalf("fast path for %q, but oci.Parse says help %v, version %v", args, inv.Help, inv.Version)
		}
		switch {
		case inv.Command == "delete" || inv.Command == "exec":
			if !inv.Scanned || oci.ValidateID(inv.ID) != nil || !filepath.IsAbs(inv.Root) {
				t.Fatalf("fast path for %q, but oci.Parse says scanned %v, ID %q, root %q", args, inv.Scanned, inv.ID, inv.Root)
			}
			if want := filepath.Join(inv.Root, inv.ID, "state.json"); read != want {
				t.Fatalf("fast path for %q read %q; the Go code reads %q", args, read, want)
			}
			if missing {
				if inv.Command != "delete" || v.kind != verdictExec || inv.Debug || v.state != nil {
					t.Fatalf("verdict %d for %q with no state.json: only a delete without --debug may exec runc", v.kind, args)
				}
				break
			}
			stamped := bytes.Contains(state, []byte(oci.AnnotationStamp))
			switch {
			case v.kind == verdictExec && stamped:
				t.Fatalf("fast path for %q with a stamp in %q", args, state)
			case v.kind == verdictSpawn && (inv.Command != "delete" || !stamped):
				t.Fatalf("runc started early for %q, state %q: only a delete with a stamp may", args, state)
			case v.kind == verdictSpawn && !bytes.Equal(v.state, state):
				t.Fatalf("runc started early for %q, keeping state %q instead of %q", args, v.state, state)
			case v.kind == verdictExec && v.state != nil:
				t.Fatalf("fast path for %q keeps state %q", args, v.state)
			}
			if s := bytes.TrimSpace(state); len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
				t.Fatalf("fast path for %q with a partial state %q", args, state)
			}
		case fastCommands[inv.Command]:
			if read != "" || v.kind != verdictExec {
				t.Fatalf("fast path for %q read a state file %q", args, read)
			}
		default:
			t.Fatalf("fast path for %q, but oci.Parse says command %q", args, inv.Command)
		}
		if !json.Valid(raw) {
			t.Fatalf("fast path with invalid JSON %q", raw)
		}
		var rt struct{ Runtime string }
		if err := json.Unmarshal(raw, &rt); err != nil {
			t.Fatalf("fast path, but %q does not decode: %v", raw, err)
		}
		cfg, err := config.Parse(raw)
		if err != nil {
			t.Fatalf("fast path, but config.Parse(%q): %v", raw, err)
		}
		if cfg.Runtime != rt.Runtime {
			t.Fatalf("config.Parse(%q) runtime %q, a plain decode %q", raw, cfg.Runtime, rt.Runtime)
		}
		want := cfg.Runtime
		if want == "" {
			want = fpSearch(pathEnv)
		}
		if got != want {
			t.Fatalf("fast path execs %q; config %q, PATH %q: the Go code would exec %q", got, raw, pathEnv, want)
		}
	})
}

// fpSearch is runc.Find's search over fpFiles (stat by exact path, which
// is what the fake does): the first regular executable runc on PATH, then
// in the fallbacks, that is not /proc/self/exe; "" for none or a relative
// candidate (which the C side leaves to Go).
func fpSearch(pathEnv string) string {
	var candidates []string
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		candidates = append(candidates, filepath.Join(dir, "runc"))
	}
	candidates = append(candidates, "/usr/local/sbin/runc", "/usr/local/bin/runc",
		"/usr/sbin/runc", "/usr/bin/runc", "/sbin/runc", "/bin/runc")
	for _, c := range candidates {
		for _, f := range fpFiles {
			if f.path == c && f.mode&0o170000 == 0o100000 && f.mode&0o111 != 0 && f.ino != fpFiles[0].ino {
				if !filepath.IsAbs(c) {
					return ""
				}
				return c
			}
		}
	}
	return ""
}

// fpSpec is a spec as containerd writes it for an app container of pod sb1
// (cut down: runc's own `runc spec` and the CRI annotations).
const fpSpec = `{"ociVersion":"1.0.2","process":{"user":{"uid":0,"gid":0},"args":["sh"],"env":["PATH=/bin","X=a\"b\\c\/d"],"cwd":"/"},` +
	`"root":{"path":"rootfs"},"hostname":"h","mounts":[{"destination":"/proc","type":"proc","source":"proc"},` +
	`{"destination":"/v","type":"bind","source":"/data/v","options":["rbind","ro"]}],` +
	`"annotations":{"io.kubernetes.cri.container-type":"container","io.kubernetes.cri.sandbox-id":"sb1"},` +
	`"linux":{"resources":{"memory":{"limit":-1},"cpu":{"quota":1.5e3}},"namespaces":[{"type":"pid"},{"type":"network","path":"/var/run/netns/cni-1"},{"type":"mount"}],` +
	`"maskedPaths":["/proc/kcore"],"seccomp":null}}`

func TestFastpathCreate(t *testing.T) {
	const cfg = "/cfg.json"
	env := []string{"PATH=/usr/sbin", "RUNC_USERNS_CONFIG=" + cfg}
	with := func(config, spec string, pins ...string) fastpathSys {
		return fastpathSys{configPath: cfg, config: []byte(config), files: fpFiles, specPath: "/b/config.json", spec: []byte(spec), present: pins}
	}
	const sd = `{"runtime": "/opt/runc", "stateDir": "/sd"}`
	plain := with(sd, fpSpec)
	edit := func(old, new string, pins ...string) fastpathSys {
		if !strings.Contains(fpSpec, old) {
			t.Fatalf("fpSpec has no %q", old)
		}
		return with(sd, strings.Replace(fpSpec, old, new, 1), pins...)
	}
	create := []string{"create", "--bundle", "/b", "c"}
	cases := []fastpathCase{
		// What create.go hands to runc as it is.
		{"app container of a pod without a pin", create, env, plain, "/opt/runc"},
		{"--bundle=", []string{"create", "--bundle=/b", "--pid-file", "/p", "c"}, env, plain, "/opt/runc"},
		{"-b, flags after the ID", []string{"--root", "/r", "create", "-b", "/b", "c", "--no-pivot", "--preserve-fds=2"}, env, plain, "/opt/runc"},
		{"no annotations", create, env, with(sd, `{"ociVersion":"1.0.2","process":{"args":["true"]}}`), "/opt/runc"},
		{"annotations null", create, env, with(sd, `{"annotations":null}`), "/opt/runc"},
		{"userns.mode off", create, env, with(`{"runtime": "/opt/runc", "stateDir": "/sd", "userns": {"mode": "off"}}`, fpSpec), "/opt/runc"},
		{"a pin of another pod", create, env, with(sd, fpSpec, "/sd/pods/sb2/userns"), "/opt/runc"},
		{"process.user is a key, not a user namespace", create, env, plain, "/opt/runc"},
		{"default stateDir", create, []string{"PATH=/usr/sbin"}, fastpathSys{files: fpFiles, specPath: "/b/config.json", spec: []byte(fpSpec)}, "/usr/sbin/runc"},

		// What it acts on, or might.
		{"pooled pod", create, env, with(sd, fpSpec, "/sd/pods/sb1/userns"), ""},
		{"pooled pod, default stateDir", create, []string{"PATH=/usr/sbin"}, fastpathSys{files: fpFiles, specPath: "/b/config.json", spec: []byte(fpSpec), present: []string{"/run/runc-userns/pods/sb1/userns"}}, ""},
		{"pooled pod, CRI-O", create, env, edit(`"io.kubernetes.cri.sandbox-id":"sb1"`, `"io.kubernetes.cri-o.SandboxID":"sb1"`, "/sd/pods/sb1/userns"), ""},
		{"pooled pod, stateDir not clean", create, env, with(`{"runtime": "/opt/runc", "stateDir": "/x/../sd/"}`, fpSpec, "/sd/pods/sb1/userns"), ""},
		{"sandbox ID runc would refuse", create, env, edit(`sandbox-id":"sb1"`, `sandbox-id":"../sb1"`), ""},
		{"sandbox ID escaped", create, env, edit(`sandbox-id":"sb1"`, `sandbox-id":"sb\/1"`), ""},
		{"our annotation", create, env, edit(`"annotations":{`, `"annotations":{"runc-userns.io/userns":"auto",`), ""},
		{"our annotation, escaped", create, env, edit(`"annotations":{`, `"annotations":{"runc\u002duserns.io/userns":"auto",`), ""},
		{"our annotation, another case", create, env, edit(`"annotations":{`, `"annotations":{"RUNC-USERNS.io/userns":"auto",`), ""},
		{"a stamp", create, env, edit(`"annotations":{`, `"annotations":{"runc-userns.io/stamp":"{}",`), ""},
		{"Annotations", create, env, edit(`"annotations":{`, `"Annotations":{"x":"y"},"annotations":{`), ""},
		{"duplicate annotation", create, env, edit(`"annotations":{`, `"annotations":{"a":"1","a":"2",`), ""},
		{"annotation not a string", create, env, edit(`"annotations":{`, `"annotations":{"a":1,`), ""},
		{"user namespace", create, env, edit(`{"type":"pid"}`, `{"type":"pid"},{"type":"user"}`), ""},
		{"user namespace, another case", create, env, edit(`{"type":"pid"}`, `{"type":"pid"},{"type":"USER"}`), ""},
		{"caller mappings", create, env, edit(`"namespaces"`, `"uidMappings":[{"containerID":0,"hostID":1000,"size":1}],"namespaces"`), ""},
		{"caller mappings, folded key", create, env, edit(`"namespaces"`, `"UIDMAPPINGS":[],"namespaces"`), ""},
		{"caller mappings, non-ASCII key", create, env, edit(`"namespaces"`, "\"uidMapping\u017f\":[],\"namespaces\""), ""},
		{"idmap option", create, env, edit(`"rbind","ro"`, `"rbind","ro","ridmap"`), ""},
		{"mount mappings", create, env, edit(`"source":"/data/v",`, `"source":"/data/v","gidMappings":[],`), ""},
		{"container:<ID> join", create, env, edit(`{"type":"pid"}`, `{"type":"pid","path":"Container:other"}`), ""},
		{"userns.mode always", create, env, with(`{"runtime": "/opt/runc", "stateDir": "/sd", "userns": {"mode": "always"}}`, fpSpec), ""},
		{"mode given twice", create, env, with(`{"runtime": "/opt/runc", "userns": {"mode": "off", "mode": "always"}}`, fpSpec), ""},
		{"stateDir escaped", create, env, with(`{"runtime": "/opt/runc", "stateDir": "\/sd"}`, fpSpec), ""},
		// Go replaces invalid UTF-8: its pins are under "/sd\uFFFD".
		{"stateDir not ASCII", create, env, with("{\"runtime\": \"/opt/runc\", \"stateDir\": \"/sd\xff\"}", fpSpec, "/sd\ufffd/pods/sb1/userns"), ""},
		// Valid UTF-8 too: any byte >= 0x80 is left to the Go code.
		{"stateDir UTF-8", create, env, with("{\"runtime\": \"/opt/runc\", \"stateDir\": \"/sd\u00e9\"}", fpSpec), ""},
		{"invalid JSON", create, env, with(sd, fpSpec[:len(fpSpec)-1]), ""},
		{"trailing bytes", create, env, with(sd, fpSpec+"x"), ""},
		{"not an object", create, env, with(sd, `null`), ""},
		{"bad number", create, env, with(sd, `{"a":01}`), ""},
		{"too deep", create, env, with(sd, `{"a":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`), ""},
		{"empty", create, env, with(sd, ``), ""},
		{"no --bundle: the working directory", []string{"create", "c"}, env, plain, ""},
		{"relative bundle", []string{"create", "--bundle", "b", "c"}, env, plain, ""},
		{"bundle not clean", []string{"create", "--bundle", "/x/../b", "c"}, env, plain, ""},
		{"invalid ID", []string{"create", "--bundle", "/b", "a/b"}, env, plain, ""},
		{"two IDs", []string{"create", "--bundle", "/b", "c", "d"}, env, plain, ""},
		{"unknown flag", []string{"create", "--bundle", "/b", "--new-flag", "c"}, env, plain, ""},
		{"help", []string{"create", "--help"}, env, plain, ""},
		{"run", []string{"run", "--bundle", "/b", "c"}, env, plain, ""},
		{"turned off", create, append([]string{"RUNC_USERNS_FASTPATH=0"}, env...), plain, ""},
	}
	runFastpathCases(t, cases)
	if v := fastpathDecide(append([]string{"runc-userns"}, create...), env, plain); v.specRead != "/b/config.json" {
		t.Errorf("create read %q; the Go code reads /b/config.json", v.specRead)
	}
}

// FuzzFastPathCreate: whenever the C side would exec runc for a create,
// the Go code would too: oci.Parse scans a create of a valid ID, the spec
// at the path the C side read parses, and createPlan finds nothing to do
// (no error, no stamp, untouched) under the same config, with the same
// pins on disk. Whenever it would start runc behind the gate, checkGate
// holds.
func FuzzFastPathCreate(f *testing.F) {
	// Two state dirs: a plain one, and one whose name is not valid UTF-8
	// in the config (Go replaces the byte: its pins are under U+FFFD).
	base := f.TempDir()
	stateDirs := []string{base + "/sd", base + "/s\xff"}
	var present []string
	for _, owner := range []string{"sb1", "p2"} {
		for _, sd := range []string{stateDirs[0], strings.ToValidUTF8(stateDirs[1], "\uFFFD")} {
			pin := filepath.Join(sd, "pods", owner, "userns")
			if err := os.MkdirAll(filepath.Dir(pin), 0o700); err != nil {
				f.Fatal(err)
			}
			if err := os.WriteFile(pin, nil, 0o600); err != nil {
				f.Fatal(err)
			}
			present = append(present, pin)
		}
	}
	modes := []string{"", "annotation", "off", "always"}
	f.Add([]byte("create\x00--bundle\x00/b\x00c"), []byte(fpSpec), uint8(0))
	// fpSpec's 1.5e3 is not an int64: runc's to refuse, and the target
	// stops there. With 1500, an app container of pooled pod sb1 in the
	// non-UTF-8 state dir.
	f.Add([]byte("create\x00--bundle\x00/b\x00c"), []byte(strings.Replace(fpSpec, "1.5e3", "1500", 1)), uint8(4))
	f.Add([]byte("create\x00-b=/b\x00c"), []byte(strings.Replace(fpSpec, `"sb1"`, `"sb2"`, 1)), uint8(1))
	f.Add([]byte("create\x00--bundle\x00/b\x00c"), []byte(`{"annotations":{"io.kubernetes.cri-o.SandboxID":"p2","io.kubernetes.cri-o.ContainerType":"container"}}`), uint8(2))
	f.Add([]byte("create\x00--bundle\x00/b\x00c"), []byte(`{"linux":{"namespaces":[{"type":"user","path":"/proc/1/ns/user"}]}}`), uint8(2))
	f.Add([]byte("create\x00--bundle\x00/b\x00c"), []byte(`{"mounts":[{"destination":"/x","source":"/y","options":["idmap"]}]}`), uint8(0))
	f.Add([]byte("--root\x00/r\x00create\x00--bundle\x00/b\x00c"), []byte(`{"linux":{"namespaces":[{"type":"pid","path":"container:x"}]}}`), uint8(1))
	// Behind the gate: a pool user namespace asked for, --log given.
	f.Add([]byte("--log\x00/l.json\x00create\x00--bundle\x00/b\x00c"), []byte(`{"annotations":{"runc-userns.io/userns":"auto"},"linux":{"namespaces":[{"type":"network"}]}}`), uint8(1))
	// Joins a network namespace by path, runc 1.1.5's features cached.
	f.Add([]byte("--log\x00/l.json\x00create\x00--bundle\x00/b\x00c"), []byte(`{"annotations":{"runc-userns.io/userns":"auto"},"linux":{"namespaces":[{"type":"network","path":"/run/netns/n"}]}}`), uint8(9))
	feats := [][]byte{nil, fpFeatures(f, "1.1.5"), fpFeatures(f, "1.5.2")}
	f.Fuzz(func(t *testing.T, argvBytes, spec []byte, mode uint8) {
		args := strings.Split(string(argvBytes), "\x00")
		sd := stateDirs[int(mode)/len(modes)%len(stateDirs)]
		feat := int(mode) / (len(modes) * len(stateDirs)) % len(feats)
		raw := []byte(`{"runtime": "/opt/runc", "stateDir": "` + sd + `", "userns": {"mode": "` + modes[int(mode)%len(modes)] + `"}}`)
		sys := fastpathSys{configPath: "/cfg.json", config: raw, files: fpFiles, specPath: "*", spec: spec, present: present}
		if feats[feat] != nil {
			sys.featuresPath, sys.features = fpFeaturesCache(sd), feats[feat]
		}
		v := fastpathDecide(append([]string{"runc-userns"}, args...), []string{"RUNC_USERNS_CONFIG=/cfg.json", "PATH=/usr/sbin"}, sys)
		inv := oci.Parse(args)
		if v.kind == verdictGate {
			checkGate(t, args, spec, inv, v, []int{-1, 1, 0}[feat])
			return
		}
		if v.kind == verdictGo || inv.Command != "create" {
			return // FuzzFastPath holds every other command
		}
		if v.kind != verdictExec || v.runtime != "/opt/runc" {
			t.Fatalf("create %q: verdict %d, runtime %q", args, v.kind, v.runtime)
		}
		if !inv.Scanned || inv.Help || oci.ValidateID(inv.ID) != nil {
			t.Fatalf("fast path for %q, but oci.Parse says scanned %v, help %v, ID %q", args, inv.Scanned, inv.Help, inv.ID)
		}
		bundle, err := bundleDir(inv.Bundle)
		if err != nil || filepath.Join(bundle, "config.json") != v.specRead {
			t.Fatalf("fast path for %q read %q; the Go code reads %q (%v)", args, v.specRead, filepath.Join(bundle, "config.json"), err)
		}
		cfg, err := config.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		// A value of the wrong type is runc's to refuse, in its own
		// words, as for any spec the wrapper passes through.
		var typeErr *json.UnmarshalTypeError
		if err := json.Unmarshal(spec, new(specs.Spec)); errors.As(err, &typeErr) {
			return
		}
		doc, err := oci.ParseSpec(v.specRead, spec, 0o644)
		if err != nil {
			t.Fatalf("fast path for spec %q, which the Go code refuses: %v", spec, err)
		}
		log := logrus.New()
		log.SetOutput(io.Discard)
		a := &app{inv: inv, cfg: cfg, log: log, sink: &logSink{out: io.Discard}, ph: newPhases()}
		req, want, untouched, err := a.createPlan(doc, bundle)
		if err != nil || want || !untouched || req.Stamp != nil {
			t.Fatalf("fast path for spec %q (mode %q), but createPlan: want %v, untouched %v, stamp %v, err %v", spec, cfg.Userns.Mode, want, untouched, req.Stamp != nil, err)
		}
	})
}

// checkGate: a create the C side starts behind the gate is one oci.Parse
// scans, of a valid ID, with one --log whose value is where the plan says;
// and when its spec joins a network namespace by path (the first, as
// foreignNetns reads it), the C side knew the runc (before13: the runc's
// cached features say < 1.3 (1) or not (0); -1: nothing cached), and starts
// it in that namespace for a runc < 1.3 (as netjoin.go would), else in
// ours.
func checkGate(t *testing.T, args []string, spec []byte, inv *oci.Invocation, v fastpathVerdict, before13 int) {
	t.Helper()
	if inv.Command != "create" || !inv.Scanned || inv.Help || oci.ValidateID(inv.ID) != nil || inv.ID != v.id {
		t.Fatalf("gate for %q, but oci.Parse says command %q, scanned %v, help %v, ID %q (plan: %q)", args, inv.Command, inv.Scanned, inv.Help, inv.ID, v.id)
	}
	full := append([]string{"runc-userns"}, args...)
	if v.logAt <= 0 || v.logAt >= len(full) {
		t.Fatalf("gate for %q: --log's value at %d", args, v.logAt)
	}
	val := full[v.logAt]
	if v.logEq {
		_, val, _ = strings.Cut(val, "=")
	}
	if val == "" || val != inv.Log {
		t.Fatalf("gate for %q swaps %q at %d (after '=': %v); oci.Parse's --log is %q", args, val, v.logAt, v.logEq, inv.Log)
	}
	var s specs.Spec
	if json.Unmarshal(spec, &s) != nil {
		return
	}
	_, path, _ := foreignNetns(&s, func(string) (bool, error) { return false, nil })
	want := ""
	switch {
	case path != "" && before13 < 0:
		t.Fatalf("gate for spec %q, which joins network namespace %q, with no features cached for the runc", spec, path)
	case path != "" && before13 == 1:
		want = path
	}
	if v.netns != want {
		t.Fatalf("gate for spec %q starts runc in network namespace %q; want %q", spec, v.netns, want)
	}
}

// fpFeatures is runc's features document (internal/runc/testdata) of
// version 1.1.5 or 1.5.2.
func fpFeatures(tb testing.TB, version string) []byte {
	raw, err := os.ReadFile("internal/runc/testdata/features-runc-" + version + ".json")
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// fpFeaturesCache is where the Go code caches /opt/runc's features (as
// fpFiles has it) under stateDir.
func fpFeaturesCache(stateDir string) string {
	return runc.FeaturesCache(stateDir, "/opt/runc", 300, 9_876_543, 1_764_000_000_123_456_789)
}

// TestFastpathGate: which creates the constructor starts behind the gate
// (FP_GATE): the Go code's creates with one --log, a config file and runc
// itself; for a spec that joins a network namespace by path, a runc whose
// features the Go code cached, started in that namespace when it is older
// than 1.3 (netjoin.go).
func TestFastpathGate(t *testing.T) {
	const cfg = "/cfg.json"
	env := []string{"PATH=/usr/sbin", "RUNC_USERNS_CONFIG=" + cfg}
	const sd = `{"runtime": "/opt/runc", "stateDir": "/sd"}`
	pooled := strings.Replace(fpSpec, `"annotations":{`, `"annotations":{"runc-userns.io/userns":"auto",`, 1)
	noNet := strings.Replace(pooled, `{"type":"network","path":"/var/run/netns/cni-1"}`, `{"type":"network"}`, 1)
	const cni = "/var/run/netns/cni-1"
	netPath := func(p string) string { return strings.Replace(pooled, cni, p, 1) }
	v115, v152 := fpFeatures(t, "1.1.5"), fpFeatures(t, "1.5.2")
	version := func(v string) []byte {
		return bytes.Replace(v152, []byte(`"org.opencontainers.runc.version": "1.5.2"`), []byte(`"org.opencontainers.runc.version": "`+v+`"`), 1)
	}
	with := func(config, spec string) fastpathSys {
		files := append([]fastpathFile{{path: "/opt/crun", dev: 1, ino: 40, mode: 0o100755}}, fpFiles...)
		return fastpathSys{configPath: cfg, config: []byte(config), files: files, specPath: "/b/config.json", spec: []byte(spec)}
	}
	withFeat := func(spec string, features []byte) fastpathSys {
		sys := with(sd, spec)
		sys.featuresPath, sys.features = fpFeaturesCache("/sd"), features
		return sys
	}
	create := func(pre ...string) []string { return append(pre, "create", "--bundle", "/b", "c") }
	for _, tc := range []struct {
		name  string
		argv  []string
		env   []string
		sys   fastpathSys
		want  string // "gate:<runtime>", a runc the fast path execs, or "" (Go, no gate)
		logAt int
		logEq bool
		netns string // the network namespace runc starts in
	}{
		{"joins a network namespace, runc 1.1.5: started in it", create("--log", "/l"), env, withFeat(pooled, v115), "gate:/opt/runc", 2, false, cni},
		{"joins one, runc 1.5.2: joins it itself", create("--log", "/l"), env, withFeat(pooled, v152), "gate:/opt/runc", 2, false, ""},
		{"joins one, runc 1.2.6", create("--log", "/l"), env, withFeat(pooled, version("1.2.6")), "gate:/opt/runc", 2, false, cni},
		{"joins one, runc 1.10.0", create("--log", "/l"), env, withFeat(pooled, version("1.10.0")), "gate:/opt/runc", 2, false, ""},
		{"joins one, runc 1.3.0-rc.1", create("--log", "/l"), env, withFeat(pooled, version("1.3.0-rc.1")), "gate:/opt/runc", 2, false, ""},
		{"joins one, runc 0.9", create("--log", "/l"), env, withFeat(pooled, version("0.9")), "gate:/opt/runc", 2, false, cni},
		{"joins one, key folded", create("--log", "/l"), env, withFeat(strings.Replace(pooled, `"path":"/var/run/netns`, `"PATH":"/var/run/netns`, 1), v115), "gate:/opt/runc", 2, false, cni},
		{"the first network entry with a path", create("--log", "/l"), env, withFeat(strings.Replace(pooled, `{"type":"pid"}`, `{"type":"network"},{"type":"network","path":"/n1"}`, 1), v115), "gate:/opt/runc", 2, false, "/n1"},
		{"no network namespace, features cached", create("--log", "/l"), env, withFeat(noNet, v115), "gate:/opt/runc", 2, false, ""},
		{"joins one, no features cached", create("--log", "/l"), env, with(sd, pooled), "", 0, false, ""},
		{"an earlier create's stamp took the network namespace out", create("--log", "/l"), env, withFeat(strings.Replace(noNet, `"annotations":{`, `"annotations":{"runc-userns.io/stamp":"{\"netns\":\"/n\"}",`, 1), v115), "", 0, false, ""},
		{"joins one, features of another runc (its mtime)", create("--log", "/l"), env, func() fastpathSys {
			sys := withFeat(pooled, v115)
			sys.featuresPath = runc.FeaturesCache("/sd", "/opt/runc", 300, 9_876_543, 1_764_000_000_123_456_788)
			return sys
		}(), "", 0, false, ""},
		{"joins one, features without runc's version (crun)", create("--log", "/l"), env, withFeat(pooled, bytes.Replace(v152, []byte("org.opencontainers.runc.version"), []byte("io.github.containers.crun.version"), 1)), "", 0, false, ""},
		{"joins one, version twice", create("--log", "/l"), env, withFeat(pooled, bytes.Replace(v152, []byte(`"org.opencontainers.runc.version": "1.5.2"`), []byte(`"org.opencontainers.runc.version": "1.5.2", "org.opencontainers.runc.version": "1.1.0"`), 1)), "", 0, false, ""},
		{"joins one, version not a number", create("--log", "/l"), env, withFeat(pooled, version("x")), "", 0, false, ""},
		{"joins one, version with a sign", create("--log", "/l"), env, withFeat(pooled, version("+1.1.5")), "", 0, false, ""},
		{"joins one, version without a minor", create("--log", "/l"), env, withFeat(pooled, version("1.x")), "", 0, false, ""},
		{"joins one, features truncated", create("--log", "/l"), env, withFeat(pooled, v115[:len(v115)-2]), "", 0, false, ""},
		{"joins one, type escaped", create("--log", "/l"), env, withFeat(strings.Replace(pooled, `"type":"network"`, `"type":"networ\u006b"`, 1), v115), "", 0, false, ""},
		{"joins one, path escaped", create("--log", "/l"), env, withFeat(netPath(`\/n`), v115), "", 0, false, ""},
		{"joins one, path relative", create("--log", "/l"), env, withFeat(netPath(`n`), v115), "", 0, false, ""},
		{"joins one, path past ASCII", create("--log", "/l"), env, withFeat(netPath("/n\xff"), v115), "", 0, false, ""},
		{"joins one, path given twice", create("--log", "/l"), env, withFeat(strings.Replace(pooled, `"path":"/var`, `"path":"/a","path":"/var`, 1), v115), "", 0, false, ""},
		{"joins one, a key past ASCII", create("--log", "/l"), env, withFeat(strings.Replace(pooled, `{"type":"network",`, `{"ſ":1,"type":"network",`, 1), v115), "", 0, false, ""},
		{"joins one, linux given twice", create("--log", "/l"), env, withFeat(strings.Replace(noNet, `"linux":{`, `"linux":{"namespaces":[{"type":"network","path":"/n"}]},"linux":{`, 1), v115), "", 0, false, ""},
		{"joins one, namespaces given twice", create("--log", "/l"), env, withFeat(strings.Replace(noNet, `"namespaces":[`, `"namespaces":[],"Namespaces":[`, 1), v115), "", 0, false, ""},

		{"--log PATH", create("--log", "/l.json", "--log-format", "json"), env, with(sd, noNet), "gate:/opt/runc", 2, false, ""},
		{"--log=PATH", create("--log=/l.json"), env, with(sd, noNet), "gate:/opt/runc", 1, true, ""},
		{"-log PATH, after --root", create("--root", "/r", "-log", "/l.json"), env, with(sd, noNet), "gate:/opt/runc", 4, false, ""},
		{"with --debug", create("--debug", "--log", "/l.json"), env, with(sd, noNet), "gate:/opt/runc", 3, false, ""},
		{"no network namespace at all", create("--log", "/l"), env, with(sd, strings.Replace(noNet, `{"type":"network"},`, ``, 1)), "gate:/opt/runc", 2, false, ""},
		{"network path null", create("--log", "/l"), env, with(sd, strings.Replace(noNet, `{"type":"network"}`, `{"type":"network","path":null}`, 1)), "gate:/opt/runc", 2, false, ""},
		{"userns.mode always, spec of its own", create("--log", "/l"), env, with(`{"runtime": "/opt/runc", "stateDir": "/sd", "userns": {"mode": "always"}}`, strings.Replace(fpSpec, `{"type":"network","path":"/var/run/netns/cni-1"}`, `{"type":"network"}`, 1)), "gate:/opt/runc", 2, false, ""},

		{"untouched: exec as before", create("--log", "/l"), env, with(sd, strings.Replace(fpSpec, `{"type":"network","path":"/var/run/netns/cni-1"}`, `{"type":"network"}`, 1)), "/opt/runc", 0, false, ""},
		{"no --log", create(), env, with(sd, noNet), "", 0, false, ""},
		{"two --log", create("--log", "/a", "--log", "/b"), env, with(sd, noNet), "", 0, false, ""},
		{"--log empty", create("--log", ""), env, with(sd, noNet), "", 0, false, ""},
		{"--log= empty", create("--log="), env, with(sd, noNet), "", 0, false, ""},
		{"runtime not runc", create("--log", "/l"), env, with(`{"runtime": "/opt/crun", "stateDir": "/sd"}`, noNet), "", 0, false, ""},
		{"no config file", create("--log", "/l"), []string{"PATH=/usr/sbin"}, fastpathSys{files: fpFiles, specPath: "/b/config.json", spec: []byte(noNet)}, "", 0, false, ""},
		{"socket activation", create("--log", "/l"), append([]string{"LISTEN_PID=7"}, env...), with(sd, noNet), "", 0, false, ""},
		{"fault injection", create("--log", "/l"), append([]string{"RUNC_USERNS_TEST_KILL_AT=written"}, env...), with(sd, noNet), "", 0, false, ""},
		{"relative --root", create("--root", "r", "--log", "/l"), env, with(sd, noNet), "", 0, false, ""},
		{"stateDir not clean", create("--log", "/l"), env, with(`{"runtime": "/opt/runc", "stateDir": "/sd/"}`, noNet), "", 0, false, ""},
		{"run", []string{"--log", "/l", "run", "--bundle", "/b", "c"}, env, with(sd, noNet), "", 0, false, ""},
		{"malformed spec", create("--log", "/l"), env, with(sd, noNet[:len(noNet)-1]), "", 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := append([]string{"/usr/local/bin/runc-userns"}, tc.argv...)
			v := fastpathDecide(full, tc.env, tc.sys)
			got := ""
			switch v.kind {
			case verdictGate:
				got = "gate:" + v.runtime
			case verdictExec:
				got = v.runtime
			}
			if got != tc.want {
				t.Fatalf("fastpathDecide(%q) = %q; want %q", tc.argv, got, tc.want)
			}
			if v.kind != verdictGate {
				return
			}
			root := "/run/runc"
			if i := slices.Index(tc.argv, "--root"); i >= 0 {
				root = tc.argv[i+1]
			}
			if v.logAt != tc.logAt || v.logEq != tc.logEq || v.gateState != "/sd" || v.gateRoot != root || v.id != "c" || v.netns != tc.netns {
				t.Errorf("gate plan: log at %d (eq %v), state dir %q, root %q, ID %q, netns %q; want %d (%v), /sd, %q, c, %q", v.logAt, v.logEq, v.gateState, v.gateRoot, v.id, v.netns, tc.logAt, tc.logEq, root, tc.netns)
			}
			before13 := -1
			if tc.sys.features != nil {
				before13 = 0
				if tc.netns != "" {
					before13 = 1
				}
			}
			checkGate(t, tc.argv, tc.sys.spec, oci.Parse(tc.argv), v, before13)
		})
	}
}

// TestFastpathInitialArgv: under a C library that calls constructors
// without arguments (musl), the constructor finds argc and argv below the
// initial environment array, and gives up (leaving the call to the Go code)
// on anything that is not that layout.
func TestFastpathInitialArgv(t *testing.T) {
	const null = 0
	for _, tc := range []struct {
		name           string
		words          []int64 // >= 0 as is, -k a pointer to string k
		envp, progname int
		argc, argv     int // want; argv as an index into words
		ok             bool
	}{
		{"three arguments", []int64{null, 3, -1, -2, -3, null, -10, -11, null}, 6, 1, 3, 2, true},
		{"one argument", []int64{null, 1, -1, null, -10, null}, 4, 1, 1, 2, true},
		{"an empty environment", []int64{null, 2, -1, -2, null, null}, 5, 1, 2, 2, true},
		{"argc does not count argv", []int64{null, 4, -1, -2, -3, null, -10, null}, 6, 1, 0, 0, false},
		{"argv[0] is not the program's name", []int64{null, 3, -1, -2, -3, null, -10, null}, 6, 9, 0, 0, false},
		{"no NULL before the environment", []int64{null, 3, -1, -2, -3, -4, -10, null}, 6, 1, 0, 0, false},
		{"a NULL inside argv", []int64{null, 3, -1, null, -3, null, -10, null}, 6, 1, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argc, argv, ok := fastpathInitialArgv(tc.words, tc.envp, tc.progname)
			if ok != tc.ok || argc != tc.argc || argv != tc.argv {
				t.Errorf("fp_initial_argv = argc %d, argv at %d, ok %v; want %d, %d, %v", argc, argv, ok, tc.argc, tc.argv, tc.ok)
			}
		})
	}
}
