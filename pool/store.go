package pool

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// records is the pool as one call sees it under the lock: the names in
// RecordDir, which alone give every record's owner and host ID, and the
// records themselves, read only when the call needs them. For a reader
// that found a version 1 state file not yet converted, legacy stands in
// for the directory.
type records struct {
	dir     string  // RecordDir's path
	entries []entry // one per record file, in readdir order
	missing bool    // no RecordDir and no state file
	rebuilt bool    // rebuilt from Hooks.Scan in this call
	// unlocked: the state directory was missing, so no lock was taken
	// (an empty pool nothing can change; see lock).
	unlocked bool
	legacy   *state // a version 1 state file, read under a shared lock
}

type entry struct {
	name   string
	owner  string
	hostID uint32
}

// damagedError is a state file or record that cannot be trusted as read:
// what a rebuild from Hooks.Scan repairs. It wraps ErrCorruptState.
type damagedError struct {
	path string
	err  error
}

func (e *damagedError) Error() string {
	return fmt.Sprintf("%s: %v (the next create or `runc-userns pool gc` rebuilds it from the live containers)", e.path, e.err)
}

func (e *damagedError) Unwrap() error { return e.err }

// readRecordDir lists RecordDir of stateDir. A name that is not a
// record's is damage. Temporary files are skipped, and removed when clean
// (the caller holds the exclusive lock, so no write is under way). Names
// are checked against each other only as far as the call uses them, which
// keeps a call's cost the readdir's: lookup refuses two records of the
// owner it looks up, read a record that overlaps its own, Allocate's
// bitmap two records of one slot, and all everything.
func readRecordDir(stateDir string, clean bool) (*records, error) {
	rs := &records{dir: filepath.Join(stateDir, RecordDir)}
	f, err := os.Open(rs.dir)
	if errors.Is(err, os.ErrNotExist) {
		rs.missing = true
		return rs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("user namespace pool: %w", err)
	}
	// Readdirnames neither sorts nor stats: the cost is the getdents calls.
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("user namespace pool: %w", err)
	}
	rs.entries = make([]entry, 0, len(names))
	for _, n := range names {
		if isTempName(n) {
			if clean {
				os.Remove(filepath.Join(rs.dir, n))
			}
			continue
		}
		hostID, owner, err := parseRecordName(n)
		if err != nil {
			return nil, &damagedError{filepath.Join(rs.dir, n), fmt.Errorf("%w: %v", ErrCorruptState, err)}
		}
		rs.entries = append(rs.entries, entry{name: n, owner: owner, hostID: hostID})
	}
	return rs, nil
}

// lookup returns owner's entry; a second record of owner is damage.
func (rs *records) lookup(owner string) (entry, bool, error) {
	var found entry
	ok := false
	for _, e := range rs.entries {
		if e.owner != owner {
			continue
		}
		if ok {
			return entry{}, false, twoRecords(rs.dir, found, e)
		}
		found, ok = e, true
	}
	return found, ok, nil
}

func twoRecords(dir string, a, b entry) error {
	return &damagedError{dir, fmt.Errorf("%w: owner %s has two records, %s and %s", ErrCorruptState, a.owner, a.name, b.name)}
}

// lowest is the record with the lowest host ID, if any.
func (rs *records) lowest() (entry, bool) {
	if len(rs.entries) == 0 {
		return entry{}, false
	}
	return slices.MinFunc(rs.entries, func(a, b entry) int { return cmp.Compare(a.hostID, b.hostID) }), true
}

// read loads e's record and checks it against its name and its neighbours:
// the records of a pool share one size (see "On-disk format" in doc.go),
// so no other record may start within one size of this one.
func (rs *records) read(e entry) (Allocation, error) {
	a, err := rs.load(e)
	if err != nil {
		return Allocation{}, err
	}
	for _, o := range rs.entries {
		if o.name != e.name && a.Range().overlaps(Range{HostID: o.hostID, Size: a.Size}) {
			return Allocation{}, &damagedError{rs.dir, fmt.Errorf("%w: owners %s (%s) and %s (from host ID %d) share host IDs", ErrCorruptState, a.Owner, a.Range(), o.owner, o.hostID)}
		}
	}
	return a, nil
}

// load reads and decodes e's record.
func (rs *records) load(e entry) (Allocation, error) {
	path := filepath.Join(rs.dir, e.name)
	data, err := os.ReadFile(path)
	if err != nil {
		return Allocation{}, fmt.Errorf("user namespace pool: %w", err)
	}
	a, err := decodeRecord(e.name, data)
	if err != nil {
		return Allocation{}, &damagedError{path, err}
	}
	return a, nil
}

// get returns owner's record, if it has one.
func (rs *records) get(owner string) (Allocation, bool, error) {
	if rs.legacy != nil {
		if i := rs.legacy.find(owner); i >= 0 {
			return rs.legacy.Allocations[i].clone(), true, nil
		}
		return Allocation{}, false, nil
	}
	e, ok, err := rs.lookup(owner)
	if err != nil || !ok {
		return Allocation{}, false, err
	}
	a, err := rs.read(e)
	return a, err == nil, err
}

// all reads every record, sorted by host ID, and checks them as parseState
// checks a state file: one size for all, no overlap.
func (rs *records) all() ([]Allocation, error) {
	if rs.legacy != nil {
		out := make([]Allocation, len(rs.legacy.Allocations))
		for i, a := range rs.legacy.Allocations {
			out[i] = a.clone()
		}
		return out, nil
	}
	byOwner := slices.SortedFunc(slices.Values(rs.entries), func(a, b entry) int { return cmp.Compare(a.owner, b.owner) })
	for i := 1; i < len(byOwner); i++ {
		if byOwner[i-1].owner == byOwner[i].owner {
			return nil, twoRecords(rs.dir, byOwner[i-1], byOwner[i])
		}
	}
	out := make([]Allocation, 0, len(rs.entries))
	for _, e := range rs.entries {
		a, err := rs.load(e)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && a.Size != out[0].Size {
			return nil, &damagedError{rs.dir, fmt.Errorf("%w: owner %s holds %d IDs and owner %s %d: the records of a pool share one slot size", ErrCorruptState, out[0].Owner, out[0].Size, a.Owner, a.Size)}
		}
		out = append(out, a)
	}
	sortAllocations(out)
	for i := 1; i < len(out); i++ {
		if a, b := out[i-1], out[i]; a.Range().overlaps(b.Range()) {
			return nil, &damagedError{rs.dir, fmt.Errorf("%w: owners %s (%s) and %s (%s) share host IDs", ErrCorruptState, a.Owner, a.Range(), b.Owner, b.Range())}
		}
	}
	return out, nil
}

// put writes a's record: a temporary file renamed over the record, so
// that a reader, or the directory after a process crash, sees the old
// record or the new one. Not fsynced: see "Crash safety" in doc.go.
func (rs *records) put(a Allocation) error {
	data, err := encodeRecord(a)
	if err != nil {
		return err
	}
	name := recordName(a.HostID, a.Owner)
	if rs.missing {
		if err := os.Mkdir(rs.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("user namespace pool: %w", err)
		}
		rs.missing = false
	}
	if err := writeFileAtomic(rs.dir, name, data); err != nil {
		return err
	}
	if !slices.ContainsFunc(rs.entries, func(e entry) bool { return e.name == name }) {
		rs.entries = append(rs.entries, entry{name: name, owner: a.Owner, hostID: a.HostID})
	}
	return nil
}

// remove deletes owner's record; one already gone is success.
func (rs *records) remove(a Allocation) error {
	name := recordName(a.HostID, a.Owner)
	if err := os.Remove(filepath.Join(rs.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("user namespace pool: %w", err)
	}
	rs.entries = slices.DeleteFunc(rs.entries, func(e entry) bool { return e.name == name })
	return nil
}

// replaceAll makes RecordDir hold exactly allocs (a rebuild, or the
// conversion of a version 1 state file): every record is written first,
// then every other file is removed, so that a crash in between leaves
// extra records (a second record of an owner, or of a slot, is damage the
// next call rebuilds again; a stale record wastes a slot until reclaimed)
// and never a live allocation missing.
func replaceAll(stateDir string, allocs []Allocation) error {
	dir := filepath.Join(stateDir, RecordDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("user namespace pool: %w", err)
	}
	keep := make(map[string]bool, len(allocs))
	for _, a := range allocs {
		data, err := encodeRecord(a)
		if err != nil {
			return err
		}
		name := recordName(a.HostID, a.Owner)
		if err := writeFileAtomic(dir, name, data); err != nil {
			return err
		}
		keep[name] = true
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("user namespace pool: %w", err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("user namespace pool: %w", err)
	}
	for _, n := range names {
		if keep[n] {
			continue
		}
		// RemoveAll: whatever was put there, a directory included, goes.
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("user namespace pool: %w", err)
		}
	}
	return nil
}

// writeFileAtomic replaces dir/name with data so that a reader, or the
// file after a crash of the process, is either the old content or the new
// one: write tempName(name), rename it over. The temporary file's name is
// fixed because only the holder of the exclusive lock writes: one left by
// a crash is truncated by the next writer of the same file (or, in
// RecordDir, removed by the next call that takes the exclusive lock).
// Neither file nor directory is fsynced: see "Crash safety" in doc.go.
func writeFileAtomic(dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	tmp := filepath.Join(dir, tempName(name))
	err := os.WriteFile(tmp, data, 0o600)
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("user namespace pool: write %s: %w", final, err)
	}
	return nil
}
