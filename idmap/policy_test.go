package idmap

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var (
	podMap    = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 3221225472, Size: 65536}}
	callerMap = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 100000, Size: 65536}}
	mountMap  = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 200000, Size: 1000}}
)

func bind(dest string, opts ...string) specs.Mount {
	return specs.Mount{Destination: dest, Type: "bind", Source: "/src" + dest, Options: opts}
}

func TestIsBind(t *testing.T) {
	cases := []struct {
		name string
		m    specs.Mount
		want bool
	}{
		{"type bind", specs.Mount{Type: "bind"}, true},
		{"bind option, no type", specs.Mount{Options: []string{"bind"}}, true},
		{"rbind option, type none", specs.Mount{Type: "none", Options: []string{"ro", "rbind"}}, true},
		{"proc", specs.Mount{Type: "proc", Options: []string{"nosuid"}}, false},
		{"tmpfs with a bind-like option value", specs.Mount{Type: "tmpfs", Options: []string{"mode=bind"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsBind(c.m); got != c.want {
				t.Fatalf("IsBind = %v, want %v", got, c.want)
			}
		})
	}
}

func TestRequested(t *testing.T) {
	cases := []struct {
		name   string
		mounts []specs.Mount
		want   bool
	}{
		{"no mounts", nil, false},
		{"plain binds", []specs.Mount{bind("/a"), bind("/b", "rbind")}, false},
		{"idmap option", []specs.Mount{bind("/a"), bind("/b", "idmap")}, true},
		{"ridmap option", []specs.Mount{bind("/b", "rbind", "ridmap")}, true},
		{"mount-level mappings without an option (containerd 2)", []specs.Mount{{Destination: "/v", Type: "bind", UIDMappings: mountMap, GIDMappings: mountMap}}, true},
		{"idmap option on a non-bind mount is not ours", []specs.Mount{{Destination: "/t", Type: "tmpfs", Options: []string{"idmap"}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Requested(&specs.Spec{Mounts: c.mounts}); got != c.want {
				t.Fatalf("Requested = %v, want %v", got, c.want)
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	type cand struct {
		Index     int
		Recursion Recursion
		Explicit  bool
		UID       []specs.LinuxIDMapping
	}
	cases := []struct {
		name    string
		mounts  []specs.Mount
		caller  []specs.LinuxIDMapping // linux.uidMappings and gidMappings
		pod     []specs.LinuxIDMapping
		skip    []string
		want    []cand
		wantErr string
		errIs   error
	}{
		{
			name:   "pool container: every bind is implicit, proc is not a candidate",
			mounts: []specs.Mount{{Destination: "/proc", Type: "proc"}, bind("/etc/hosts"), bind("/data", "rbind")},
			pod:    podMap,
			want:   []cand{{Index: 1, UID: podMap}, {Index: 2, Recursion: Tree, UID: podMap}},
		},
		{
			name:   "idmap-skip opts a mount out, by clean path",
			mounts: []specs.Mount{bind("/a"), bind("/b")},
			pod:    podMap,
			skip:   []string{"/b/"},
			want:   []cand{{Index: 0, UID: podMap}},
		},
		{
			name:   "idmap-skip does not opt out an explicit request",
			mounts: []specs.Mount{bind("/a", "idmap")},
			pod:    podMap,
			skip:   []string{"/a"},
			want:   []cand{{Index: 0, Explicit: true, UID: podMap}},
		},
		{
			name:   "no pool namespace: plain binds are left alone",
			mounts: []specs.Mount{bind("/a"), bind("/b", "rbind")},
		},
		{
			name:   "mount-level mappings win over the pod's",
			mounts: []specs.Mount{{Destination: "/v", Type: "bind", UIDMappings: mountMap, GIDMappings: mountMap}},
			pod:    podMap,
			want:   []cand{{Index: 0, Explicit: true, UID: mountMap}},
		},
		{
			name:   "idmap option alone takes the caller's container mappings",
			mounts: []specs.Mount{bind("/v", "idmap")},
			caller: callerMap,
			want:   []cand{{Index: 0, Explicit: true, UID: callerMap}},
		},
		// As runc >= 1.2 reads them: rbind takes the submounts, ridmap
		// idmaps them, idmap and mount mappings only the top one.
		{
			name:   "ridmap is explicit; without rbind, one mount",
			mounts: []specs.Mount{bind("/v", "ridmap")},
			caller: callerMap,
			want:   []cand{{Index: 0, Recursion: TopOnly, Explicit: true, UID: callerMap}},
		},
		{
			name:   "rbind and ridmap: the tree, idmapped",
			mounts: []specs.Mount{bind("/v", "rbind", "ridmap")},
			caller: callerMap,
			want:   []cand{{Index: 0, Recursion: Tree, Explicit: true, UID: callerMap}},
		},
		{
			name:   "rbind and idmap: the tree, only its top idmapped",
			mounts: []specs.Mount{bind("/v", "rbind", "idmap")},
			pod:    podMap,
			want:   []cand{{Index: 0, Recursion: TreeTopIdmapped, Explicit: true, UID: podMap}},
		},
		{
			name:   "rbind and mount mappings: the tree, only its top idmapped",
			mounts: []specs.Mount{{Destination: "/v", Type: "bind", Options: []string{"rbind"}, UIDMappings: mountMap, GIDMappings: mountMap}},
			pod:    podMap,
			want:   []cand{{Index: 0, Recursion: TreeTopIdmapped, Explicit: true, UID: mountMap}},
		},
		{
			name:    "idmap option with no mapping anywhere",
			mounts:  []specs.Mount{bind("/v", "idmap")},
			wantErr: "mount /v asks for idmap but neither the mount nor the container has uid/gid mappings",
			errIs:   ErrNoMappings,
		},
		{
			name:    "uidMappings without gidMappings",
			mounts:  []specs.Mount{{Destination: "/v", Type: "bind", UIDMappings: mountMap}},
			wantErr: "mount /v: uidMappings and gidMappings must be given together",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &specs.Spec{Mounts: c.mounts}
			if c.caller != nil {
				s.Linux = &specs.Linux{UIDMappings: c.caller, GIDMappings: c.caller}
			}
			got, err := Candidates(s, c.pod, nil, c.skip)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Candidates error = %v, want one mentioning %q", err, c.wantErr)
				}
				if c.errIs != nil && !errors.Is(err, c.errIs) {
					t.Fatalf("Candidates error %v does not wrap %v", err, c.errIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var have []cand
			for _, g := range got {
				if g.Dest != c.mounts[g.Index].Destination {
					t.Errorf("candidate %d: Dest %q, want %q", g.Index, g.Dest, c.mounts[g.Index].Destination)
				}
				if !reflect.DeepEqual(g.UID, g.GID) {
					t.Errorf("candidate %d: UID %v and GID %v differ", g.Index, g.UID, g.GID)
				}
				have = append(have, cand{g.Index, g.Recursion, g.Explicit, g.UID})
			}
			if !reflect.DeepEqual(have, c.want) {
				t.Fatalf("Candidates = %+v, want %+v", have, c.want)
			}
		})
	}
}

func TestNativeModifier(t *testing.T) {
	s := &specs.Spec{Mounts: []specs.Mount{
		bind("/plain", "rw"),
		bind("/rec", "rbind"),
		{Destination: "/explicit", Type: "bind", Source: "/x", UIDMappings: mountMap, GIDMappings: mountMap},
		bind("/opt", "idmap"),
		{Destination: "/proc", Type: "proc"},
	}}
	cands, err := Candidates(s, podMap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := (NativeModifier{Candidates: cands}).Modify(s); err != nil {
		t.Fatal(err)
	}
	want := []specs.Mount{
		{Destination: "/plain", Type: "bind", Source: "/src/plain", Options: []string{"rw", "idmap"}, UIDMappings: podMap, GIDMappings: podMap},
		{Destination: "/rec", Type: "bind", Source: "/src/rec", Options: []string{"rbind", "ridmap"}, UIDMappings: podMap, GIDMappings: podMap},
		// An explicit mount with mappings is already in runc's form.
		{Destination: "/explicit", Type: "bind", Source: "/x", UIDMappings: mountMap, GIDMappings: mountMap},
		{Destination: "/opt", Type: "bind", Source: "/src/opt", Options: []string{"idmap"}, UIDMappings: podMap, GIDMappings: podMap},
		{Destination: "/proc", Type: "proc"},
	}
	if !reflect.DeepEqual(s.Mounts, want) {
		t.Fatalf("mounts after NativeModifier:\n got %+v\nwant %+v", s.Mounts, want)
	}
	// The modifier copies the mappings: editing one mount's must not
	// change another's.
	s.Mounts[0].UIDMappings[0].HostID = 1
	if s.Mounts[1].UIDMappings[0].HostID != podMap[0].HostID || podMap[0].HostID == 1 {
		t.Fatal("NativeModifier shares mapping slices between mounts")
	}
}

func TestStagedModifier(t *testing.T) {
	cases := []struct {
		name    string
		mount   specs.Mount
		want    specs.Mount
		wantErr bool
	}{
		{
			name:  "source replaced, mappings and idmap dropped (runc 1.1 does not know them)",
			mount: specs.Mount{Destination: "/v", Type: "bind", Source: "/host", Options: []string{"ro", "idmap"}, UIDMappings: mountMap, GIDMappings: mountMap},
			want:  specs.Mount{Destination: "/v", Type: "bind", Source: "/staged/0", Options: []string{"ro", "bind"}},
		},
		{
			name:  "ridmap alone becomes bind: the staged clone is one mount, and runc 1.1 needs the option",
			mount: specs.Mount{Destination: "/v", Type: "bind", Source: "/host", Options: []string{"ridmap"}},
			want:  specs.Mount{Destination: "/v", Type: "bind", Source: "/staged/0", Options: []string{"bind"}},
		},
		{
			name:  "rbind kept once: the staged clone holds the submounts",
			mount: specs.Mount{Destination: "/v", Type: "bind", Source: "/host", Options: []string{"rbind", "ridmap"}},
			want:  specs.Mount{Destination: "/v", Type: "bind", Source: "/staged/0", Options: []string{"rbind"}},
		},
		{
			name:  "bind kept",
			mount: specs.Mount{Destination: "/v", Type: "bind", Source: "/host", Options: []string{"idmap", "bind", "ro"}},
			want:  specs.Mount{Destination: "/v", Type: "bind", Source: "/staged/0", Options: []string{"bind", "ro"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &specs.Spec{Mounts: []specs.Mount{c.mount}}
			if err := (StagedModifier{Staged: map[int]string{0: "/staged/0"}}).Modify(s); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Mounts[0], c.want) {
				t.Fatalf("got %+v, want %+v", s.Mounts[0], c.want)
			}
		})
	}
	t.Run("index out of range", func(t *testing.T) {
		err := (StagedModifier{Staged: map[int]string{3: "/staged/3"}}).Modify(&specs.Spec{Mounts: []specs.Mount{bind("/a")}})
		if err == nil || !strings.Contains(err.Error(), "index 3 out of range") {
			t.Fatalf("error = %v", err)
		}
	})
}

func TestPropagation(t *testing.T) {
	cases := []struct {
		opts []string
		want uintptr
	}{
		{nil, msSlave},
		{[]string{"rbind", "ro"}, msSlave},
		{[]string{"rbind", "rprivate"}, msPrivate},
		{[]string{"private"}, msPrivate},
		{[]string{"rbind", "rslave"}, msSlave},
		{[]string{"slave"}, msSlave},
		{[]string{"rbind", "rshared"}, msSlave},
		{[]string{"shared"}, msSlave},
		{[]string{"rslave", "rprivate"}, msPrivate},
		{[]string{"rprivate", "rshared"}, msSlave},
		{[]string{"rslave", "runbindable"}, msPrivate},
	}
	for _, c := range cases {
		m := specs.Mount{Destination: "/v", Type: "bind", Source: "/s", Options: c.opts}
		if got := propagation(m); got != c.want {
			t.Errorf("propagation(%q) = %#x, want %#x", c.opts, got, c.want)
		}
		cands, err := Candidates(&specs.Spec{Mounts: []specs.Mount{m}}, podMap, nil, nil)
		if err != nil || len(cands) != 1 || cands[0].Propagation != c.want {
			t.Errorf("Candidates(%q) = %+v, %v; want one with propagation %#x", c.opts, cands, err, c.want)
		}
	}
}

func TestUnderEarlierMount(t *testing.T) {
	mnt := func(dest, src string) specs.Mount {
		return specs.Mount{Destination: dest, Type: "bind", Source: src, Options: []string{"rbind"}}
	}
	cases := []struct {
		name   string
		root   string
		mounts []specs.Mount
		want   string
		first  bool // ask about the first mount, not the last
	}{
		{"under an earlier mount", "rootfs", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "/b/rootfs/mnt/x/y/z")}, "/mnt/x", false},
		{"the earlier mount's own point", "rootfs", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "/b/rootfs/mnt/x")}, "/mnt/x", false},
		{"a relative source", "rootfs", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "rootfs/mnt/x/y")}, "/mnt/x", false},
		{"an absolute root.path", "/b/rootfs", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "/b/rootfs/mnt/x/y")}, "/mnt/x", false},
		{"a relative destination", "rootfs", []specs.Mount{mnt("mnt/x", "/vol"), mnt("/n", "/b/rootfs/mnt/x/y")}, "mnt/x", false},
		{"the top one of two", "rootfs", []specs.Mount{mnt("/mnt", "/a"), mnt("/mnt/x", "/vol"), mnt("/n", "/b/rootfs/mnt/x/y")}, "/mnt/x", false},
		{"a sibling with a common prefix", "rootfs", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "/b/rootfs/mnt/xy/z")}, "", false},
		{"a later mount does not count", "rootfs", []specs.Mount{mnt("/n", "/b/rootfs/mnt/x/y"), mnt("/mnt/x", "/vol")}, "", true},
		{"inside the rootfs, under no mount", "rootfs", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "/b/rootfs/etc")}, "", false},
		{"outside the rootfs", "rootfs", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "/b/other/mnt/x")}, "", false},
		{"the rootfs's parent", "rootfs", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "/b")}, "", false},
		{"no root", "", []specs.Mount{mnt("/mnt/x", "/vol"), mnt("/n", "/b/rootfs/mnt/x")}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &specs.Spec{Mounts: c.mounts}
			if c.root != "" {
				s.Root = &specs.Root{Path: c.root}
			}
			i := len(c.mounts) - 1
			if c.first {
				i = 0
			}
			if got := UnderEarlierMount(s, "/b", i); got != c.want {
				t.Errorf("UnderEarlierMount = %q, want %q", got, c.want)
			}
		})
	}
	if got := UnderEarlierMount(&specs.Spec{Root: &specs.Root{Path: "rootfs"}}, "/b", 3); got != "" {
		t.Errorf("index out of range: %q", got)
	}
}

// joinedUID and joinedGID are a joined user namespace's maps: they differ,
// as a namespace's may.
var (
	joinedUID = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 300000, Size: 65536}}
	joinedGID = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 400000, Size: 1000}, {ContainerID: 1000, HostID: 5, Size: 1}}
)

func TestJoinedUserns(t *testing.T) {
	const path = "/proc/42/ns/user"
	userns := []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.UserNamespace, Path: path}}
	cases := []struct {
		name   string
		linux  *specs.Linux
		mounts []specs.Mount
		want   string
	}{
		{"idmap option, user namespace by path, no mappings", &specs.Linux{Namespaces: userns}, []specs.Mount{bind("/a"), bind("/v", "idmap")}, path},
		{"ridmap option", &specs.Linux{Namespaces: userns}, []specs.Mount{bind("/v", "rbind", "ridmap")}, path},
		{"no linux section", nil, []specs.Mount{bind("/v", "idmap")}, ""},
		{"a new user namespace (no path)", &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UserNamespace}}}, []specs.Mount{bind("/v", "idmap")}, ""},
		{"no user namespace", &specs.Linux{Namespaces: userns[:1]}, []specs.Mount{bind("/v", "idmap")}, ""},
		{"the container's own mappings are given", &specs.Linux{Namespaces: userns, UIDMappings: callerMap, GIDMappings: callerMap}, []specs.Mount{bind("/v", "idmap")}, ""},
		{"only uidMappings given (runc's to refuse)", &specs.Linux{Namespaces: userns, UIDMappings: callerMap}, []specs.Mount{bind("/v", "idmap")}, ""},
		{"the mount has mappings of its own", &specs.Linux{Namespaces: userns}, []specs.Mount{{Destination: "/v", Type: "bind", Options: []string{"idmap"}, UIDMappings: mountMap, GIDMappings: mountMap}}, ""},
		{"no idmap asked", &specs.Linux{Namespaces: userns}, []specs.Mount{bind("/v", "rbind")}, ""},
		{"idmap on a non-bind mount", &specs.Linux{Namespaces: userns}, []specs.Mount{{Destination: "/t", Type: "tmpfs", Options: []string{"idmap"}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := JoinedUserns(&specs.Spec{Linux: c.linux, Mounts: c.mounts}); got != c.want {
				t.Fatalf("JoinedUserns = %q, want %q", got, c.want)
			}
		})
	}
}

func TestCandidatesJoined(t *testing.T) {
	joined := &Joined{Path: "/proc/42/ns/user", UID: joinedUID, GID: joinedGID}
	type cand struct {
		Index    int
		UID, GID []specs.LinuxIDMapping
		Joined   bool
	}
	cases := []struct {
		name    string
		mounts  []specs.Mount
		caller  []specs.LinuxIDMapping
		joined  *Joined
		want    []cand
		wantErr error
	}{
		{
			name:   "idmap option alone takes the joined namespace's mappings, uid and gid apart",
			mounts: []specs.Mount{bind("/plain"), bind("/v", "idmap"), bind("/r", "rbind", "ridmap")},
			joined: joined,
			want:   []cand{{1, joinedUID, joinedGID, true}, {2, joinedUID, joinedGID, true}},
		},
		{
			name:   "mount-level mappings win over the joined namespace's",
			mounts: []specs.Mount{{Destination: "/v", Type: "bind", Options: []string{"idmap"}, UIDMappings: mountMap, GIDMappings: mountMap}},
			joined: joined,
			want:   []cand{{0, mountMap, mountMap, false}},
		},
		{
			name:   "the container's own mappings win over the joined namespace's",
			mounts: []specs.Mount{bind("/v", "idmap")},
			caller: callerMap,
			joined: joined,
			want:   []cand{{0, callerMap, callerMap, false}},
		},
		{
			name:    "without it the idmap option alone is refused",
			mounts:  []specs.Mount{bind("/v", "idmap")},
			wantErr: ErrNoMappings,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &specs.Spec{Mounts: c.mounts}
			if c.caller != nil {
				s.Linux = &specs.Linux{UIDMappings: c.caller, GIDMappings: c.caller}
			}
			got, err := Candidates(s, nil, c.joined, nil)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Candidates = %+v, %v; want %v", got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var have []cand
			for _, g := range got {
				if !g.Explicit {
					t.Errorf("candidate %d: not explicit", g.Index)
				}
				have = append(have, cand{g.Index, g.UID, g.GID, g.Joined})
			}
			if !reflect.DeepEqual(have, c.want) {
				t.Fatalf("Candidates = %+v, want %+v", have, c.want)
			}
		})
	}
}

// TestNativeModifierJoined: a mount that takes the joined namespace's
// mappings is left as the caller wrote it: runc >= 1.2 reads them from
// the namespace's path (its UserNSPath), which the spec already has.
func TestNativeModifierJoined(t *testing.T) {
	s := &specs.Spec{
		Linux:  &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UserNamespace, Path: "/proc/42/ns/user"}}},
		Mounts: []specs.Mount{bind("/v", "idmap"), bind("/r", "rbind", "ridmap")},
	}
	want := append([]specs.Mount(nil), s.Mounts...)
	cands, err := Candidates(s, nil, &Joined{Path: "/proc/42/ns/user", UID: joinedUID, GID: joinedGID}, nil)
	if err != nil || len(cands) != 2 {
		t.Fatalf("Candidates = %+v, %v; want 2", cands, err)
	}
	if err := (NativeModifier{Candidates: cands}).Modify(s); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Mounts, want) {
		t.Fatalf("mounts after NativeModifier:\n got %+v\nwant %+v", s.Mounts, want)
	}
}
