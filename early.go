package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/netns"
)

// earlyRunc is runc's delete, started by the constructor before the Go
// runtime so that the two overlap (fastpath_linux.c): the wrapper waits for
// it wherever it would run or exec runc, and reads the stamp from the
// container's runc state.json as it was before that runc ran.
type earlyRunc struct {
	pid   int
	state []byte // <root>/<id>/state.json
}

// gatedRunc is runc's create, started by the constructor before the Go
// runtime and waiting at the gate (fastpath_linux.c, "--- create"): its
// --log names a FIFO with no reader (/proc/<our pid>/fd/<gate>), so it
// waits in that open, before it reads config.json. marker is the
// container's in-flight marker, locked, which runc inherited
// (acquireInflight's lock, taken early). The create opens the gate once
// the edited spec is written (runGated) or kills runc (dropGated).
type gatedRunc struct {
	pid     int
	marker  int  // -1 once takeGatedMarker has taken it
	created bool // the constructor made the marker file
	gate    int  // the FIFO, O_PATH
}

// gated is this process's gated runc, if any: a package variable so that
// every way out (dropGated in fail and exec, and main) finds it.
var gated *gatedRunc

// dropGated kills the gated runc, still at the gate, and reaps it, and
// lets go of the marker unless takeGatedMarker took it: a marker file the
// constructor made is removed first, as markers are, under its lock (so it
// names that file still). Idempotent.
func dropGated() {
	g := gated
	if g == nil {
		return
	}
	gated = nil
	_ = unix.Kill(g.pid, unix.SIGKILL)
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(g.pid, &ws, 0, nil); err != unix.EINTR {
			break
		}
	}
	unix.Close(g.gate)
	if g.marker >= 0 {
		path, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", g.marker))
		f := os.NewFile(uintptr(g.marker), path)
		if g.created && filepath.IsAbs(path) && stillNamed(f) {
			_ = os.Remove(path)
		}
		f.Close()
	}
}

// takeGatedMarker returns the gated runc's marker as container id's
// (acquireInflight's result) when the constructor locked the file that
// names now and runc does not have the container. Otherwise it drops the
// gated runc and returns nil: the create locks the marker itself.
func takeGatedMarker(lay layout, root, id string) *os.File {
	g := gated
	if g == nil || g.marker < 0 {
		return nil
	}
	f := os.NewFile(uintptr(g.marker), lay.inflight(root, id))
	g.marker = -1
	if !stillNamed(f) || runcHas(root, id) {
		// Not the file the path names, or runc has the container (a
		// create in between): nothing of it is ours to remove.
		f.Close()
		dropGated()
		return nil
	}
	return f
}

// is reports whether the gated runc is the runtime at path, started
// (its exec done): a runc the constructor found otherwise than runc.Find
// did, or whose exec failed, is not the one to let through.
func (g *gatedRunc) is(path string) bool {
	var exe, want unix.Stat_t
	return unix.Stat(fmt.Sprintf("/proc/%d/exe", g.pid), &exe) == nil && unix.Stat(path, &want) == nil &&
		exe.Dev == want.Dev && exe.Ino == want.Ino
}

// inNetns reports whether the gated runc is in the network namespace nj
// names (the constructor entered it for a runc < 1.3, as runIn would), or
// in ours when nj names none.
func (g *gatedRunc) inNetns(nj netjoin) bool {
	id := func(path string) netns.ID {
		var st unix.Stat_t
		if unix.Stat(path, &st) != nil {
			return netns.ID{}
		}
		return netns.ID{Dev: st.Dev, Ino: st.Ino}
	}
	want := nj.id
	if nj.path == "" {
		want = id("/proc/self/ns/net")
	}
	got := id(fmt.Sprintf("/proc/%d/ns/net", g.pid))
	return got != (netns.ID{}) && got == want
}

// drainWriter writes to w until a write fails, and then takes every write
// without writing: runc's lines keep being read, so runc never waits on a
// full FIFO for a log file that cannot take them (a full disk). err is the
// first failure.
type drainWriter struct {
	w   io.Writer
	err error
}

func (d *drainWriter) Write(p []byte) (int, error) {
	if d.err == nil {
		if _, err := d.w.Write(p); err != nil {
			d.err = err
		}
	}
	return len(p), nil
}
