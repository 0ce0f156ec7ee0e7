package pool

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config describes a pool.
type Config struct {
	Ranges   []Range // where slots come from (see ResolveRanges)
	SlotSize uint32  // DefaultSlotSize when 0
	StateDir string  // holds LockFile, RecordDir and RootsFile; created 0711 if missing
}

// Pool allocates slots of its ranges to owners. A Pool holds no state of
// its own between calls: every call locks the state directory, reads the
// records it needs, and writes the ones it changes, so any number of Pools
// in any number of processes may share one state directory.
type Pool struct {
	dir    string
	layout layout // zero for a pool from OpenExisting: it cannot allocate
	now    func() time.Time
	hooks  Hooks
}

// New checks cfg (Validate) and returns its pool. It does no I/O: the state
// directory is created by the first Allocate.
func New(cfg Config) (*Pool, error) {
	if cfg.SlotSize == 0 {
		cfg.SlotSize = DefaultSlotSize
	}
	if err := Validate(cfg.Ranges, cfg.SlotSize); err != nil {
		return nil, err
	}
	p, err := OpenExisting(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	p.layout = newLayout(cfg.Ranges, cfg.SlotSize)
	return p, nil
}

// OpenExisting returns the pool kept in stateDir without knowing its
// ranges: it can list, look up, join, leave and release, but not allocate.
// The delete path and the operator's commands use it, so that a changed or
// broken range configuration never stops a range from being returned.
func OpenExisting(stateDir string) (*Pool, error) {
	if stateDir == "" {
		return nil, errorf(ErrInvalidConfig, "state directory not set: the pool needs a directory for %s and %s", LockFile, RecordDir)
	}
	return &Pool{dir: stateDir, now: time.Now}, nil
}

// Capacity is the number of slots (0 for a pool from OpenExisting).
func (p *Pool) Capacity() int { return p.layout.total }

// Allocate returns owner's range, taking the lowest free slot for an owner
// that has none, and adds member to its members. It is idempotent: a known
// owner gets its range back. An owner already allocated under another
// runc root is an ErrOwnerConflict; a full pool an ErrExhausted.
//
// It reads RecordDir's names (the used slots) and one record: owner's,
// or for a new owner the lowest one, whose size is every record's (see
// "On-disk format" in doc.go) and must be the configured slot size.
func (p *Pool) Allocate(owner, root, member string) (Allocation, error) {
	if p.layout.total == 0 {
		return Allocation{}, errorf(ErrInvalidConfig, "pool in %s was opened without ranges: it cannot allocate (use New)", p.dir)
	}
	if err := checkOwner(owner); err != nil {
		return Allocation{}, err
	}
	if root == "" {
		return Allocation{}, errorf(ErrInvalidConfig, "owner %s: empty runc root", owner)
	}
	root = filepath.Clean(root)
	var out Allocation
	var reclaimFailed error // hooks that failed when a full pool reclaimed
	err := p.update(root, func(rs *records) error {
		used, err := p.usedSlots(rs)
		if err != nil {
			return err
		}
		e, ok, err := rs.lookup(owner)
		if err != nil {
			return err
		}
		if ok {
			a, err := p.readSlot(rs, e)
			if err != nil {
				return err
			}
			if a.Root != root {
				return errorf(ErrOwnerConflict, "owner %s holds host IDs %s under runc root %s, not %s: delete its containers under %s first, or run `runc-userns pool release %s` if they are gone", owner, a.Range(), a.Root, root, a.Root, owner)
			}
			out, err = p.addTo(rs, a, member)
			return err
		}
		if e, ok := rs.lowest(); ok {
			if _, err := p.readSlot(rs, e); err != nil {
				return err
			}
		}
		slot, ok := used.firstFree()
		if !ok {
			// Full: take back the ranges of pods that are gone.
			dead, failed, err := p.reclaim(rs)
			if err != nil {
				return err
			}
			reclaimFailed = failed
			if len(dead) > 0 {
				if used, err = p.usedSlots(rs); err != nil {
					return err
				}
				slot, ok = used.firstFree()
			}
		}
		if !ok {
			n := used.count()
			if reclaimFailed != nil {
				return fmt.Errorf("%w: %d of %d ranges in use (see runc-userns pool ls) in %s; the ranges of pods that are gone could not all be taken back: %w", ErrExhausted, n, p.layout.total, p.name(), reclaimFailed)
			}
			return fmt.Errorf("%w: %d of %d ranges in use (see runc-userns pool ls) in %s; `runc-userns pool gc` frees those of pods that are gone, a larger userns.ranges makes room", ErrExhausted, n, p.layout.total, p.name())
		}
		if err := p.noteRoot(root); err != nil {
			return err
		}
		r := p.layout.rangeOf(slot)
		a := Allocation{Owner: owner, HostID: r.HostID, Size: r.Size, Root: root, Allocated: p.now().UTC().Truncate(time.Second)}
		if err := p.claim(&a, member); err != nil {
			return err
		}
		addMember(&a, member)
		if err := rs.put(a); err != nil {
			return err
		}
		out = a.clone()
		return nil
	})
	return out, err
}

// usedSlots is the bitmap of the slots RecordDir's names show held, each
// record taken to be one slot (readSlot checks the size of the one record
// Allocate reads; all() checks them all).
func (p *Pool) usedSlots(rs *records) (*bitmap, error) {
	b := newBitmap(p.layout.total)
	var owners map[uint32]string
	for _, e := range rs.entries {
		// Two owners' records at one host ID: damage, which a rebuild
		// from the live containers repairs (see update).
		if o, dup := owners[e.hostID]; dup {
			return nil, &damagedError{rs.dir, fmt.Errorf("%w: owners %s and %s both have a record at host ID %d", ErrCorruptState, min(o, e.owner), max(o, e.owner), e.hostID)}
		}
		if owners == nil {
			owners = make(map[uint32]string, len(rs.entries))
		}
		owners[e.hostID] = e.owner
		if err := markSlot(b, p.layout, e.owner, Range{HostID: e.hostID, Size: p.layout.slot}); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// readSlot reads e's record and refuses one that is not a slot of the
// configured layout, as rebuild does.
func (p *Pool) readSlot(rs *records, e entry) (Allocation, error) {
	a, err := rs.read(e)
	if err != nil {
		return Allocation{}, err
	}
	if _, ok := p.layout.slotOf(a.Range()); !ok {
		return Allocation{}, notASlot(p.layout, a.Owner, a.Range())
	}
	return a, nil
}

// Join adds member to the range owner already holds (an app container
// joining its pod's sandbox). An owner with no range is ErrUnknownOwner.
func (p *Pool) Join(owner, member string) (Allocation, error) {
	if err := checkOwner(owner); err != nil {
		return Allocation{}, err
	}
	var out Allocation
	err := p.update("", func(rs *records) error {
		a, ok, err := rs.get(owner)
		if err != nil {
			return err
		}
		if !ok {
			return errorf(ErrUnknownOwner, "owner %s holds no range (was its sandbox created?)", owner)
		}
		out, err = p.addTo(rs, a, member)
		return err
	})
	return out, err
}

// addTo adds member to a's members, after its claim (Hooks.Claim), and
// writes the record if that changed it.
func (p *Pool) addTo(rs *records, a Allocation, member string) (Allocation, error) {
	if err := p.claim(&a, member); err != nil {
		return Allocation{}, err
	}
	if addMember(&a, member) {
		if err := rs.put(a); err != nil {
			return Allocation{}, err
		}
	}
	return a.clone(), nil
}

// Leave removes member from owner's members and frees the range when none
// is left. An unknown owner or member is success: freed is true when owner
// holds no range afterwards.
func (p *Pool) Leave(owner, member string) (freed bool, err error) {
	if err := checkOwner(owner); err != nil {
		return false, err
	}
	err = p.update("", func(rs *records) error {
		a, ok, err := rs.get(owner)
		if err != nil || !ok {
			freed = err == nil
			return err
		}
		j := slices.Index(a.Members, member)
		if j >= 0 {
			a.Members = slices.Delete(a.Members, j, j+1)
		}
		switch {
		case len(a.Members) == 0:
			freed = true
			return rs.remove(a)
		case j >= 0:
			return rs.put(a)
		}
		return nil
	})
	return freed, err
}

// Release frees owner's range. With Hooks.Alive set it refuses (ErrInUse)
// while any member is alive, since the next Allocate would give the range
// to another pod while they run; without, it frees it whatever its
// members. An unknown owner is success.
func (p *Pool) Release(owner string) error {
	if err := checkOwner(owner); err != nil {
		return err
	}
	return p.update("", func(rs *records) error {
		a, ok, err := rs.get(owner)
		if err != nil || !ok {
			return err
		}
		if p.hooks.Alive != nil {
			var alive []string
			for _, m := range a.Members {
				if p.hooks.Alive(a.Root, m) {
					alive = append(alive, m)
				}
			}
			if len(alive) > 0 {
				return errorf(ErrInUse, "owner %s: its containers %s (runc root %s) are alive and use host IDs %d-%d; releasing the range would give it to the next pod while they run: delete them first", owner, strings.Join(alive, ", "), a.Root, a.HostID, a.Range().end()-1)
			}
		}
		return rs.remove(a)
	})
}

// Get returns owner's allocation, if it has one.
func (p *Pool) Get(owner string) (Allocation, bool, error) {
	if err := checkOwner(owner); err != nil {
		return Allocation{}, false, err
	}
	var out Allocation
	var ok bool
	err := p.view(func(rs *records) error {
		var err error
		out, ok, err = rs.get(owner)
		return err
	})
	return out, ok, err
}

// OwnerOf returns the owner whose members include container id of runc
// root, or "" when there is none: the delete path uses it for a container
// whose own record of its pod was lost.
func (p *Pool) OwnerOf(root, id string) (string, error) {
	root = filepath.Clean(root)
	var owner string
	err := p.view(func(rs *records) error {
		all, err := rs.all()
		for _, a := range all {
			if a.Root == root && slices.Contains(a.Members, id) {
				owner = a.Owner
				break
			}
		}
		return err
	})
	return owner, err
}

// List returns every allocation, sorted by host ID.
func (p *Pool) List() ([]Allocation, error) {
	var out []Allocation
	err := p.view(func(rs *records) error {
		var err error
		out, err = rs.all()
		return err
	})
	return out, err
}

// addMember adds member (when not empty and not there yet) and reports
// whether the record changed.
func addMember(a *Allocation, member string) bool {
	if member == "" || slices.Contains(a.Members, member) {
		return false
	}
	a.Members = append(a.Members, member)
	return true
}

// name names the pool for an operator who has more than one node or
// config: its host ID ranges (as userns.ranges has them) and its state dir.
func (p *Pool) name() string {
	rs := make([]string, len(p.layout.ranges))
	for i, r := range p.layout.ranges {
		rs[i] = r.String()
	}
	return fmt.Sprintf("the pool of host IDs %s kept in %s", strings.Join(rs, ", "), p.dir)
}
