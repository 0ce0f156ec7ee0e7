package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/procfs"
	"github.com/runc-userns/runc-userns/nsjoin"
	"github.com/runc-userns/runc-userns/pool"
)

// InflightRecord is a marker's content: the claim a rebuild of a lost pool
// state needs for a container runc does not have yet.
type InflightRecord struct {
	Owner  string `json:"owner"`
	HostID uint32 `json:"hostID"`
	Size   uint32 `json:"size"`
	Root   string `json:"root"`
	Member string `json:"member"`
}

// inflightWait bounds how long a create waits for a marker that someone
// else holds: a reclaim or pool gc looks at one for microseconds, a
// create of the same container holds it for as long as runc create runs.
// (A variable for the tests.)
var inflightWait = 500 * time.Millisecond

// deleteWait bounds how long a delete that found no state.json waits for
// the container's marker to be let go of (HoldForRelease).
var deleteWait = 2 * time.Second

// AcquireInflight locks container id's marker exclusively, on a
// close-on-exec descriptor above every fd open now (see InheritMarker). It
// fails with ErrRuncHas when runc has the container, and with an error
// naming the marker when another create of it holds the lock
// (lockInflight).
func (l Layout) AcquireInflight(root, id string) (*os.File, error) {
	f, err := l.lockInflight(root, id, inflightWait)
	if errors.Is(err, ErrMarkerBusy) {
		return nil, fmt.Errorf("another create of this container is running, or a delete of it is releasing what it held (its in-flight marker %s is locked): nothing was changed; wait for that to end, or delete the container", l.Inflight(root, id))
	}
	if err != nil {
		return nil, err
	}
	// Above every fd open now: the caller's fds, which --preserve-fds
	// hands to the container, are all below it, so a gap among them can
	// never make the marker one of them.
	nfd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, highestFD()+1)
	f.Close() // the lock stays: it belongs to the open file description
	if err != nil {
		return nil, fmt.Errorf("in-flight marker %s: dup: %w", l.Inflight(root, id), err)
	}
	return os.NewFile(uintptr(nfd), l.Inflight(root, id)), nil
}

// InheritMarker makes the create's marker descriptor inheritable: called
// just before runc starts, so that runc and its init hold the lock (see
// the package doc) and no helper the create ran before them did.
func InheritMarker(f *os.File) error {
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0); err != nil {
		return fmt.Errorf("in-flight marker %s: clear close-on-exec: %w", f.Name(), err)
	}
	return nil
}

// lockInflight creates if need be and locks container id's marker
// exclusively (close-on-exec), retrying for up to wait while someone else
// holds it: a reclaim or pool gc for microseconds, a create for as long as
// runc create runs, a delete while it releases. It fails with ErrRuncHas
// when runc has the container (checked under the lock: a create that held
// it has written state.json before letting go of it), and with an error
// wrapping ErrMarkerBusy after the wait. The path is checked to still name
// the locked file, because pool gc and delete unlink markers while holding
// their lock.
func (l Layout) lockInflight(root, id string, wait time.Duration) (*os.File, error) {
	return l.lockMarker(root, id, wait, true)
}

// LockIdleMarker locks container id's marker for a reclaim, creating it,
// if nobody holds it; it returns ErrMarkerBusy at once if someone does.
// Whether runc has the container is not asked: the reclaim has found it
// dead.
func (l Layout) LockIdleMarker(root, id string) (*os.File, error) {
	return l.lockMarker(root, id, 0, false)
}

// lockMarker is lockInflight; with askRunc false, without ErrRuncHas.
func (l Layout) lockMarker(root, id string, wait time.Duration, askRunc bool) (*os.File, error) {
	if err := os.MkdirAll(l.InflightDir(), 0o700); err != nil {
		return nil, fmt.Errorf("in-flight marker: %w", err)
	}
	path := l.Inflight(root, id)
	deadline := time.Now().Add(wait)
	for range 1000 {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("in-flight marker: %w", &os.PathError{Op: "open", Path: path, Err: err})
		}
		f := os.NewFile(uintptr(fd), path)
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil {
			f.Close()
			if askRunc && RuncHas(root, id) {
				return nil, ErrRuncHas // its created init holds the marker
			}
			if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
				return nil, fmt.Errorf("in-flight marker: %w", &os.PathError{Op: "flock", Path: path, Err: err})
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%w: %s", ErrMarkerBusy, path)
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		if !StillNamed(f) {
			f.Close() // unlinked by pool gc or a delete between open and flock: again
			continue
		}
		if askRunc && RuncHas(root, id) {
			f.Close()
			return nil, ErrRuncHas
		}
		return f, nil
	}
	return nil, fmt.Errorf("in-flight marker %s keeps being replaced", path)
}

// StillNamed reports whether f's path still names the file f is: markers
// are unlinked while locked (pool gc, a delete), so a lock taken on a file
// opened before that locks nothing anyone else looks at.
func StillNamed(f *os.File) bool {
	held, err1 := f.Stat()
	named, err2 := os.Lstat(f.Name())
	return err1 == nil && err2 == nil && os.SameFile(held, named)
}

// RuncHas reports whether runc root has container id (in doubt, yes).
func RuncHas(root, id string) bool {
	_, err := os.Lstat(filepath.Join(root, id, "state.json"))
	return !errors.Is(err, os.ErrNotExist)
}

// HoldForRelease locks container id's marker for a delete that found no
// state.json, and holds it while the delete releases what the container
// held (release unlinks it last, while it is held, and the caller closes
// it after): a create of the same ID waits meanwhile instead of allocating
// what is being released. What a create still in flight has taken is its
// own until runc has the container or the create has undone it, so this
// waits up to deleteWait for the marker (a created container's init,
// killed by runc delete, lets go of it as it exits). It fails, and nothing
// may be released, when someone holds it past the wait or runc has the
// container. Without a marker directory (no create ever ran with this
// state dir: a delete of a container the wrapper never saw) it makes
// nothing and returns a nil file.
func (l Layout) HoldForRelease(root, id string) (*os.File, error) {
	errAgain := fmt.Errorf("%w again (a create of the same ID ran meanwhile): nothing was released; delete it again", ErrRuncHas)
	if _, err := os.Lstat(l.InflightDir()); errors.Is(err, os.ErrNotExist) {
		if RuncHas(root, id) {
			return nil, errAgain
		}
		return nil, nil
	}
	f, err := l.lockInflight(root, id, deleteWait)
	switch {
	case errors.Is(err, ErrRuncHas):
		return nil, errAgain
	case errors.Is(err, ErrMarkerBusy):
		return nil, fmt.Errorf("a create or another delete of it is still running (its in-flight marker %s is locked: %w): nothing was released; delete it again once that has ended", l.Inflight(root, id), ErrMarkerBusy)
	}
	return f, err
}

// AwaitCreate waits up to wait for a create of container id that holds
// its marker to end: runc has the container then, or nobody holds the
// marker (the create failed, or let go of it). A runc create whose
// wrapper was killed goes on alone, and its caller, told the create
// failed, deletes at once (containerd's shim does): such a delete finds
// nothing yet (HoldForRelease fails), and waits here to delete what the
// create makes. It reports whether the create ended.
func (l Layout) AwaitCreate(root, id string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if RuncHas(root, id) || !InflightBusy(l.Inflight(root, id)) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WriteInflight records the claim in the marker (under the pool's lock:
// it is the pool's Claim hook).
func WriteInflight(path string, rec InflightRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("in-flight marker: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("in-flight marker %s: %w", path, err)
	}
	return nil
}

// InflightBusy reports whether a create still holds the marker at path.
// Any doubt (an error other than a missing marker) counts as busy: the
// answer decides whether a range may be given to another pod.
func InflightBusy(path string) bool {
	f, ok := tryLockStale(path)
	if f != nil {
		f.Close()
	}
	return !ok
}

// tryLockStale opens and exclusively locks the marker at path without
// waiting. ok is true when no create holds it (f is then the locked file,
// or nil when there is no marker).
func tryLockStale(path string) (f *os.File, ok bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	f = os.NewFile(uintptr(fd), path)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// RemoveInflight removes container id's marker; a missing one is fine.
func (l Layout) RemoveInflight(root, id string) error {
	if err := os.Remove(l.Inflight(root, id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove in-flight marker: %w", err)
	}
	return nil
}

// BusyInflightClaims returns the claims of creates still in flight, for a
// rebuild of the pool state.
func (l Layout) BusyInflightClaims() ([]pool.Allocation, error) {
	entries, err := os.ReadDir(l.InflightDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []pool.Allocation
	for _, e := range entries {
		path := filepath.Join(l.InflightDir(), e.Name())
		if !InflightBusy(path) {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			// Locked before its allocation: it allocates only under the
			// pool's lock, which the rebuild holds, so it has no range yet.
			continue
		}
		var rec InflightRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.Owner == "" || rec.Size == 0 || !filepath.IsAbs(rec.Root) {
			return nil, fmt.Errorf("in-flight marker %s of a running create is unreadable (%q): wait for the create to end, then retry", path, truncate(data, 80))
		}
		out = append(out, pool.Allocation{Owner: rec.Owner, HostID: rec.HostID, Size: rec.Size, Root: filepath.Clean(rec.Root), Members: []string{rec.Member}})
	}
	return out, nil
}

// SweepInflight removes the markers nobody holds whose container runc
// does not have: left by creates killed before runc ran, or by containers
// deleted with plain runc. Each is removed while locked, so a create that
// opened it just before finds it replaced and opens a new one.
func (l Layout) SweepInflight() (int, error) {
	entries, err := os.ReadDir(l.InflightDir())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		path := filepath.Join(l.InflightDir(), e.Name())
		f, ok := tryLockStale(path)
		if !ok || f == nil {
			continue
		}
		// Unlinked and made again between the open and the lock: the new
		// one is a create's (or a delete's), not this sweep's to judge.
		if !StillNamed(f) {
			f.Close()
			continue
		}
		var rec InflightRecord
		data, err := io.ReadAll(f)
		// Nobody holds it. Empty (no claim), or content no create writes
		// (only a locked marker's claim is ever read): stale. A claim of a
		// container runc has stays until its delete.
		stale := err == nil
		if err == nil && len(data) > 0 && json.Unmarshal(data, &rec) == nil && filepath.IsAbs(rec.Root) && oci.ValidateID(rec.Member) == nil {
			_, serr := os.Stat(filepath.Join(rec.Root, rec.Member, "state.json"))
			stale = errors.Is(serr, os.ErrNotExist)
		}
		if stale {
			// A create killed while runc ran may have left the pins of a
			// container:<ID> target's namespaces (which keep them alive)
			// and staging mounts. For a container runc has they are gone
			// already (dropped once runc create returned), so this is
			// harmless then; the directories stay for its delete.
			// The marker goes only once they are gone: it is what leads a
			// later gc to them.
			var cerr error
			if dir, ok := l.markerContainerDir(e.Name()); ok {
				cerr = errors.Join(nsjoin.Release(dir), DetachStaged(dir, true))
			}
			if cerr != nil {
				errs = append(errs, fmt.Errorf("in-flight marker %s: what its create left: %w", path, cerr))
			} else if os.Remove(path) == nil {
				n++
			}
		}
		f.Close()
	}
	return n, errors.Join(errs...)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// ProcessAlive reports whether pid is the process that started at start
// (clock ticks since boot, /proc/<pid>/stat field 22, as runc records
// init_process_start) and is not a zombie.
func ProcessAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true // in doubt: alive
	}
	st, err := procfs.ParseStat(data)
	if err != nil {
		return true // in doubt: alive
	}
	return !st.Exited() && st.StartTime == start
}

// highestFD is the highest file descriptor open in the wrapper (2 if
// /proc cannot tell).
func highestFD() int {
	max := 2
	list, _ := os.ReadDir("/proc/self/fd")
	for _, e := range list {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > max {
			max = n
		}
	}
	return max
}
