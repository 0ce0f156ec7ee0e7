package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// update runs fn on the records under an exclusive lock; fn writes what
// it changes itself (records.put, records.remove). A non-empty root
// (Allocate's) makes the state directory if it is missing (only Allocate
// adds records to an empty pool) and is scanned too should the state need
// rebuilding; otherwise a missing directory is an empty pool that nothing
// can change. A version 1 state file is converted first. Damage (a state
// file or record that does not parse, or RecordDir missing while the
// roots file says the pool was in use), found before fn or by fn's reads,
// is rebuilt from Hooks.Scan when set, and fn runs on the rebuilt records;
// fn reads before it writes or calls a hook, so a first run cut short by
// damage has changed nothing.
func (p *Pool) update(root string, fn func(rs *records) error) error {
	if root != "" {
		if err := os.MkdirAll(p.dir, 0o711); err != nil {
			return fmt.Errorf("user namespace pool: %w", err)
		}
	}
	unlock, err := p.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	if unlock != nil {
		defer unlock()
	}
	rs, err := p.load(true)
	if rs != nil {
		rs.unlocked = unlock == nil
	}
	if cause := p.needsRebuild(rs, err); cause != nil {
		if rs, err = p.rebuildState(cause, root); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	err = fn(rs)
	if cause := p.needsRebuild(nil, err); cause != nil && !rs.rebuilt {
		if rs, err = p.rebuildState(cause, root); err != nil {
			return err
		}
		err = fn(rs)
	}
	return err
}

// view runs fn on the records under a shared lock. It converts nothing: a
// version 1 state file is read as it is.
func (p *Pool) view(fn func(rs *records) error) error {
	unlock, err := p.lock(unix.LOCK_SH)
	if err != nil {
		return err
	}
	if unlock != nil {
		defer unlock()
	}
	rs, err := p.load(false)
	if err != nil {
		return err
	}
	return fn(rs)
}

// lock opens the lock file (its own open file description: flock locks
// belong to it, so two calls in one process exclude each other as two
// processes do) and flocks it. A missing state directory is not created:
// unlock is then nil (no lock taken) and load finds an empty pool. A
// shared (read-only) lock never creates the lock file: readers such as
// `pool ls` and `doctor` write nothing. Without a lock file nobody has
// written the state yet, and records (and an older release's state file)
// are only ever replaced by rename, so reading them unlocked sees whole
// files or none. A lock file removed and made again while a call held it
// (an operator clearing a "stale" lock) would let two calls hold "the"
// lock at once: after flock the path must still name the locked file.
func (p *Pool) lock(how int) (unlock func(), err error) {
	path := filepath.Join(p.dir, LockFile)
	flags := unix.O_RDWR | unix.O_CREAT
	if how == unix.LOCK_SH {
		flags = unix.O_RDONLY
	}
	for range 100 {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
		if errors.Is(err, unix.ENOENT) {
			if _, serr := os.Stat(p.dir); errors.Is(serr, os.ErrNotExist) || how == unix.LOCK_SH {
				return nil, nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("user namespace pool lock: %w", &os.PathError{Op: "open", Path: path, Err: err})
		}
		for {
			err = unix.Flock(fd, how)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("user namespace pool lock: %w", &os.PathError{Op: "flock", Path: path, Err: err})
		}
		var held, named unix.Stat_t
		if unix.Fstat(fd, &held) == nil && unix.Stat(path, &named) == nil && held.Dev == named.Dev && held.Ino == named.Ino {
			// Closing the only fd of the description drops the lock.
			return func() { unix.Close(fd) }, nil
		}
		unix.Close(fd) // removed or replaced meanwhile: lock the one there now
	}
	return nil, fmt.Errorf("user namespace pool lock %s keeps being replaced: leave it alone", path)
}

// errStateMissing is load's answer for a missing RecordDir of a pool
// whose roots file shows it was used: the state was lost, not never made.
var errStateMissing = errors.New("record directory missing")

// needsRebuild says why the state must be rebuilt (err, when it is damage
// found while reading, or RecordDir lost), or nil. Without a Scan hook
// nothing is rebuilt: damage is reported and a lost RecordDir is an empty
// pool.
func (p *Pool) needsRebuild(rs *records, err error) error {
	if p.hooks.Scan == nil {
		return nil
	}
	var damaged *damagedError
	if errors.As(err, &damaged) {
		return err
	}
	if err == nil && rs != nil && rs.missing {
		if _, rerr := os.Stat(filepath.Join(p.dir, RootsFile)); rerr == nil {
			return fmt.Errorf("%s: %w though %s lists runc roots", filepath.Join(p.dir, RecordDir), errStateMissing, RootsFile)
		}
	}
	return nil
}

// load reads the state: RecordDir's names, or a version 1 state file left
// by an earlier release. Under the exclusive lock (convert) that file is
// converted (RecordDir made to hold its records, then the file removed:
// a crash in between converts again, the same way); a reader reads it
// as it is. The state file wins over RecordDir while it exists: only an
// older release (after a downgrade) writes it.
func (p *Pool) load(convert bool) (*records, error) {
	path := filepath.Join(p.dir, StateFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return readRecordDir(p.dir, convert)
	}
	if err != nil {
		return nil, fmt.Errorf("user namespace pool: %w", err)
	}
	st, err := parseState(data)
	if err != nil {
		return nil, &damagedError{path, err}
	}
	if !convert {
		return &records{dir: filepath.Join(p.dir, RecordDir), legacy: st}, nil
	}
	if err := replaceAll(p.dir, st.Allocations); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("user namespace pool: %w", err)
	}
	// The earlier release's temporary files, left by a crash during one
	// of its writes: nothing writes or reads them any more.
	for _, name := range []string{StateFile + ".tmp", RootsFile + ".tmp"} {
		if err := os.Remove(filepath.Join(p.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("user namespace pool: %w", err)
		}
	}
	return readRecordDir(p.dir, true)
}
