package oci

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// keptSpec has something in every member a create keeps as bytes:
// spacing, members runtime-spec v1.2.1 does not know, a number a float64
// would round, and a value of the wrong type (runc's to refuse, not ours).
const keptSpec = `{
  "ociVersion": "1.2.0",
  "process": {"user": {"uid": 0, "gid": 0}, "args": ["sh", "-c", "a<b&&c>d"], "cwd": "/",
              "x-process": {"n": 18446744073709551615}},
  "root": {"path": "rootfs"},
  "hooks": {"prestart": [{"path": "/bin/true", "timeout": 1}], "x-hook": true},
  "annotations": {"a": "1"},
  "linux": {
    "namespaces": [{"type": "pid"}],
    "resources": {"devices": [{"allow": false, "access": "rwm"}], "x-res": 1e400},
    "seccomp": {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"}]},
    "devices": [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229}],
    "maskedPaths": ["/proc/kcore"],
    "readonlyPaths": ["/proc/sys"],
    "intelRdt": {"closID": "x"},
    "personality": {"domain": "LINUX"},
    "timeOffsets": {"boottime": {"secs": 1}}
  },
  "solaris": {"milestone": 1},
  "windows": {"layerFolders": "not a list"},
  "vm": {},
  "zos": {"namespaces": []}
}`

// member returns the value of the member at keys in b, compacted.
func member(t *testing.T, b []byte, keys ...string) string {
	t.Helper()
	var v json.RawMessage = b
	for _, k := range keys {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatalf("%q: %v", keys, err)
		}
		var ok bool
		if v, ok = m[k]; !ok {
			t.Fatalf("no member %q in %s", keys, b)
		}
	}
	var out bytes.Buffer
	if err := json.Compact(&out, v); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// The members a create does not decode reach runc as they were (compacted,
// and with <, >, & escaped as encoding/json writes them: the same JSON),
// without the merge foreign members need.
func TestEncodeKeepsUndecodedMembers(t *testing.T) {
	doc, err := ParseSpec("config.json", []byte(keptSpec), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if doc.kept == nil {
		t.Fatal("the spec was decoded whole")
	}
	if doc.Spec.Process != nil || doc.Spec.Linux.Seccomp != nil || doc.Spec.Linux.Resources != nil {
		t.Fatalf("members kept as bytes were decoded: %+v", doc.Spec)
	}
	doc.Spec.Annotations[AnnotationStamp] = "x"
	doc.Spec.Linux.Namespaces = append(doc.Spec.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace, Path: "/u"})
	out, changed, err := doc.Encode()
	if err != nil || !changed {
		t.Fatalf("Encode = %v, %v", changed, err)
	}
	if doc.foreign {
		t.Error("foreign: its only unknown members sit in members kept as bytes")
	}
	for _, keys := range [][]string{
		{"process"}, {"hooks"}, {"solaris"}, {"windows"}, {"vm"}, {"zos"},
		{"linux", "resources"}, {"linux", "seccomp"}, {"linux", "devices"},
		{"linux", "readonlyPaths"}, {"linux", "intelRdt"}, {"linux", "personality"}, {"linux", "timeOffsets"},
	} {
		var want bytes.Buffer
		json.HTMLEscape(&want, []byte(member(t, []byte(keptSpec), keys...)))
		if got := member(t, out, keys...); got != want.String() {
			t.Errorf("%q written as\n%s\nwant\n%s", keys, got, want.String())
		}
	}
	if got := member(t, out, "linux", "namespaces"); got != `[{"type":"pid"},{"type":"user","path":"/u"}]` {
		t.Errorf("linux.namespaces written as %s", got)
	}
	// Typed (netns.SysfsModifier adds to it): an edit is written.
	doc.Spec.Linux.MaskedPaths = append(doc.Spec.Linux.MaskedPaths, "/sys/fs/bpf")
	if out, _, err = doc.Encode(); err != nil {
		t.Fatal(err)
	}
	if got := member(t, out, "linux", "maskedPaths"); got != `["/proc/kcore","/sys/fs/bpf"]` {
		t.Errorf("linux.maskedPaths written as %s", got)
	}
}

// A member kept as bytes given twice under keys that fold alike is one
// object to runc, merged from both: the spec is then decoded whole, and
// runc reads the written spec as it read the loaded one.
func TestParseSpecGivenTwice(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		kept bool // decoded as wireSpec, not whole
	}{
		{"process, two cases", `{"process": {"args": ["sh"]}, "Process": {"cwd": "/"}, "annotations": {}}`, false},
		{"process, same key", `{"process": {"args": ["sh"]}, "process": {"cwd": "/"}}`, false},
		{"linux.seccomp", `{"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ERRNO"}, "Seccomp": {"architectures": ["SCMP_ARCH_X86_64"]}}}`, false},
		{"linux given twice, seccomp in each", `{"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ERRNO"}}, "Linux": {"seccomp": {"flags": ["x"]}}}`, false},
		{"then null: runc's is nil too", `{"process": {"args": ["sh"]}, "process": null}`, true},
		{"null, then an object", `{"process": null, "Process": {"cwd": "/"}}`, true},
		{"linux given twice, seccomp in one", `{"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ERRNO"}}, "Linux": {"namespaces": [{"type": "pid"}]}}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := ParseSpec("config.json", []byte(c.raw), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if got := doc.kept != nil; got != c.kept {
				t.Errorf("decoded with members kept as bytes: %v, want %v", got, c.kept)
			}
			if doc.Spec.Annotations == nil {
				doc.Spec.Annotations = map[string]string{}
			}
			doc.Spec.Annotations[AnnotationStamp] = "x"
			out, _, err := doc.Encode()
			if err != nil {
				t.Fatal(err)
			}
			var want specs.Spec
			if err := json.Unmarshal([]byte(c.raw), &want); err != nil {
				t.Fatal(err)
			}
			if want.Annotations == nil {
				want.Annotations = map[string]string{}
			}
			want.Annotations[AnnotationStamp] = "x"
			if got := asRuncSees(t, out); got != string(mustMarshal(t, &want)) {
				t.Errorf("runc would see\n%s\nnot\n%s", got, mustMarshal(t, &want))
			}
		})
	}
}

// A modifier that sets a member kept as bytes gets an error rather than an
// edit silently dropped; a whole-decoded spec takes it.
func TestEncodeRefusesEditOfKeptMember(t *testing.T) {
	cases := []struct {
		name   string
		modify func(*specs.Spec)
	}{
		{"process", func(s *specs.Spec) { s.Process = &specs.Process{Cwd: "/"} }},
		{"hooks", func(s *specs.Spec) { s.Hooks = &specs.Hooks{} }},
		{"linux.seccomp", func(s *specs.Spec) { s.Linux.Seccomp = &specs.LinuxSeccomp{} }},
		{"linux.readonlyPaths", func(s *specs.Spec) { s.Linux.ReadonlyPaths = []string{"/x"} }},
		{"linux.timeOffsets", func(s *specs.Spec) { s.Linux.TimeOffsets = map[string]specs.LinuxTimeOffset{"boottime": {Secs: 1}} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := ParseSpec("config.json", []byte(`{"linux": {}}`), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			c.modify(doc.Spec)
			if _, _, err := doc.Encode(); err == nil || !strings.Contains(err.Error(), " "+c.name+",") {
				t.Errorf("Encode error %v, want one naming %s", err, c.name)
			}
			whole, err := ParseSpec("config.json", []byte(`{"linux": {}, "process": {}, "Process": {}}`), 0o644)
			if err != nil || whole.kept != nil {
				t.Fatalf("ParseSpec = %v, kept %v; want a whole decode", err, whole.kept != nil)
			}
			c.modify(whole.Spec)
			if _, changed, err := whole.Encode(); err != nil || !changed {
				t.Errorf("whole-decoded Encode = %v, %v", changed, err)
			}
		})
	}
}

// decodeSpec decodes a spec without foreign members once, strictly, and
// says which specs have them; whitespace after the value is not data.
func TestDecodeSpecForeign(t *testing.T) {
	for _, tc := range []struct {
		name    string
		raw     string
		foreign bool
	}{
		{"known members only", `{"ociVersion":"1.0.2","root":{"path":"rootfs"}}`, false},
		{"whitespace after the value", "{\"ociVersion\":\"1.0.2\"}\n\t\r\n ", false},
		{"unknown top-level member", `{"ociVersion":"1.0.2","future":1}`, true},
		{"unknown member in a typed one", `{"root":{"path":"rootfs","future":true}}`, true},
		{"unknown member in linux", `{"linux":{"future":{}}}`, true},
		{"unknown member in a member kept as bytes", `{"process":{"future":1},"linux":{"seccomp":{"future":1}}}`, false},
		{"foreign spec", foreignSpec, true},
		{"kept member given twice: decoded whole", `{"process":{"cwd":"/"},"Process":{"args":["sh"]}}`, false},
		{"given twice, with an unknown member", `{"process":{"cwd":"/","future":1},"Process":{"args":["sh"]}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, kept, foreign, err := decodeSpec([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if s == nil {
				t.Fatal("no spec")
			}
			if foreign != tc.foreign {
				t.Errorf("foreign = %v, want %v", foreign, tc.foreign)
			}
			doc, err := ParseSpec("config.json", []byte(tc.raw), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if doc.foreign != tc.foreign || (doc.kept == nil) != (kept == nil) {
				t.Errorf("ParseSpec: foreign %v, kept %v; decodeSpec: %v, %v", doc.foreign, doc.kept != nil, foreign, kept != nil)
			}
			// Unedited, the document is what was loaded, byte for byte.
			if out, changed, err := doc.Encode(); err != nil || changed || string(out) != tc.raw {
				t.Errorf("Encode of the unedited spec = %q, %v, %v", out, changed, err)
			}
		})
	}
}
