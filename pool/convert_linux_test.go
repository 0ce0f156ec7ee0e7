package pool

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// version1 is a state directory's pool.json as the release before
// RecordDir wrote it (encoding/json MarshalIndent, sorted by host ID).
const version1 = `{
  "version": 1,
  "slotSize": 65536,
  "allocations": [
    {
      "owner": "pod-a",
      "hostID": 2147483648,
      "size": 65536,
      "root": "/run/containerd/runc/k8s.io",
      "allocated": "2025-11-22T10:50:00Z",
      "members": [
        "pod-a",
        "app"
      ]
    },
    {
      "owner": "pod-b",
      "hostID": 2147614720,
      "size": 65536,
      "root": "/run/runc",
      "allocated": "2025-11-22T11:00:00Z"
    }
  ]
}
`

// version1Records is what version1 converts to.
var version1Records = map[string]string{
	"2147483648-pod-a": `{"owner":"pod-a","hostID":2147483648,"size":65536,"root":"/run/containerd/runc/k8s.io","allocated":"2025-11-22T10:50:00Z","members":["pod-a","app"]}` + "\n",
	"2147614720-pod-b": `{"owner":"pod-b","hostID":2147614720,"size":65536,"root":"/run/runc","allocated":"2025-11-22T11:00:00Z"}` + "\n",
}

// version1Dir is a state directory as the previous release leaves it.
func version1Dir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, LockFile, "")
	writeFile(t, dir, RootsFile, "/run/containerd/runc/k8s.io\n/run/runc\n")
	writeFile(t, dir, StateFile, version1)
	return dir
}

// recordFiles returns RecordDir's files and their content.
func recordFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, RecordDir))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, RecordDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

func TestConvertVersion1(t *testing.T) {
	t.Run("readers read it as it is", func(t *testing.T) {
		dir := version1Dir(t)
		p := testPoolIn(t, dir, 4)
		all, err := p.List()
		if err != nil {
			t.Fatal(err)
		}
		if got := owners(all); !reflect.DeepEqual(got, []string{"pod-a", "pod-b"}) {
			t.Errorf("List = %v", got)
		}
		if a, ok, err := p.Get("pod-a"); err != nil || !ok || !reflect.DeepEqual(a.Members, []string{"pod-a", "app"}) {
			t.Errorf("Get = %+v, %v, %v", a, ok, err)
		}
		if o, err := p.OwnerOf("/run/containerd/runc/k8s.io", "app"); err != nil || o != "pod-a" {
			t.Errorf("OwnerOf = %q, %v", o, err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, StateFile)); string(got) != version1 {
			t.Error("a reader changed pool.json")
		}
		if _, err := os.Stat(filepath.Join(dir, RecordDir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a reader made %s: %v", RecordDir, err)
		}
	})
	t.Run("the first writer converts it", func(t *testing.T) {
		dir := version1Dir(t)
		// The earlier release's temporary files, left by crashes.
		writeFile(t, dir, StateFile+".tmp", "{")
		writeFile(t, dir, RootsFile+".tmp", "/run/r")
		p := testPoolIn(t, dir, 4)
		c := mustAllocate(t, p, "pod-c", "/run/runc", "pod-c")
		for _, name := range []string{StateFile + ".tmp", RootsFile + ".tmp"} {
			if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left after the conversion: %v", name, err)
			}
		}
		if c.HostID != base+65536 {
			t.Errorf("pod-c got %d, want the slot between pod-a and pod-b, %d", c.HostID, base+65536)
		}
		if _, err := os.Stat(filepath.Join(dir, StateFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pool.json left after the conversion: %v", err)
		}
		want := map[string]string{recordName(c.HostID, "pod-c"): string(must(encodeRecord(c)))}
		maps.Copy(want, version1Records)
		if got := recordFiles(t, dir); !reflect.DeepEqual(got, want) {
			t.Errorf("records:\n%v\nwant\n%v", got, want)
		}
	})
	t.Run("a crash during the conversion converts again", func(t *testing.T) {
		dir := version1Dir(t)
		// One record written, a temporary file, and a record pool.json
		// does not hold (left from before a downgrade): pool.json wins.
		writeRecords(t, dir, map[string]string{
			"2147483648-pod-a":             version1Records["2147483648-pod-a"],
			tempName("2147614720-pod-b"):   "{",
			recordName(base+65536, "gone"): rec("gone", base+65536, 0),
		})
		p := testPoolIn(t, dir, 4)
		if freed, err := p.Leave("pod-a", "app"); err != nil || freed {
			t.Fatalf("Leave = %v, %v", freed, err)
		}
		want := map[string]string{
			"2147483648-pod-a": strings.Replace(version1Records["2147483648-pod-a"], `["pod-a","app"]`, `["pod-a"]`, 1),
			"2147614720-pod-b": version1Records["2147614720-pod-b"],
		}
		if got := recordFiles(t, dir); !reflect.DeepEqual(got, want) {
			t.Errorf("records:\n%v\nwant\n%v", got, want)
		}
	})
	t.Run("a corrupt pool.json is reported, not converted", func(t *testing.T) {
		dir := version1Dir(t)
		broken := version1[:len(version1)/2]
		writeFile(t, dir, StateFile, broken)
		p := testPoolIn(t, dir, 4)
		for name, call := range map[string]func() error{
			"Join": func() error { _, err := p.Join("pod-a", "x"); return err },
			"List": func() error { _, err := p.List(); return err },
		} {
			if err := call(); !errors.Is(err, ErrCorruptState) || !strings.Contains(err.Error(), filepath.Join(dir, StateFile)) {
				t.Errorf("%s = %v, want ErrCorruptState naming pool.json", name, err)
			}
		}
		if got, _ := os.ReadFile(filepath.Join(dir, StateFile)); string(got) != broken {
			t.Error("a corrupt pool.json was changed")
		}
	})
}

func must(data []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return data
}

// TestRecordsAreVersion1Records: the fields of a record are those of an
// allocation in pool.json, so that tools reading either see the same.
func TestRecordsAreVersion1Records(t *testing.T) {
	st, err := parseState([]byte(version1))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Allocations {
		name := recordName(a.HostID, a.Owner)
		got, err := decodeRecord(name, []byte(version1Records[name]))
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Errorf("%s decodes to %+v, %v; want %+v", name, got, err, a)
		}
	}
	if len(version1Records) != len(st.Allocations) {
		t.Errorf("%d records for %d allocations", len(version1Records), len(st.Allocations))
	}
}
