package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/fault"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/pool"
)

// The C side names a runc root as layout.go does: the first 6 bytes of the
// SHA-256 of its clean path, in hex, at every length around SHA-256's
// 55/56/64-byte padding boundaries.
func TestFastpathRootHash(t *testing.T) {
	roots := []string{"/", "/run/runc", "/run/containerd/runc/k8s.io", "/tmp/bats-run-1/t.AbC/runc-root"}
	for n := 1; n <= 140; n++ {
		roots = append(roots, "/"+strings.Repeat("r", n))
	}
	for _, root := range roots {
		if got, want := fastpathRootHash(root), rootHash(root); got != want {
			t.Errorf("C rootHash(%q) = %s, Go %s", root, got, want)
		}
	}
}

// While it waits for an early delete's runc, the C side forwards the
// signals runc.Wait would.
func TestFastReleaseForwardsShortSignals(t *testing.T) {
	var want []int
	for _, s := range runc.ShortSignals {
		want = append(want, int(s.(syscall.Signal)))
	}
	if got := fastpathShortSignals(); !reflect.DeepEqual(got, want) {
		t.Errorf("the constructor forwards %v, runc.ShortSignals are %v", got, want)
	}
}

// A marker's claim and a pool record as the Go code writes them parse to
// their fields; anything the C side is not sure of is refused (and left to
// the Go code).
func TestFastReleaseParse(t *testing.T) {
	claim, _ := json.Marshal(inflightRecord{Owner: "pod1", HostID: 2147483648, Size: 65536, Root: "/run/containerd/runc/k8s.io", Member: "c1"})
	rec := func(members ...string) string {
		data, _ := json.Marshal(pool.Allocation{Owner: "pod1", HostID: 2147549184, Size: 65536, Root: "/r", Members: members})
		return string(data) + "\n"
	}
	cases := []struct {
		name   string
		record bool
		data   string
		want   fastpathClaim // ok false: refused
	}{
		{"claim", false, string(claim), fastpathClaim{Owner: "pod1", HostID: 2147483648, Size: 65536, Root: "/run/containerd/runc/k8s.io", Member: "c1", ok: true}},
		{"claim, keys in another order", false, `{"member":"c1","root":"/r","size":1,"hostID":0,"owner":"o"}`, fastpathClaim{Owner: "o", Size: 1, Root: "/r", Member: "c1", ok: true}},
		{"claim, an unknown key", false, `{"owner":"o","hostID":1,"size":1,"root":"/r","member":"c","x":1}`, fastpathClaim{}},
		{"claim, a key twice", false, `{"owner":"o","owner":"p","hostID":1,"size":1,"root":"/r","member":"c"}`, fastpathClaim{}},
		{"claim, a key missing", false, `{"owner":"o","hostID":1,"size":1,"root":"/r"}`, fastpathClaim{}},
		{"claim, an escape", false, `{"owner":"o","hostID":1,"size":1,"root":"/\u0072","member":"c"}`, fastpathClaim{}},
		{"claim, a key spelt otherwise", false, `{"Owner":"o","hostID":1,"size":1,"root":"/r","member":"c"}`, fastpathClaim{}},
		{"claim, host ID past uint32", false, `{"owner":"o","hostID":4294967296,"size":1,"root":"/r","member":"c"}`, fastpathClaim{}},
		{"claim, a fraction", false, `{"owner":"o","hostID":1.0,"size":1,"root":"/r","member":"c"}`, fastpathClaim{}},
		{"claim, data after it", false, string(claim) + "x", fastpathClaim{}},
		{"empty marker", false, "", fastpathClaim{}},
		{"record, one member", true, rec("c1"), fastpathClaim{Owner: "pod1", HostID: 2147549184, Size: 65536, Root: "/r", Member: "c1", Members: 1, ok: true}},
		{"record, two members", true, rec("pod1", "c1"), fastpathClaim{Owner: "pod1", HostID: 2147549184, Size: 65536, Root: "/r", Member: "pod1", Members: 2, ok: true}},
		{"record without members (omitted when empty)", true, rec(), fastpathClaim{}},
		{"record, a member not a string", true, `{"owner":"o","hostID":1,"size":1,"root":"/r","allocated":"t","members":[1]}`, fastpathClaim{}},
		{"record, no allocated", true, `{"owner":"o","hostID":1,"size":1,"root":"/r","members":["c"]}`, fastpathClaim{}},
		{"record, two objects", true, rec("c1") + rec("c1"), fastpathClaim{}},
		{"record, a member twice", true, rec("c1", "c1"), fastpathClaim{}},
		{"record, an empty member", true, rec("c1", ""), fastpathClaim{}},
		{"record, size 0", true, `{"owner":"o","hostID":1,"size":0,"root":"/r","allocated":"2025-11-22T10:50:00Z","members":["c"]}`, fastpathClaim{}},
		{"record, IDs past (uid_t)-1", true, `{"owner":"o","hostID":4294901760,"size":65536,"root":"/r","allocated":"2025-11-22T10:50:00Z","members":["c"]}`, fastpathClaim{}},
		{"record, no owner", true, `{"owner":"","hostID":1,"size":1,"root":"/r","allocated":"2025-11-22T10:50:00Z","members":["c"]}`, fastpathClaim{}},
		{"record, 30 February", true, `{"owner":"o","hostID":1,"size":1,"root":"/r","allocated":"2025-02-30T10:50:00Z","members":["c"]}`, fastpathClaim{}},
		{"record, 29 February of a leap year", true, `{"owner":"o","hostID":1,"size":1,"root":"/r","allocated":"2024-02-29T23:59:59Z","members":["c"]}`, fastpathClaim{Owner: "o", HostID: 1, Size: 1, Root: "/r", Member: "c", Members: 1, ok: true}},
		{"record, a time not in UTC", true, `{"owner":"o","hostID":1,"size":1,"root":"/r","allocated":"2025-11-22T10:50:00+01:00","members":["c"]}`, fastpathClaim{}},
		{"record, a time with a fraction", true, `{"owner":"o","hostID":1,"size":1,"root":"/r","allocated":"2025-11-22T10:50:00.5Z","members":["c"]}`, fastpathClaim{}},
		{"record, & in the root (Go writes it escaped)", true, `{"owner":"o","hostID":1,"size":1,"root":"/r&s","allocated":"2025-11-22T10:50:00Z","members":["c"]}`, fastpathClaim{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := fastpathParseClaim([]byte(c.data), c.record)
			if !c.want.ok {
				if got.ok {
					t.Fatalf("parsed %q: %+v; want it refused", c.data, got)
				}
				return
			}
			if got != c.want {
				t.Errorf("parsed %q: %+v; want %+v", c.data, got, c.want)
			}
		})
	}
}

// FuzzFastReleaseParse: whatever the C side reads as a claim or a record,
// encoding/json reads alike (the same fields; a record's members too), and
// a record it reads is one the pool would not call damage (checkRecord's
// rules at the record's own size, its allocated time a time).
func FuzzFastReleaseParse(f *testing.F) {
	claim, _ := json.Marshal(inflightRecord{Owner: "pod1", HostID: 7, Size: 65536, Root: "/run/x", Member: "c1"})
	f.Add(claim, false)
	f.Add([]byte(`{"owner":"o","hostID":1,"size":1,"root":"/r","allocated":"2025-11-22T10:50:00Z","members":["c","d"]}`+"\n"), true)
	f.Add([]byte(`{"owner":"o","hostID":1,"size":1,"root":"/r","allocated":"2024-02-29T00:00:00Z","members":["c"]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, record bool) {
		got := fastpathParseClaim(data, record)
		if !got.ok {
			return
		}
		var want fastpathClaim
		if record {
			var a pool.Allocation
			if err := json.Unmarshal(data, &a); err != nil {
				t.Fatalf("C read record %q, encoding/json refuses it: %v", data, err)
			}
			seen := map[string]bool{}
			for _, m := range a.Members {
				if m == "" || seen[m] {
					t.Fatalf("C read record %q: member %q empty or twice", data, m)
				}
				seen[m] = true
			}
			if a.Owner == "" || a.Size == 0 || uint64(a.HostID)+uint64(a.Size) > 1<<32-1 {
				t.Fatalf("C read record %q: owner, size or range is damage", data)
			}
			want = fastpathClaim{Owner: a.Owner, HostID: a.HostID, Size: a.Size, Root: a.Root, Members: len(a.Members), ok: true}
			if len(a.Members) > 0 {
				want.Member = a.Members[0]
			}
		} else {
			var c inflightRecord
			if err := json.Unmarshal(data, &c); err != nil {
				t.Fatalf("C read claim %q, encoding/json refuses it: %v", data, err)
			}
			want = fastpathClaim{Owner: c.Owner, HostID: c.HostID, Size: c.Size, Root: c.Root, Member: c.Member, ok: true}
		}
		if got != want {
			t.Fatalf("%q: C read %+v, encoding/json %+v", data, got, want)
		}
	})
}

// releaseEnv is a state dir as creates leave it for the containers of one
// pod (the first ID its sandbox) under runc root root, none of which runc
// has any more: each container's marker with its claim, its staging
// directories, the pool record, and the pod's pin (a plain file here:
// detaching it fails with EINVAL, as for a pin already gone) with its
// mapping and cgroup files.
func releaseEnv(t *testing.T, ids ...string) (stateDir, root string) {
	t.Helper()
	stateDir, root = filepath.Join(t.TempDir(), "state"), filepath.Join(t.TempDir(), "runc")
	lay := layout(stateDir)
	p, err := pool.New(pool.Config{Ranges: []pool.Range{{HostID: 1 << 31, Size: 1 << 20}}, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	owner := ids[0]
	for _, id := range ids {
		a, err := p.Allocate(owner, root, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(lay.inflightDir(), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(lay.inflight(root, id), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := writeInflight(lay.inflight(root, id), inflightRecord{Owner: owner, HostID: a.HostID, Size: a.Size, Root: root, Member: id}); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{lay.stagedRootfs(root, id), lay.stagedMount(root, id, 7), lay.stagedMount(root, id, 8), filepath.Join(lay.layersDir(root, id), "0")} {
			if err := os.MkdirAll(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		// A staged bind mount of a file is a file.
		if err := os.WriteFile(lay.stagedMount(root, id, 9), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{lay.pin(owner), lay.mapping(owner), lay.podCgroup(owner)} {
		if err := os.MkdirAll(filepath.Dir(f), 0o711); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return stateDir, root
}

// tree lists what is under dir, with file contents, for comparing twins:
// root, its hash and allocation times written alike.
func tree(t *testing.T, dir, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		entry := strings.ReplaceAll(rel, rootHash(root), "<hash>")
		if info.Mode().IsRegular() && !strings.HasPrefix(info.Name(), "pool.lock") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			entry += " " + allocatedTime.ReplaceAllString(strings.ReplaceAll(string(data), root, "<root>"), "")
		}
		out = append(out, entry)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var allocatedTime = regexp.MustCompile(`"allocated":"[^"]*"`)

// goRelease is delete.go's release after runc deleted the container.
func goRelease(t *testing.T, stateDir, root, id, owner string) {
	t.Helper()
	marker, err := holdForRelease(layout(stateDir), root, id)
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	log := logrus.New()
	log.SetOutput(new(strings.Builder))
	if err := release(stateDir, root, id, owner, log); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// fp_release leaves the state dir exactly as delete.go's release does when
// it handles the case, and otherwise hands it on in a state from which the
// Go release ends in the same place: run on twin state dirs, C (then Go,
// when C declined) against Go alone.
func TestFastRelease(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the C side calls umount2 (fails EPERM unprivileged)")
	}
	shortWaits(t)
	type prep func(t *testing.T, stateDir, root string)
	cases := []struct {
		name    string
		ids     []string // the pod's containers, the sandbox first
		release string   // the one deleted
		prep    prep     // done to both twins
		cOK     bool     // fp_release does it all
		after   prep     // checks the C twin when fp_release declined, before Go goes on
	}{
		{name: "the pod's only container", ids: []string{"sb"}, release: "sb", cOK: true},
		{name: "the pod's last container, not its sandbox", ids: []string{"sb", "app"}, release: "app",
			prep: func(t *testing.T, stateDir, root string) { goRelease(t, stateDir, root, "sb", "sb") }, cOK: true},
		{name: "another container of the pod stays", ids: []string{"sb", "app"}, release: "app", cOK: true},
		{name: "the sandbox goes first, its app container stays", ids: []string{"sb", "app"}, release: "sb", cOK: true},
		{name: "a member the record does not list", ids: []string{"sb", "app"}, release: "app",
			prep: func(t *testing.T, stateDir, root string) {
				p, err := pool.OpenExisting(stateDir)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.Leave("sb", "app"); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "no pool records (none allocated)", ids: []string{"sb"}, release: "sb", cOK: true,
			prep: func(t *testing.T, stateDir, root string) { removeAll(t, filepath.Join(stateDir, pool.RecordDir)) }},
		// runc < 1.3 under containerd or CRI-O: every pod's containers
		// have one (netjoin.go).
		{name: "a netns record in the container dir", ids: []string{"sb"}, release: "sb", cOK: true,
			prep: func(t *testing.T, stateDir, root string) {
				writeFile(t, layout(stateDir).netjoinRecord(root, "sb"), "1 2 /x")
			}},
		{name: "a netns record that is a directory", ids: []string{"sb"}, release: "sb",
			prep: func(t *testing.T, stateDir, root string) {
				if err := os.Mkdir(layout(stateDir).netjoinRecord(root, "sb"), 0o700); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a netns record's temp file", ids: []string{"sb"}, release: "sb",
			prep: func(t *testing.T, stateDir, root string) {
				writeFile(t, layout(stateDir).netjoinRecord(root, "sb"), "1 2 /x")
				writeFile(t, filepath.Join(layout(stateDir).containerDir(root, "sb"), ".netns.tmp-123"), "")
			}},
		{name: "a temp file in the pod dir", ids: []string{"sb"}, release: "sb",
			prep: func(t *testing.T, stateDir, root string) {
				writeFile(t, filepath.Join(layout(stateDir).podDir("sb"), ".mapping.tmp-123"), "")
			},
			// Declined before the record went: the Go code, handed the
			// rest, must find the range still taken and the pin with it.
			after: func(t *testing.T, stateDir, root string) {
				if _, err := os.Stat(filepath.Join(stateDir, pool.RecordDir, "2147483648-sb")); err != nil {
					t.Errorf("the record went before fp_release declined: %v", err)
				}
			}},
		{name: "an older release's pool.json", ids: []string{"sb"}, release: "sb",
			prep: func(t *testing.T, stateDir, root string) {
				writeFile(t, filepath.Join(stateDir, pool.StateFile), `{"version":1,"slotSize":65536,"allocations":[]}`)
			}},
		// A create killed before it detached its staging mounts, in the
		// layout of an entry per mount: each is detached (stacked
		// mounts too, and a file's bind mount) and removed.
		{name: "staging entries still mounted", ids: []string{"sb"}, release: "sb", cOK: true,
			prep: func(t *testing.T, stateDir, root string) {
				lay := layout(stateDir)
				src := t.TempDir()
				writeFile(t, filepath.Join(src, "file"), "x")
				bindEach(t, [][2]string{
					{src, lay.stagedMount(root, "sb", 7)},
					{src, lay.stagedMount(root, "sb", 7)},
					{filepath.Join(src, "file"), lay.stagedMount(root, "sb", 9)},
					{src, filepath.Join(lay.layersDir(root, "sb"), "0")},
				})
			}},
		// A create of this layout killed before its tail: the container
		// directory is a mount of its own (stageContainerDir), with the
		// staging mounts below it.
		{name: "the container directory still mounted", ids: []string{"sb"}, release: "sb", cOK: true,
			prep: func(t *testing.T, stateDir, root string) {
				lay := layout(stateDir)
				if err := idmap.StageDir(lay.containerDir(root, "sb")); err != nil {
					t.Fatal(err)
				}
				src := t.TempDir()
				writeFile(t, filepath.Join(src, "file"), "x")
				bindEach(t, [][2]string{
					{src, lay.stagedRootfs(root, "sb")},
					{src, lay.stagedMount(root, "sb", 7)},
					{filepath.Join(src, "file"), lay.stagedMount(root, "sb", 9)},
					{src, filepath.Join(lay.layersDir(root, "sb"), "0")},
				})
			}},
		{name: "a claim for another root", ids: []string{"sb"}, release: "sb",
			prep: func(t *testing.T, stateDir, root string) {
				if err := writeInflight(layout(stateDir).inflight(root, "sb"), inflightRecord{Owner: "sb", HostID: 1 << 31, Size: 65536, Root: "/elsewhere", Member: "sb"}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cState, cRoot := releaseEnv(t, c.ids...)
			gState, gRoot := releaseEnv(t, c.ids...)
			t.Cleanup(func() { unmountBelow(t, cState); unmountBelow(t, gState) })
			if c.prep != nil {
				c.prep(t, cState, cRoot)
				c.prep(t, gState, gRoot)
			}
			owner := c.ids[0]
			if ok := fastpathRelease(cState, cRoot, c.release); ok != c.cOK {
				t.Fatalf("fp_release = %v, want %v", ok, c.cOK)
			}
			if !c.cOK {
				if c.after != nil {
					c.after(t, cState, cRoot)
				}
				goRelease(t, cState, cRoot, c.release, owner)
			}
			goRelease(t, gState, gRoot, c.release, owner)
			// Whatever the C side wrote, the pool reads (every record
			// decoded and checked, its allocated time among them).
			p, err := pool.OpenExisting(cState)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.List(); err != nil {
				t.Errorf("the pool after the C release: %v", err)
			}
			if got, want := tree(t, cState, cRoot), tree(t, gState, gRoot); !reflect.DeepEqual(got, want) {
				t.Errorf("state dir after the C release:\n%s\nafter the Go release alone:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if n := mountsBelow(t, cState); n != 0 {
				t.Errorf("%d mounts below the state dir after the C release, want none", n)
			}
		})
	}
}

// bindEach bind-mounts each pair's source onto its target, in order.
func bindEach(t *testing.T, pairs [][2]string) {
	t.Helper()
	for _, m := range pairs {
		if err := unix.Mount(m[0], m[1], "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// Nothing is changed when the C side cannot start: runc still has the
// container, or someone holds its marker.
func TestFastReleaseRefusesBeforeChanging(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the C side calls umount2 (fails EPERM unprivileged)")
	}
	for _, c := range []struct {
		name string
		prep func(t *testing.T, stateDir, root string) func()
	}{
		{"runc has the container", func(t *testing.T, stateDir, root string) func() {
			writeFile(t, filepath.Join(root, "sb", "state.json"), "{}")
			return func() {}
		}},
		{"its marker is locked", func(t *testing.T, stateDir, root string) func() {
			f, err := os.Open(layout(stateDir).inflight(root, "sb"))
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			return func() { f.Close() }
		}},
		{"no marker", func(t *testing.T, stateDir, root string) func() {
			removeAll(t, layout(stateDir).inflight(root, "sb"))
			return func() {}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stateDir, root := releaseEnv(t, "sb")
			done := c.prep(t, stateDir, root)
			defer done()
			before := tree(t, stateDir, root)
			if fastpathRelease(stateDir, root, "sb") {
				t.Fatal("fp_release = true")
			}
			if after := tree(t, stateDir, root); !reflect.DeepEqual(after, before) {
				t.Errorf("fp_release changed the state dir:\n%s\nwas:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
			}
		})
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

// When the constructor releases by itself, and where: only for the early
// delete, with the state dir the Go code would use (config.Load's default
// when unset), never with --debug, under fault injection, or with a state
// dir or root the Go code would clean into another path.
func TestFastReleasePlan(t *testing.T) {
	const cfg = "/cfg.json"
	env := []string{"PATH=/usr/sbin", "RUNC_USERNS_CONFIG=" + cfg}
	sys := func(config, statePath string) fastpathSys {
		return fastpathSys{configPath: cfg, config: []byte(config), files: fpFiles, statePath: statePath, state: []byte(fpStamped)}
	}
	withSD := `{"runtime": "/opt/runc", "stateDir": "/var/run/ru"}`
	cases := []struct {
		name  string
		argv  []string
		env   []string
		sys   fastpathSys
		state string // the plan's state dir; "" for no release by the constructor
		root  string
	}{
		{"the configured state dir", []string{"--root", "/r", "delete", "c"}, env, sys(withSD, "/r/c/state.json"), "/var/run/ru", "/r"},
		{"the default state dir", []string{"delete", "--force", "c"}, env, sys(`{"runtime": "/opt/runc"}`, "/run/runc/c/state.json"), "/run/runc-userns", "/run/runc"},
		{"--debug", []string{"--debug", "--root", "/r", "delete", "c"}, env, sys(withSD, "/r/c/state.json"), "", ""},
		{"--debug=false (left to Go all the same)", []string{"--debug=false", "--root", "/r", "delete", "c"}, env, sys(withSD, "/r/c/state.json"), "", ""},
		{"a kill-at fault test", []string{"--root", "/r", "delete", "c"}, append(env, fault.EnvKillAt+"=released"), sys(withSD, "/r/c/state.json"), "", ""},
		{"a stop-at fault test", []string{"--root", "/r", "delete", "c"}, append(env, fault.EnvStopAt+"=released"), sys(withSD, "/r/c/state.json"), "", ""},
		{"a state dir Go would clean", []string{"--root", "/r", "delete", "c"}, env, sys(`{"stateDir": "/var/run/ru/"}`, "/r/c/state.json"), "", ""},
		{"a state dir given twice", []string{"--root", "/r", "delete", "c"}, env, sys(`{"stateDir": "/a", "stateDir": "/b"}`, "/r/c/state.json"), "", ""},
		{"a root Go would clean", []string{"--root", "/r/", "delete", "c"}, env, sys(withSD, "/r//c/state.json"), "", ""},
		{"an unstamped container (a bare exec)", []string{"--root", "/r", "delete", "c"}, env, func() fastpathSys { s := sys(withSD, "/r/c/state.json"); s.state = []byte(fpState); return s }(), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := fastpathDecide(append([]string{"/usr/local/bin/runc-userns"}, c.argv...), c.env, c.sys)
			if v.release != (c.state != "") || v.relState != c.state || v.relRoot != c.root || (v.release && v.id != "c") {
				t.Errorf("release %v in %q for root %q, ID %q (verdict %d); want release %v in %q for root %q",
					v.release, v.relState, v.relRoot, v.id, v.kind, c.state != "", c.state, c.root)
			}
			if v.release && v.kind != verdictSpawn {
				t.Errorf("a release planned without an early runc (verdict %d)", v.kind)
			}
		})
	}
}

// An ID runc would refuse names nothing of ours: fp_release refuses it
// before it builds a path from it.
func TestFastReleaseRefusesAnInvalidID(t *testing.T) {
	stateDir, root := releaseEnv(t, "sb")
	before := tree(t, stateDir, root)
	for _, id := range []string{"", "..", "../sb", "sb/../sb", "a b"} {
		if fastpathRelease(stateDir, root, id) {
			t.Errorf("fp_release(%q) = true", id)
		}
	}
	if after := tree(t, stateDir, root); !reflect.DeepEqual(after, before) {
		t.Errorf("fp_release of invalid IDs changed the state dir:\n%s", strings.Join(after, "\n"))
	}
}
