package nsjoin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/internal/procfs"
)

// requireRoot gates the tests that pin namespaces (bind mounts) and create
// PID and user namespaces.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates PID and user namespaces and bind-mounts them")
	}
}

// proc is a `sleep` standing in for a container's init.
type proc struct {
	cmd   *exec.Cmd
	pid   int
	start uint64
}

// spawn starts `sleep 600` with the clone flags (and, with CLONE_NEWUSER,
// a pod-like mapping); it is killed and reaped when the test ends.
func spawn(t *testing.T, flags uintptr) *proc {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL}
	if flags&unix.CLONE_NEWUSER != 0 {
		m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 3221225472, Size: 65536}}
		cmd.SysProcAttr.UidMappings, cmd.SysProcAttr.GidMappings = m, m
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid}
	t.Cleanup(p.reap)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := procfs.ParseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	p.start = ps.StartTime
	return p
}

func (p *proc) reap() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// writeState records in l the state of container id of root as runc's
// state.json would give it, with the given pod and namespace types.
func writeState(t *testing.T, l *fakeLookup, root, id string, pid int, start uint64, pod Pod, nsTypes ...string) *State {
	t.Helper()
	var ann map[string]string
	if pod.InPod() {
		ann = map[string]string{"sandbox": pod.ID}
	}
	return l.set(root, id, pid, start, pod, ann, nsTypes...)
}

func sameInode(t *testing.T, a, b string) bool {
	t.Helper()
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(b, &sb); err != nil {
		t.Fatal(err)
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

func isMount(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

// checkReleased: no pin left in pinDir, as a file or a mount.
func checkReleased(t *testing.T, pinDir string) {
	t.Helper()
	for _, p := range []string{PIDNSPin(pinDir), UsernsPin(pinDir)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", p, err)
		}
		if isMount(t, p) {
			t.Errorf("%s still mounted", p)
		}
	}
}

func opts(root, target, pinDir string) Options {
	return Options{Root: root, ID: "debug", Target: target, PinDir: pinDir}
}

func TestResolve(t *testing.T) {
	requireRoot(t)
	t.Run("PID namespace in our user namespace", testResolveOurUserns)
	t.Run("PID namespace of another user namespace: pinned with it, maps read", testResolveOtherUserns)
	t.Run("a designated pin of the target's user namespace is used, after an inode check", testResolveDesignatedPin)
	t.Run("a pin left by a killed create is replaced", testResolveStalePin)
}

func testResolveOurUserns(t *testing.T) {
	root, pinDir := t.TempDir(), filepath.Join(t.TempDir(), "debug")
	l := newLookup()
	p := spawn(t, unix.CLONE_NEWPID)
	writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWNS", "NEWPID")
	tg, err := Resolve(l, opts(root, "target", pinDir))
	if err != nil {
		t.Fatal(err)
	}
	defer Release(pinDir)
	if tg.PID != p.pid || tg.ID != "target" || tg.Userns != "" || tg.UIDMap != nil {
		t.Errorf("Resolve = %+v", tg)
	}
	if tg.PIDNS != PIDNSPin(pinDir) || !isMount(t, tg.PIDNS) {
		t.Fatalf("PIDNS %s is not a pin in %s", tg.PIDNS, pinDir)
	}
	if !sameInode(t, tg.PIDNS, fmt.Sprintf("/proc/%d/ns/pid", p.pid)) {
		t.Error("the pin is not the target's PID namespace")
	}
	if st, err := os.Stat(pinDir); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("pin dir: %v, %v", st, err)
	}
	// The pin outlives the process: it names the dead namespace, never
	// a namespace of whatever takes the PID next.
	ino := func() uint64 {
		var st unix.Stat_t
		if err := unix.Stat(tg.PIDNS, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	before := ino()
	p.reap()
	if after := ino(); after != before {
		t.Errorf("the pin changed from inode %d to %d when the target died", before, after)
	}
	if err := Release(pinDir); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, pinDir)
	if err := Release(pinDir); err != nil {
		t.Errorf("second Release: %v", err)
	}
}

func testResolveOtherUserns(t *testing.T) {
	root, pinDir := t.TempDir(), filepath.Join(t.TempDir(), "debug")
	l := newLookup()
	p := spawn(t, unix.CLONE_NEWUSER|unix.CLONE_NEWPID)
	writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWUSER", "NEWPID")
	tg, err := Resolve(l, opts(root, "target", pinDir))
	if err != nil {
		t.Fatal(err)
	}
	defer Release(pinDir)
	if tg.Userns != UsernsPin(pinDir) || !isMount(t, tg.Userns) {
		t.Fatalf("Userns = %q, want a pin at %s", tg.Userns, UsernsPin(pinDir))
	}
	if !sameInode(t, tg.Userns, fmt.Sprintf("/proc/%d/ns/user", p.pid)) {
		t.Error("the user namespace pin is not the target's")
	}
	for name, m := range map[string][]byte{"uid_map": tg.UIDMap, "gid_map": tg.GIDMap} {
		if f := strings.Fields(string(m)); len(f) != 3 || f[0] != "0" || f[1] != "3221225472" || f[2] != "65536" {
			t.Errorf("%s = %q", name, m)
		}
	}
	if err := Release(pinDir); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, pinDir)
}

func testResolveDesignatedPin(t *testing.T) {
	root, pinDir := t.TempDir(), filepath.Join(t.TempDir(), "debug")
	l := newLookup()
	p := spawn(t, unix.CLONE_NEWUSER|unix.CLONE_NEWPID)
	writeState(t, l, root, "target", p.pid, p.start, Pod{ID: "pod"}, "NEWUSER", "NEWPID")
	podPin := filepath.Join(t.TempDir(), "userns")
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	err = pin(f, podPin)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer unpin(podPin)
	var asked []string
	o := opts(root, "target", pinDir)
	o.Pod = Pod{ID: "pod"}
	l.pins = func(id string, ann map[string]string) []string {
		asked = append(asked, id, ann["sandbox"])
		// Not namespaces, another namespace, then the right one.
		return []string{"", filepath.Join(pinDir, "missing"), "/proc/self/ns/user", podPin}
	}
	tg, err := Resolve(l, o)
	if err != nil {
		t.Fatal(err)
	}
	defer Release(pinDir)
	if tg.Userns != podPin {
		t.Errorf("Userns = %q, want the designated %s", tg.Userns, podPin)
	}
	if strings.Join(asked, ",") != "target,pod" {
		t.Errorf("UsernsPins called with %q", asked)
	}
	if _, err := os.Lstat(UsernsPin(pinDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a second pin of the user namespace was made: %v", err)
	}
	if tg.Pod != (Pod{ID: "pod"}) {
		t.Errorf("Pod = %+v", tg.Pod)
	}
}

func testResolveStalePin(t *testing.T) {
	root, pinDir := t.TempDir(), t.TempDir()
	l := newLookup()
	p := spawn(t, unix.CLONE_NEWPID)
	writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWPID")
	if err := os.WriteFile(PIDNSPin(pinDir), []byte("stale"), 0o444); err != nil {
		t.Fatal(err)
	}
	tg, err := Resolve(l, opts(root, "target", pinDir))
	if err != nil {
		t.Fatal(err)
	}
	defer Release(pinDir)
	if !sameInode(t, tg.PIDNS, fmt.Sprintf("/proc/%d/ns/pid", p.pid)) {
		t.Error("the pin is not the target's PID namespace")
	}
}

// refusalCase is a case of TestResolveRefusals.
type refusalCase struct {
	name string
	// setup returns the options; it may start processes and write state.
	setup   func(t *testing.T, l *fakeLookup, root, pinDir string) Options
	is      error
	mention []string
}

// inPod is the target's pod in the refusals of another pod.
var inPod = Pod{ID: "pod-a"}

// refusals are the references Resolve refuses, each with its sentinel and
// what its message says.
var refusals = []refusalCase{
	{
		name:    "invalid target ID",
		setup:   func(t *testing.T, l *fakeLookup, root, pinDir string) Options { return opts(root, "../x", pinDir) },
		is:      ErrBadRef,
		mention: []string{"container ../x"},
	},
	{
		name:    "itself",
		setup:   func(t *testing.T, l *fakeLookup, root, pinDir string) Options { return opts(root, "debug", pinDir) },
		is:      ErrSelf,
		mention: []string{"container debug refers to its own PID namespace (container:debug)"},
	},
	{
		name:    "not found",
		setup:   func(t *testing.T, l *fakeLookup, root, pinDir string) Options { return opts(root, "nosuch", pinDir) },
		is:      ErrNotFound,
		mention: []string{"cannot join the PID namespace of container nosuch: container nosuch does not exist (runc root "},
	},
	{
		name: "another pod",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			p := spawn(t, unix.CLONE_NEWPID)
			writeState(t, l, root, "target", p.pid, p.start, inPod, "NEWPID")
			o := opts(root, "target", pinDir)
			o.Pod = Pod{ID: "pod-b"}
			return o
		},
		is:      ErrOtherPod,
		mention: []string{"container debug is in pod pod-b and container target in pod pod-a"},
	},
	{
		name: "a pod member and a container of no pod",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			p := spawn(t, unix.CLONE_NEWPID)
			writeState(t, l, root, "target", p.pid, p.start, inPod, "NEWPID")
			return opts(root, "target", pinDir)
		},
		is:      ErrOtherPod,
		mention: []string{"container debug belongs to no pod but container target is in pod pod-a"},
	},
	{
		name: "host PID namespace by config",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			p := spawn(t, 0)
			writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWNS", "NEWNET")
			return opts(root, "target", pinDir)
		},
		is:      ErrHostPID,
		mention: []string{"container target runs in the host's PID namespace"},
	},
	{
		name: "host PID namespace in fact",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			p := spawn(t, 0)
			writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWPID")
			return opts(root, "target", pinDir)
		},
		is:      ErrHostPID,
		mention: []string{"container target runs in the host's PID namespace"},
	},
	{
		name: "created, not started",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			p := spawn(t, unix.CLONE_NEWPID)
			writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWPID").Created = true // runc's exec.fifo is there
			return opts(root, "target", pinDir)
		},
		is:      ErrNotRunning,
		mention: []string{"container target is created but not running"},
	},
	{
		name: "PID reused: another start time",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			p := spawn(t, unix.CLONE_NEWPID)
			writeState(t, l, root, "target", p.pid, p.start-1, Pod{}, "NEWPID")
			return opts(root, "target", pinDir)
		},
		is:      ErrNotRunning,
		mention: []string{"container target is not running: PID", "recorded in its runc state now belongs to another process"},
	},
	{
		name: "exited and reaped",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			p := spawn(t, unix.CLONE_NEWPID)
			writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWPID")
			p.reap()
			return opts(root, "target", pinDir)
		},
		is:      ErrNotRunning,
		mention: []string{"container target is not running"},
	},
	{
		name: "exited, a zombie",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			p := spawn(t, unix.CLONE_NEWPID)
			writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWPID")
			_ = p.cmd.Process.Kill()
			waitState(t, p.pid, 'Z')
			return opts(root, "target", pinDir)
		},
		is:      ErrNotRunning,
		mention: []string{"container target is not running: its init process", "has exited (state Z)"},
	},
	{
		name: "no init recorded",
		setup: func(t *testing.T, l *fakeLookup, root, pinDir string) Options {
			writeState(t, l, root, "target", 0, 0, Pod{}, "NEWPID")
			return opts(root, "target", pinDir)
		},
		is:      ErrNotRunning,
		mention: []string{"records no init process"},
	},
}

func TestResolveRefusals(t *testing.T) {
	requireRoot(t)
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			root, pinDir := t.TempDir(), filepath.Join(t.TempDir(), "debug")
			l := newLookup()
			tg, err := Resolve(l, c.setup(t, l, root, pinDir))
			if err == nil {
				Release(pinDir)
				t.Fatalf("Resolve = %+v, want an error", tg)
			}
			if !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", err, c.is)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
			checkReleased(t, pinDir)
		})
	}
}

// TestResolveInitDiesWhileOpening: the init exits (and is reaped, so its
// PID is free for reuse) after its namespaces were opened: the pidfd check
// refuses, nothing is pinned.
func TestResolveInitDiesWhileOpening(t *testing.T) {
	requireRoot(t)
	for _, flags := range []uintptr{unix.CLONE_NEWPID, unix.CLONE_NEWPID | unix.CLONE_NEWUSER} {
		t.Run(fmt.Sprintf("flags %#x", flags), func(t *testing.T) {
			root, pinDir := t.TempDir(), filepath.Join(t.TempDir(), "debug")
			l := newLookup()
			p := spawn(t, flags)
			writeState(t, l, root, "target", p.pid, p.start, Pod{}, "NEWPID")
			called := false
			testHookOpened = func(pid int) {
				called = pid == p.pid
				p.reap()
			}
			defer func() { testHookOpened = nil }()
			tg, err := Resolve(l, opts(root, "target", pinDir))
			if err == nil {
				Release(pinDir)
				t.Fatalf("Resolve = %+v after the init died", tg)
			}
			if !called {
				t.Fatal("the hook did not run")
			}
			if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "exited while its namespaces were being opened") {
				t.Errorf("error %q", err)
			}
			checkReleased(t, pinDir)
		})
	}
}

func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if ps, err := procfs.ParseStat(b); err == nil && ps.State == want {
			return
		}
	}
	t.Fatalf("process %d never reached state %c", pid, want)
}

func TestReleaseOfNothing(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	if err := Release(filepath.Join(dir, "never-made")); err != nil {
		t.Errorf("Release of a missing dir: %v", err)
	}
	if err := os.WriteFile(PIDNSPin(dir), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := Release(dir); err != nil {
		t.Errorf("Release of an unmounted pin file: %v", err)
	}
	checkReleased(t, dir)
}
