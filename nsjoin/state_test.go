package nsjoin

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runc-userns/runc-userns/internal/oci"
)

// The testdata files are real state.json files written by runc 1.1.5 and
// runc 1.5.2 for a container with containerd pod annotations, an
// annotation holding "=", and a network namespace joined by path.
func TestReadStateOfRealRuncs(t *testing.T) {
	for _, version := range []string{"1.1.5", "1.5.2"} {
		t.Run(version, func(t *testing.T) {
			root := t.TempDir()
			b, err := os.ReadFile(filepath.Join("testdata", "state-runc-"+version+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(root, "st1"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "st1", "state.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := readState(root, "st1")
			if err != nil {
				t.Fatal(err)
			}
			if st.InitPID <= 0 || st.InitStart == 0 {
				t.Errorf("init PID %d, start %d: want both set", st.InitPID, st.InitStart)
			}
			ann := st.annotations()
			want := map[string]string{
				oci.CRISandboxID:     "sb1",
				oci.CRIContainerType: "container",
				"runc-userns.io/x":   "a=b",
				"bundle":             "/tmp/stprobe",
			}
			for k, v := range want {
				if ann[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, ann[k], v)
				}
			}
			if len(ann) != len(want) {
				t.Errorf("annotations = %v, want %v", ann, want)
			}
			if !st.newPID() {
				t.Error("newPID = false for a container with a PID namespace")
			}
			if got := PodOf("st1", ann); got != (Pod{ID: "sb1"}) {
				t.Errorf("PodOf = %+v", got)
			}
		})
	}
}

func TestReadState(t *testing.T) {
	cases := []struct {
		name    string
		content string // "" means no state file
		newPID  bool
		cgroup  string // podCgroup
		wantErr string
		notExit bool
	}{
		{name: "missing", notExit: true},
		{name: "runc 1.1 namespaces", content: `{"init_process_pid": 5, "init_process_start": 6, "config": {"namespaces": [{"type": "NEWNS", "path": ""}, {"type": "NEWPID", "path": ""}]}}`, newPID: true},
		{name: "joined PID namespace", content: `{"init_process_pid": 5, "init_process_start": 6, "config": {"namespaces": [{"type": "NEWPID", "path": "/proc/9/ns/pid"}]}}`, newPID: true},
		{name: "host PID namespace", content: `{"init_process_pid": 5, "init_process_start": 6, "config": {"namespaces": [{"type": "NEWNS"}, {"type": "NEWNET"}]}}`},
		{name: "no config", content: `{"init_process_pid": 5}`},
		{name: "unknown fields", content: `{"init_process_pid": 5, "x": [1, 2], "config": {"y": {}}}`},
		{name: "cgroupfs driver", content: `{"config": {"cgroups": {"path": "/kubepods/pod1/crio-a", "name": ""}}}`, cgroup: "/kubepods/pod1"},
		{name: "systemd driver", content: `{"config": {"cgroups": {"path": "", "parent": "kubepods-pod1.slice", "scope_prefix": "crio", "name": "a"}}}`, cgroup: "kubepods-pod1.slice"},
		{name: "no cgroupsPath (runc's default, by ID)", content: `{"config": {"cgroups": {"path": "", "name": "c"}}}`},
		{name: "runc 1.5 nulls", content: `{"config": {"cgroups": {"path": null, "parent": null, "name": "c"}}}`},
		{name: "garbage", content: `not json`, wantErr: "read runc state"},
		{name: "start time as a string", content: `{"init_process_start": "6"}`, wantErr: "read runc state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.content != "" {
				if err := os.Mkdir(filepath.Join(root, "c"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "c", "state.json"), []byte(c.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			st, err := readState(root, "c")
			switch {
			case c.notExit:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("readState = %v, want fs.ErrNotExist", err)
				}
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("readState = %v, want an error mentioning %q", err, c.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case st.newPID() != c.newPID:
				t.Errorf("newPID = %v, want %v", st.newPID(), c.newPID)
			case st.podCgroup() != c.cgroup:
				t.Errorf("podCgroup = %q, want %q", st.podCgroup(), c.cgroup)
			}
		})
	}
}

func TestAnnotationsFromLabels(t *testing.T) {
	st := &state{}
	st.Config.Labels = []string{"a=1", "b==2", "c=", "no-equals", "bundle=/b", "a=again"}
	got := st.annotations()
	want := map[string]string{"a": "again", "b": "=2", "c": "", "bundle": "/b"}
	if len(got) != len(want) {
		t.Fatalf("annotations = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got[k], v)
		}
	}
}
