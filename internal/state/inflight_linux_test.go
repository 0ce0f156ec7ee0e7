package state

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/mounttest"
	"github.com/runc-userns/runc-userns/internal/procfs"
)

// inflightEnv: a state dir and a runc root, with container id's state.json
// there or not.
func inflightEnv(t *testing.T, id string, runcHasIt bool) (Layout, string) {
	t.Helper()
	lay, root := Layout(t.TempDir()), t.TempDir()
	if runcHasIt {
		if err := os.MkdirAll(filepath.Join(root, id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, id, "state.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return lay, root
}

func shortWaits(t *testing.T) {
	t.Helper()
	iw, dw := inflightWait, deleteWait
	inflightWait, deleteWait = 30*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { inflightWait, deleteWait = iw, dw })
}

func TestAcquireInflight(t *testing.T) {
	shortWaits(t)
	tests := []struct {
		name      string
		runcHasIt bool
		held      bool // another create holds the marker
		want      string
	}{
		{name: "free", want: ""},
		{name: "another create holds it", held: true, want: "another create of this container is running"},
		{name: "runc has it", runcHasIt: true, want: ErrRuncHas.Error()},
		{name: "runc has it and its init holds the marker", runcHasIt: true, held: true, want: ErrRuncHas.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay, root := inflightEnv(t, "c1", tt.runcHasIt)
			if tt.held {
				// Taken before state.json exists, as by the create that made it.
				other, err := lay.AcquireInflight(t.TempDir(), "c1")
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				// The same marker path: markers are named by root too.
				if err := os.Rename(other.Name(), lay.Inflight(root, "c1")); err != nil {
					t.Fatal(err)
				}
			}
			f, err := lay.AcquireInflight(root, "c1")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("AcquireInflight: %v", err)
				}
				defer f.Close()
				if !InflightBusy(lay.Inflight(root, "c1")) {
					t.Error("the marker is not locked after AcquireInflight")
				}
				// Close-on-exec until runc is about to start: only runc
				// inherits it.
				if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
					t.Errorf("marker fd flags %#x, %v: want FD_CLOEXEC", flags, err)
				}
				if err := InheritMarker(f); err != nil {
					t.Fatal(err)
				}
				if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
					t.Errorf("marker fd flags %#x, %v after InheritMarker: want no FD_CLOEXEC", flags, err)
				}
				if !InflightBusy(lay.Inflight(root, "c1")) {
					t.Error("the marker is not locked after InheritMarker")
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("AcquireInflight: no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AcquireInflight: %v, want %q", err, tt.want)
			}
			if tt.runcHasIt != errors.Is(err, ErrRuncHas) {
				t.Errorf("errors.Is(%v, ErrRuncHas) = %v", err, !tt.runcHasIt)
			}
		})
	}
}

// The marker's lock is what a later create and a reclaim see; once the
// holder lets go, the next create gets it.
func TestAcquireInflightAfterRelease(t *testing.T) {
	shortWaits(t)
	lay, root := inflightEnv(t, "c1", false)
	first, err := lay.AcquireInflight(root, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lay.AcquireInflight(root, "c1"); err == nil {
		t.Fatal("a second create got the marker of one in flight")
	}
	first.Close()
	second, err := lay.AcquireInflight(root, "c1")
	if err != nil {
		t.Fatalf("after the first create ended: %v", err)
	}
	second.Close()
}

func TestHoldForRelease(t *testing.T) {
	shortWaits(t)
	tests := []struct {
		name      string
		held      time.Duration // how long another holder keeps the marker; <0: never taken
		runcHasIt bool
		wantErr   bool
		sentinel  error // what the error wraps, for delete's AwaitCreate
	}{
		{name: "no marker directory: nothing made, nothing held", held: -2},
		{name: "no marker", held: -1},
		{name: "marker nobody holds", held: 0},
		{name: "an init that lets go within the wait", held: 10 * time.Millisecond},
		{name: "a create still in flight", held: time.Hour, wantErr: true, sentinel: ErrMarkerBusy},
		{name: "runc has it", held: -1, runcHasIt: true, wantErr: true, sentinel: ErrRuncHas},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay, root := inflightEnv(t, "c1", tt.runcHasIt)
			if tt.held == -1 {
				if err := os.MkdirAll(lay.InflightDir(), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if tt.held >= 0 {
				// Taken first, with no state.json, as a create's is.
				f, err := lay.AcquireInflight(root, "c1")
				if err != nil && !(tt.runcHasIt && errors.Is(err, ErrRuncHas)) {
					t.Fatal(err)
				}
				if f != nil {
					if tt.held == 0 {
						f.Close()
					} else {
						timer := time.AfterFunc(tt.held, func() { f.Close() })
						defer func() {
							if timer.Stop() {
								f.Close()
							}
						}()
					}
				}
			}
			held, err := lay.HoldForRelease(root, "c1")
			if (err != nil) != tt.wantErr {
				t.Fatalf("HoldForRelease: %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "nothing was released") {
					t.Errorf("HoldForRelease: %v: does not say nothing was released", err)
				}
				if !errors.Is(err, tt.sentinel) {
					t.Errorf("HoldForRelease: %v: does not wrap %v", err, tt.sentinel)
				}
				return
			}
			if tt.held == -2 {
				if held != nil {
					t.Fatalf("HoldForRelease held %s", held.Name())
				}
				if _, err := os.Lstat(lay.InflightDir()); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("HoldForRelease made %s: %v", lay.InflightDir(), err)
				}
				return
			}
			// Held: a create of the same ID waits, then gives up.
			defer held.Close()
			if f, err := lay.AcquireInflight(root, "c1"); err == nil || !strings.Contains(err.Error(), "another create of this container is running") {
				if f != nil {
					f.Close()
				}
				t.Fatalf("a create while the release holds the marker: %v, want it refused", err)
			}
		})
	}
}

func TestMarkerContainerDir(t *testing.T) {
	lay := Layout("/s")
	root, id := "/run/containerd/runc/k8s.io", "a-b_c.1"
	marker := filepath.Base(lay.Inflight(root, id))
	if got, ok := lay.markerContainerDir(marker); !ok || got != lay.ContainerDir(root, id) {
		t.Fatalf("markerContainerDir(%q) = %q, %v; want %q", marker, got, ok, lay.ContainerDir(root, id))
	}
	for _, bad := range []string{"", "abc", "0123456789ab", "0123456789ab-", "0123456789AB-x", "0123456789a-x", "0123456789abc-x", "0123456789ab-..", "0123456789ab-a/b", ".NAME.tmp-123"} {
		if got, ok := lay.markerContainerDir(bad); ok {
			t.Errorf("markerContainerDir(%q) = %q, want none", bad, got)
		}
	}
}

func TestSweepInflight(t *testing.T) {
	lay, root := inflightEnv(t, "live", true) // runc has "live"
	write := func(id, content string) {
		t.Helper()
		if err := os.MkdirAll(lay.InflightDir(), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(lay.Inflight(root, id), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(id string) string {
		return `{"owner":"pod","hostID":1,"size":65536,"root":"` + root + `","member":"` + id + `"}`
	}
	write("empty", "")
	write("garbage", "\x00{not json")
	write("relative", `{"owner":"pod","hostID":1,"size":65536,"root":"rel","member":"x"}`)
	write("gone", claim("gone"))
	write("live", claim("live"))
	busy, err := lay.AcquireInflight(root, "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	n, err := lay.SweepInflight()
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("SweepInflight removed %d markers, want 4", n)
	}
	for id, kept := range map[string]bool{"empty": false, "garbage": false, "relative": false, "gone": false, "live": true, "busy": true} {
		_, err := os.Lstat(lay.Inflight(root, id))
		if got := err == nil; got != kept {
			t.Errorf("marker of %s kept: %v, want %v", id, got, kept)
		}
	}
}

// TestSweepInflightDetaches: a create of this layout killed before its
// tail left its container directory mounted (stageContainerDir), the
// rootfs below it: the sweep detaches both before it drops the marker.
func TestSweepInflightDetaches(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: bind mounts")
	}
	lay, root := inflightEnv(t, "gone", false)
	if err := os.MkdirAll(lay.InflightDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	claim := `{"owner":"pod","hostID":1,"size":65536,"root":"` + root + `","member":"gone"}`
	if err := os.WriteFile(lay.Inflight(root, "gone"), []byte(claim), 0o600); err != nil {
		t.Fatal(err)
	}
	cdir := lay.ContainerDir(root, "gone")
	if err := os.MkdirAll(lay.StagedRootfs(root, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mounttest.UnmountBelow(t, cdir) })
	if err := idmap.StageDir(cdir); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(t.TempDir(), lay.StagedRootfs(root, "gone"), "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if n := mounttest.Below(t, cdir); n != 2 {
		t.Fatalf("%d mounts below %s before the sweep, want 2", n, cdir)
	}
	if n, err := lay.SweepInflight(); err != nil || n != 1 {
		t.Fatalf("SweepInflight = %d, %v; want 1, nil", n, err)
	}
	if n := mounttest.Below(t, cdir); n != 0 {
		t.Errorf("%d mounts below %s after the sweep, want none", n, cdir)
	}
}

// TestProcessAlive: the check behind a dead container's reclaim. A PID is
// alive only while it names the process that started at the recorded tick
// and has not exited; a zombie awaiting its reaper is dead.
func TestProcessAlive(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	pid := cmd.Process.Pid
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := procfs.ParseStat(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		pid   int
		start uint64
		want  bool
	}{
		{"running, its start time", pid, st.StartTime, true},
		{"running, another start time (a reused PID)", pid, st.StartTime + 1, false},
		{"PID 0", 0, st.StartTime, false},
		{"negative PID", -1, st.StartTime, false},
		{"no such PID", 1 << 30, st.StartTime, false},
	} {
		if got := ProcessAlive(c.pid, c.start); got != c.want {
			t.Errorf("%s: ProcessAlive(%d, %d) = %v, want %v", c.name, c.pid, c.start, got, c.want)
		}
	}
	// Killed and not reaped: a zombie, dead though its PID stays.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(pid, st.StartTime) {
		t.Errorf("ProcessAlive(%d) of a zombie = true, want false", pid)
	}
	reaped = true
	_ = cmd.Wait()
	if ProcessAlive(pid, st.StartTime) {
		t.Errorf("ProcessAlive(%d) of a reaped process = true, want false", pid)
	}
}

// AwaitCreate: a delete waits for a create that holds the marker, until
// runc has the container or nobody holds the marker, and no longer than
// its wait.
func TestAwaitCreate(t *testing.T) {
	tests := []struct {
		name      string
		held      time.Duration // how long the create holds the marker; 0: not at all
		runcHasIt bool
		want      bool
	}{
		{name: "no create", want: true},
		{name: "a create that ends within the wait", held: 30 * time.Millisecond, want: true},
		{name: "a create that outlasts the wait", held: time.Hour, want: false},
		{name: "runc has it (its init holds the marker)", held: time.Hour, runcHasIt: true, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay, root := inflightEnv(t, "c1", false)
			if tt.held > 0 {
				f, err := lay.AcquireInflight(root, "c1")
				if err != nil {
					t.Fatal(err)
				}
				timer := time.AfterFunc(tt.held, func() { f.Close() })
				defer func() {
					if timer.Stop() {
						f.Close()
					}
				}()
			}
			if tt.runcHasIt {
				if err := os.MkdirAll(filepath.Join(root, "c1"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "c1", "state.json"), []byte("{}"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// Long enough for a loaded machine where it ends in time;
			// short where it must give up.
			wait := 10 * time.Second
			if !tt.want {
				wait = 300 * time.Millisecond
			}
			if got := lay.AwaitCreate(root, "c1", wait); got != tt.want {
				t.Errorf("AwaitCreate = %v, want %v", got, tt.want)
			}
		})
	}
}
