package pool

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Config describes a pool.
type Config struct {
	Ranges   []Range // where slots come from (see ResolveRanges)
	SlotSize uint32  // DefaultSlotSize when 0
	StateDir string  // holds LockFile and StateFile; created 0711 if missing
}

// Pool allocates slots of its ranges to owners. A Pool holds no state of
// its own between calls: every call locks the state directory, reads the
// state file, acts and writes it back, so any number of Pools in any number
// of processes may share one state directory.
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
		return nil, errorf(ErrInvalidConfig, "state directory not set: the pool needs a directory for %s and %s", LockFile, StateFile)
	}
	return &Pool{dir: stateDir, now: time.Now}, nil
}

// Capacity is the number of slots (0 for a pool from OpenExisting).
func (p *Pool) Capacity() int { return p.layout.total }

// Allocate returns owner's range, taking the lowest free slot for an owner
// that has none, and adds member to its members. It is idempotent: a known
// owner gets its range back. An owner already allocated under another
// runc root is an ErrOwnerConflict; a full pool an ErrExhausted.
func (p *Pool) Allocate(owner, root, member string) (Allocation, error) {
	if p.layout.total == 0 {
		return Allocation{}, errorf(ErrInvalidConfig, "pool in %s was opened without ranges: it cannot allocate (use New)", p.dir)
	}
	if owner == "" {
		return Allocation{}, errorf(ErrInvalidConfig, "empty owner: each range needs an owner (the pod sandbox ID)")
	}
	if root == "" {
		return Allocation{}, errorf(ErrInvalidConfig, "owner %s: empty runc root", owner)
	}
	root = filepath.Clean(root)
	var out Allocation
	err := p.update(root, func(st *state) (bool, error) {
		used, err := rebuild(p.layout, st.Allocations)
		if err != nil {
			return false, err
		}
		if i := st.find(owner); i >= 0 {
			a := &st.Allocations[i]
			if a.Root != root {
				return false, errorf(ErrOwnerConflict, "owner %s holds host IDs %s under runc root %s, not %s: delete its containers under %s first, or run `runc-userns pool release %s` if they are gone", owner, a.Range(), a.Root, root, a.Root, owner)
			}
			if err := p.claim(a, member); err != nil {
				return false, err
			}
			changed := addMember(a, member)
			out = a.clone()
			return changed, nil
		}
		slot, ok := used.firstFree()
		if !ok {
			// Full: take back the ranges of pods that are gone.
			dead, err := p.reclaim(st)
			if err != nil {
				return false, err
			}
			if len(dead) > 0 {
				if used, err = rebuild(p.layout, st.Allocations); err != nil {
					return false, err
				}
				slot, ok = used.firstFree()
			}
		}
		if !ok {
			n := used.count()
			return false, fmt.Errorf("%w: %d of %d ranges in use (see runc-userns pool ls); `runc-userns pool gc` frees those of pods that are gone", ErrExhausted, n, p.layout.total)
		}
		if err := p.noteRoot(root); err != nil {
			return false, err
		}
		r := p.layout.rangeOf(slot)
		a := Allocation{Owner: owner, HostID: r.HostID, Size: r.Size, Root: root, Allocated: p.now().UTC().Truncate(time.Second)}
		if err := p.claim(&a, member); err != nil {
			return false, err
		}
		addMember(&a, member)
		st.SlotSize = p.layout.slot
		st.Allocations = append(st.Allocations, a)
		out = a.clone()
		return true, nil
	})
	return out, err
}

// Join adds member to the range owner already holds (an app container
// joining its pod's sandbox). An owner with no range is ErrUnknownOwner.
func (p *Pool) Join(owner, member string) (Allocation, error) {
	var out Allocation
	err := p.update("", func(st *state) (bool, error) {
		i := st.find(owner)
		if i < 0 {
			return false, errorf(ErrUnknownOwner, "owner %s holds no range (was its sandbox created?)", owner)
		}
		if err := p.claim(&st.Allocations[i], member); err != nil {
			return false, err
		}
		changed := addMember(&st.Allocations[i], member)
		out = st.Allocations[i].clone()
		return changed, nil
	})
	return out, err
}

// Leave removes member from owner's members and frees the range when none
// is left. An unknown owner or member is success: freed is true when owner
// holds no range afterwards.
func (p *Pool) Leave(owner, member string) (freed bool, err error) {
	err = p.update("", func(st *state) (bool, error) {
		i := st.find(owner)
		if i < 0 {
			freed = true
			return false, nil
		}
		a := &st.Allocations[i]
		j := slices.Index(a.Members, member)
		if j >= 0 {
			a.Members = slices.Delete(a.Members, j, j+1)
		}
		if len(a.Members) == 0 {
			st.remove(i)
			freed = true
			return true, nil
		}
		return j >= 0, nil
	})
	return freed, err
}

// Release frees owner's range whatever its members. An unknown owner is
// success.
func (p *Pool) Release(owner string) error {
	return p.update("", func(st *state) (bool, error) {
		i := st.find(owner)
		if i < 0 {
			return false, nil
		}
		st.remove(i)
		return true, nil
	})
}

// Get returns owner's allocation, if it has one.
func (p *Pool) Get(owner string) (Allocation, bool, error) {
	var out Allocation
	var ok bool
	err := p.view(func(st *state) error {
		if i := st.find(owner); i >= 0 {
			out, ok = st.Allocations[i].clone(), true
		}
		return nil
	})
	return out, ok, err
}

// OwnerOf returns the owner whose members include container id of runc
// root, or "" when there is none: the delete path uses it for a container
// whose own record of its pod was lost.
func (p *Pool) OwnerOf(root, id string) (string, error) {
	root = filepath.Clean(root)
	var owner string
	err := p.view(func(st *state) error {
		for _, a := range st.Allocations {
			if a.Root == root && slices.Contains(a.Members, id) {
				owner = a.Owner
				return nil
			}
		}
		return nil
	})
	return owner, err
}

// List returns every allocation, sorted by host ID.
func (p *Pool) List() ([]Allocation, error) {
	var out []Allocation
	err := p.view(func(st *state) error {
		out = make([]Allocation, len(st.Allocations))
		for i, a := range st.Allocations {
			out[i] = a.clone()
		}
		return nil
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
