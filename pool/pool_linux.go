package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// update runs fn on the state under an exclusive lock and writes the state
// back when fn reports a change. A non-empty root (Allocate's) makes the
// state directory if it is missing (only Allocate adds records to an empty
// pool) and is scanned too should the state need rebuilding; otherwise a
// missing directory is an empty pool that nothing can change. A state file
// that is unreadable, or missing while the roots file says the pool was in
// use, is rebuilt from Hooks.Scan when set.
func (p *Pool) update(root string, fn func(st *state) (changed bool, err error)) error {
	if root != "" {
		if err := os.MkdirAll(p.dir, 0o711); err != nil {
			return fmt.Errorf("user namespace pool: %w", err)
		}
	}
	unlock, err := p.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := p.read()
	rebuilt := false
	if cause := p.needsRebuild(st, err); cause != nil {
		if st, err = p.rebuildState(cause, root); err != nil {
			return err
		}
		rebuilt = true
	}
	if err != nil {
		return err
	}
	changed, err := fn(st)
	if err != nil || !(changed || rebuilt) {
		return err
	}
	data, err := encodeState(st)
	if err != nil {
		return err
	}
	return writeFileAtomic(p.dir, StateFile, data)
}

// view runs fn on the state under a shared lock.
func (p *Pool) view(fn func(st *state) error) error {
	unlock, err := p.lock(unix.LOCK_SH)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := p.read()
	if err != nil {
		return err
	}
	return fn(st)
}

// lock opens the lock file (its own open file description: flock locks
// belong to it, so two calls in one process exclude each other as two
// processes do) and flocks it. A missing state directory is not created:
// the returned unlock is a no-op and read finds an empty pool. A shared
// (read-only) lock never creates the lock file: readers such as
// `pool ls` and `doctor` write nothing. Without a lock file nobody has
// written the state yet, and the state file is only ever replaced by
// rename, so reading it unlocked sees a whole file or none.
func (p *Pool) lock(how int) (unlock func(), err error) {
	path := filepath.Join(p.dir, LockFile)
	flags := unix.O_RDWR | unix.O_CREAT
	if how == unix.LOCK_SH {
		flags = unix.O_RDONLY
	}
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, unix.ENOENT) {
		if _, serr := os.Stat(p.dir); errors.Is(serr, os.ErrNotExist) || how == unix.LOCK_SH {
			return func() {}, nil
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
	// Closing the only fd of the description drops the lock.
	return func() { unix.Close(fd) }, nil
}

// errStateMissing is read's answer for a missing state file of a pool
// whose roots file shows it was used: the state was lost, not never made.
var errStateMissing = errors.New("state file missing")

// needsRebuild says why the state must be rebuilt (read's error, when
// it is a lost or corrupt file and a Scan hook is set), or nil.
func (p *Pool) needsRebuild(st *state, err error) error {
	if p.hooks.Scan == nil {
		return nil
	}
	if errors.Is(err, ErrCorruptState) {
		return err
	}
	if err == nil && st.missing {
		if _, rerr := os.Stat(filepath.Join(p.dir, RootsFile)); rerr == nil {
			return fmt.Errorf("%s: %w though %s lists runc roots", filepath.Join(p.dir, StateFile), errStateMissing, RootsFile)
		}
	}
	return nil
}

// read loads the state file; a missing file is an empty pool.
func (p *Pool) read() (*state, error) {
	path := filepath.Join(p.dir, StateFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &state{Version: stateVersion, SlotSize: p.layout.slot, missing: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("user namespace pool: %w", err)
	}
	st, err := parseState(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (the next create or `runc-userns pool gc` rebuilds it from the live containers)", path, err)
	}
	return st, nil
}

// writeFileAtomic replaces dir/name with data so that a reader, or the
// file after a crash, is either the old content or the new one: write a
// temporary file, fsync it, rename it over. The temporary file's name is
// fixed because only the holder of the exclusive lock writes: one left by a
// crash is truncated by the next writer. The directory is not fsynced (see
// "Crash safety" in doc.go): a lost rename brings back the previous state,
// which is as consistent as the new one.
func writeFileAtomic(dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("user namespace pool: %w", err)
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("user namespace pool: write %s: %w", final, err)
	}
	return nil
}
