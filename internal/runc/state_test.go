package runc

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// stampKey is runc-userns's stamp annotation; spelled out rather than
// imported: domain packages do not import each other.
const stampKey = "runc-userns.io/stamp"

// runcState is shaped like what runc writes to <root>/<id>/state.json
// (trimmed: runc writes many more fields, which ReadState ignores).
const runcState = `{"id":"c1","init_process_pid":123,"init_process_start":456,"created":"2024-01-01T00:00:00Z",` +
	`"config":{"rootfs":"/b/rootfs","readonlyfs":false,"labels":["bundle=/b","runc-userns.io/stamp={\"v\":1}","io.kubernetes.cri.sandbox-id=p"],"no_pivot_root":false},` +
	`"rootless":false,"cgroup_paths":{"":"/sys/fs/cgroup/x"},"namespace_paths":{"NEWUSER":"/proc/123/ns/user"},"external_descriptors":["/dev/null"]}`

// writeState writes contents as <root>/<id>/state.json.
func writeState(t *testing.T, root, id, contents string) {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReadState(t *testing.T) {
	cases := []struct {
		name     string
		contents string // "" means no state file at all
		want     *State
		notExist bool
	}{
		{
			name:     "as runc writes it",
			contents: runcState,
			want: func() *State {
				s := &State{InitPID: 123, InitStart: 456}
				s.Config.Labels = []string{"bundle=/b", `runc-userns.io/stamp={"v":1}`, "io.kubernetes.cri.sandbox-id=p"}
				return s
			}(),
		},
		{
			name:     "no labels",
			contents: `{"init_process_pid":1,"init_process_start":18446744073709551615,"config":{}}`,
			want:     &State{InitPID: 1, InitStart: 18446744073709551615},
		},
		{
			name:     "trailing newline",
			contents: runcState + "\n",
			want: func() *State {
				s := &State{InitPID: 123, InitStart: 456}
				s.Config.Labels = []string{"bundle=/b", `runc-userns.io/stamp={"v":1}`, "io.kubernetes.cri.sandbox-id=p"}
				return s
			}(),
		},
		{name: "missing", notExist: true},
		{name: "garbage", contents: "not json"},
		{name: "empty", contents: " "},
		{name: "truncated", contents: runcState[:40]},
		{name: "wrong type", contents: `{"init_process_pid":"123"}`},
		{name: "labels not strings", contents: `{"config":{"labels":[1]}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.contents != "" {
				writeState(t, root, "c1", c.contents)
			}
			got, err := ReadState(root, "c1")
			path := filepath.Join(root, "c1", "state.json")
			if c.contents != "" {
				// The same bytes, parsed (netjoin's reader), give the
				// same answer.
				parsed, perr := ParseState([]byte(c.contents), path)
				if !reflect.DeepEqual(parsed, got) || (perr == nil) != (err == nil) || perr != nil && perr.Error() != err.Error() {
					t.Errorf("ParseState = %+v, %v; ReadState = %+v, %v", parsed, perr, got, err)
				}
			}
			switch {
			case c.want != nil:
				if err != nil {
					t.Fatalf("ReadState: %v", err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("ReadState = %+v, want %+v", got, c.want)
				}
			case err == nil:
				t.Fatalf("ReadState = %+v, want an error", got)
			case c.notExist != errors.Is(err, os.ErrNotExist):
				t.Errorf("ReadState: %v; wraps os.ErrNotExist: %v, want %v", err, !c.notExist, c.notExist)
			case !strings.Contains(err.Error(), path):
				t.Errorf("error %q does not name %s", err, path)
			}
		})
	}
}

func TestReadStateMissingRoot(t *testing.T) {
	_, err := ReadState(filepath.Join(t.TempDir(), "no-root"), "c1")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadState with no root dir = %v, want os.ErrNotExist", err)
	}
}

func TestAnnotation(t *testing.T) {
	cases := []struct {
		name   string
		labels []string
		key    string
		want   string
		found  bool
	}{
		{"bundle", []string{"bundle=/b", stampKey + `={"v":1}`}, "bundle", "/b", true},
		{"stamp", []string{"bundle=/b", stampKey + `={"v":1}`}, stampKey, `{"v":1}`, true},
		{"missing", []string{"bundle=/b"}, stampKey, "", false},
		{"no labels", nil, "bundle", "", false},
		{"empty value", []string{"k="}, "k", "", true},
		{"value with =", []string{"k=a=b"}, "k", "a=b", true},
		{"key is a prefix of another", []string{"bundlex=/x", "bundle=/b"}, "bundle", "/b", true},
		{"label without =", []string{"bundle"}, "bundle", "", false},
		{"last of two, as runc reads them", []string{"k=1", "k=2"}, "k", "2", true},
		{"key in the value only", []string{"a=k=v"}, "k", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s State
			s.Config.Labels = c.labels
			got, found := s.Annotation(c.key)
			if got != c.want || found != c.found {
				t.Errorf("Annotation(%q) = %q, %v; want %q, %v", c.key, got, found, c.want, c.found)
			}
		})
	}
}

// The testdata files are real state.json files written by runc 1.1.5 and
// runc 1.5.2 for a container with containerd pod annotations, an
// annotation holding "=", and a network namespace joined by path.
func TestReadStateOfRealRuncs(t *testing.T) {
	for _, version := range []string{"1.1.5", "1.5.2"} {
		t.Run(version, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "state-runc-"+version+".json"))
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			writeState(t, root, "st1", string(b))
			st, err := ReadState(root, "st1")
			if err != nil {
				t.Fatal(err)
			}
			if st.InitPID <= 0 || st.InitStart == 0 {
				t.Errorf("init PID %d, start %d: want both set", st.InitPID, st.InitStart)
			}
			ann := st.Annotations()
			want := map[string]string{
				"io.kubernetes.cri.sandbox-id":     "sb1",
				"io.kubernetes.cri.container-type": "container",
				"runc-userns.io/x":                 "a=b",
				"bundle":                           "/tmp/stprobe",
			}
			if !reflect.DeepEqual(ann, want) {
				t.Errorf("Annotations = %v, want %v", ann, want)
			}
			if !st.HasNamespace("NEWPID") || !st.HasNamespace("NEWNET") || st.HasNamespace("NEWUSER") {
				t.Errorf("namespaces %+v: want NEWPID and NEWNET, no NEWUSER", st.Config.Namespaces)
			}
		})
	}
}

// TestStateNamespacesAndCgroup: what a PID-namespace join reads of its
// target's state (nsjoin.Resolve, through internal/create's adapter).
func TestStateNamespacesAndCgroup(t *testing.T) {
	cases := []struct {
		name    string
		content string
		newPID  bool
		cgroup  string // Cgroups.PodCgroup
	}{
		{name: "runc 1.1 namespaces", content: `{"init_process_pid": 5, "init_process_start": 6, "config": {"namespaces": [{"type": "NEWNS", "path": ""}, {"type": "NEWPID", "path": ""}]}}`, newPID: true},
		{name: "joined PID namespace", content: `{"init_process_pid": 5, "init_process_start": 6, "config": {"namespaces": [{"type": "NEWPID", "path": "/proc/9/ns/pid"}]}}`, newPID: true},
		{name: "host PID namespace", content: `{"init_process_pid": 5, "init_process_start": 6, "config": {"namespaces": [{"type": "NEWNS"}, {"type": "NEWNET"}]}}`},
		{name: "no config", content: `{"init_process_pid": 5}`},
		{name: "unknown fields", content: `{"init_process_pid": 5, "x": [1, 2], "config": {"y": {}}}`},
		{name: "cgroupfs driver", content: `{"config": {"cgroups": {"path": "/kubepods/pod1/crio-a", "name": ""}}}`, cgroup: "/kubepods/pod1"},
		{name: "systemd driver", content: `{"config": {"cgroups": {"path": "", "parent": "kubepods-pod1.slice", "scope_prefix": "crio", "name": "a"}}}`, cgroup: "kubepods-pod1.slice"},
		{name: "no cgroupsPath (runc's default, by ID)", content: `{"config": {"cgroups": {"path": "", "name": "c"}}}`},
		{name: "runc 1.5 nulls", content: `{"config": {"cgroups": {"path": null, "parent": null, "name": "c"}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := ParseState([]byte(c.content), "state.json")
			if err != nil {
				t.Fatal(err)
			}
			if st.HasNamespace("NEWPID") != c.newPID {
				t.Errorf("HasNamespace(NEWPID) = %v, want %v", !c.newPID, c.newPID)
			}
			if got := st.Config.Cgroups.PodCgroup(); got != c.cgroup {
				t.Errorf("PodCgroup = %q, want %q", got, c.cgroup)
			}
		})
	}
}

func TestAnnotations(t *testing.T) {
	var st State
	st.Config.Labels = []string{"a=1", "b==2", "c=", "no-equals", "bundle=/b", "a=again"}
	want := map[string]string{"a": "again", "b": "=2", "c": "", "bundle": "/b"}
	if got := st.Annotations(); !reflect.DeepEqual(got, want) {
		t.Errorf("Annotations = %v, want %v", got, want)
	}
	for k, v := range want {
		if got, ok := st.Annotation(k); !ok || got != v {
			t.Errorf("Annotation(%q) = %q, %v; want %q (as Annotations reads it)", k, got, ok, v)
		}
	}
}

// FuzzReadState: any state file is read without a panic, and an error
// never claims the container is missing.
func FuzzReadState(f *testing.F) {
	for _, s := range []string{runcState, `{}`, `null`, `{"config":{"labels":null}}`, `[`, "\xff"} {
		f.Add([]byte(s), "bundle")
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, contents []byte, key string) {
		dir := filepath.Join(root, "c1")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "state.json"), contents, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := ReadState(root, "c1")
		parsed, perr := ParseState(contents, filepath.Join(dir, "state.json"))
		if !reflect.DeepEqual(parsed, st) || (perr == nil) != (err == nil) {
			t.Fatalf("ParseState = %+v, %v; ReadState = %+v, %v", parsed, perr, st, err)
		}
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				t.Fatalf("ReadState of an existing file: %v", err)
			}
			return
		}
		v, ok := st.Annotation(key)
		if ok && !strings.Contains(strings.Join(st.Config.Labels, "\x00"), key+"="+v) {
			t.Fatalf("Annotation(%q) = %q, not among the labels %q", key, v, st.Config.Labels)
		}
	})
}

// TestCreated: a container is created, not started, while its exec.fifo
// is there (what a PID-namespace join refuses to join).
func TestCreated(t *testing.T) {
	root := t.TempDir()
	if Created(root, "c") {
		t.Error("a container runc does not have is created")
	}
	if err := os.MkdirAll(filepath.Join(root, "c"), 0o700); err != nil {
		t.Fatal(err)
	}
	if Created(root, "c") {
		t.Error("a started container (no exec.fifo) is created")
	}
	if err := syscall.Mkfifo(filepath.Join(root, "c", execFifo), 0o600); err != nil {
		t.Fatal(err)
	}
	if !Created(root, "c") {
		t.Error("a container with its exec.fifo is not created")
	}
}
