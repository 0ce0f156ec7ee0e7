package create

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
)

// writeState writes a runc state.json for container id under root whose
// labels carry the given annotations.
func writeState(t testing.TB, root, id string, annotations map[string]string) {
	t.Helper()
	labels := []string{"bundle=/b/" + id}
	for k, v := range annotations {
		labels = append(labels, k+"="+v)
	}
	var st runc.State
	st.InitPID, st.Config.Labels = 1, labels
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, id), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, id, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// exec finds the record through the container's own stamp, and refuses
// when the stamp says the wrapper entered a network namespace it can no
// longer find, or when the stamp does not verify with the key of the state
// dir the call's config names.
func TestNetjoinOf(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the stamp key must be root-owned: needs root")
	}
	stateDir, root := t.TempDir(), t.TempDir()
	key, err := oci.StampKey(stateDir, true)
	if err != nil {
		t.Fatal(err)
	}
	stamp := func(netns string, k []byte) map[string]string {
		st := &oci.Stamp{Version: 1, Root: root, StateDir: stateDir, Netns: netns}
		st.Sign(k)
		return map[string]string{oci.AnnotationStamp: st.Encode()}
	}
	writeState(t, root, "plain", nil)
	writeState(t, root, "stamped", stamp("", key))
	writeState(t, root, "entered", stamp("/proc/self/ns/net", key))
	writeState(t, root, "lost", stamp("/proc/self/ns/net", key))
	writeState(t, root, "forged", stamp("/proc/self/ns/net", make([]byte, 32)))
	want, err := writeNetjoin(state.Layout(stateDir), root, "entered", "/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	a := &Call{Cfg: &config.Config{StateDir: stateDir}}
	cases := []struct {
		id      string
		found   bool
		wantErr string
	}{
		{id: "missing"},
		{id: "plain"},
		{id: "stamped"},
		{id: "entered", found: true},
		{id: "lost", wantErr: "its record " + state.Layout(stateDir).NetjoinRecord(root, "lost") + " is gone: refusing to exec"},
		{id: "forged", wantErr: "does not verify"},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			nj, found, err := a.NetjoinOf(root, c.id)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("netjoinOf = %+v, %v, %v; want an error mentioning %q", nj, found, err, c.wantErr)
				}
				return
			}
			if err != nil || found != c.found || (found && nj != want) {
				t.Fatalf("netjoinOf = %+v, %v, %v; want found %v (%+v)", nj, found, err, c.found, want)
			}
		})
	}
	// A call whose config names another state dir (its environment did
	// not reach it, and no operator config is at the default path): the
	// stamp does not verify there, and exec is refused, never run in the
	// host's network namespace.
	elsewhere := &Call{Cfg: &config.Config{StateDir: t.TempDir()}}
	if _, _, err := elsewhere.NetjoinOf(root, "entered"); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("netjoinOf with another state dir configured: %v, want it refused", err)
	}
	if !NetjoinsUnder(root) {
		t.Error("netjoinsUnder: root has containers whose network namespace was entered")
	}
	other := t.TempDir()
	writeState(t, other, "stamped", stamp("", key))
	// A pod author's annotations holding both strings netjoinOf looks for
	// first: not a stamp.
	writeState(t, other, "lookalike", map[string]string{"x": oci.AnnotationStamp + `={"netns":"/proc/1/ns/net"}`})
	if raw, _ := os.ReadFile(filepath.Join(other, "lookalike", "state.json")); !hasNetjoinStamp(raw) {
		t.Fatalf("the lookalike state does not pass netjoinOf's first look: %s", raw)
	}
	if NetjoinsUnder(other) || NetjoinsUnder(filepath.Join(other, "none")) {
		t.Error("netjoinsUnder: no container of that root had its network namespace entered")
	}
}

// BenchmarkExecLookupMiss is what exec costs a container we did not edit:
// reading its runc state.json (runc 1.1.5's, of a `runc spec` container)
// and finding no stamp.
func BenchmarkExecLookupMiss(b *testing.B) {
	root := b.TempDir()
	raw, err := os.ReadFile("../runc/testdata/state-runc-1.1.5.json")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "c"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "c", "state.json"), raw, 0o600); err != nil {
		b.Fatal(err)
	}
	a := &Call{Cfg: &config.Config{StateDir: b.TempDir()}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, found, err := a.NetjoinOf(root, "c"); found || err != nil {
			b.Fatal(found, err)
		}
	}
}
