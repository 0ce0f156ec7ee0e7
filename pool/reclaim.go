package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RootsFile lists, one a line, every runc root the pool has allocated
// under: the places to look for live containers when the records are lost
// (see Hooks.Scan). It only grows, and only when a new root appears.
const RootsFile = "pool.roots"

// Hooks connect the pool to the containers that use it, which this package
// cannot see (it imports nothing else of runc-userns). Every hook runs
// under the pool's exclusive lock. A nil hook turns its feature off.
type Hooks struct {
	// Alive reports whether container member of runc root may still use
	// its range: it exists in root with a live init, or its create is
	// still in flight. It must answer true when in doubt: a false answer
	// frees the range for another pod.
	Alive func(root, member string) bool
	// Claim is called when Allocate or Join gives member the range of a,
	// before the pool records it. The caller records its claim
	// where Scan will find it (see the package documentation, "Reclaiming
	// and rebuilding"); an error fails the call and records nothing.
	Claim func(a Allocation, member string) error
	// Scan lists the allocations that containers under roots, or creates
	// in flight, still hold, one record per member (or merged), from
	// their own records: the pool's memory when its records are lost.
	Scan func(roots []string) ([]Allocation, error)
	// Rebuilt is told that the records were rebuilt from Scan, why, and
	// what it now holds.
	Rebuilt func(cause error, allocs []Allocation)
	// Reclaimed is called for each allocation taken back from owners
	// whose members are all gone, before the pool forgets it: it
	// releases what the owner held besides its range (the pod's pinned
	// namespace). It must be idempotent: a crash before the state is
	// written reclaims the same allocation again on the next call.
	Reclaimed func(Allocation) error
}

// SetHooks installs h on p.
func (p *Pool) SetHooks(h Hooks) { p.hooks = h }

// Reclaim takes back every allocation none of whose members is alive
// (Hooks.Alive) and returns them. It is what `runc-userns pool gc` runs;
// Allocate runs it itself when the pool is otherwise exhausted.
func (p *Pool) Reclaim() ([]Allocation, error) {
	if p.hooks.Alive == nil {
		return nil, errorf(ErrInvalidConfig, "pool in %s: reclaiming needs a liveness check (Hooks.Alive)", p.dir)
	}
	var out []Allocation
	var failed error
	err := p.update("", func(rs *records) error {
		var err error
		out, failed, err = p.reclaim(rs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, failed
}

// Sweep calls fn, under the pool's exclusive lock, with the owners that
// hold a range. The caller drops there what an owner without a range left
// behind (`runc-userns pool gc`: the pinned user namespace of a pod whose
// record went in a rebuild): while fn runs no Allocate can give such an
// owner a range, and an owner that holds one is in held.
func (p *Pool) Sweep(fn func(held map[string]bool) error) error {
	return p.update("", func(rs *records) error {
		if rs.unlocked {
			// No state directory when update looked: nothing to sweep,
			// and whatever is there now is a first create's, made
			// after that look and not under a lock fn would hold.
			return nil
		}
		all, err := rs.all()
		if err != nil {
			return err
		}
		held := make(map[string]bool, len(all))
		for _, a := range all {
			held[a.Owner] = true
		}
		return fn(held)
	})
}

// reclaim removes the allocations whose members are all dead, after
// Hooks.Reclaimed has been told of each. An allocation without members is
// kept: there is nobody to ask about it. An allocation whose hook fails
// stays too (what its containers left is not cleaned up), and the others
// are reclaimed all the same: failed joins the hooks' errors, err is an
// error of the records, which changes nothing.
func (p *Pool) reclaim(rs *records) (dead []Allocation, failed, err error) {
	if p.hooks.Alive == nil {
		return nil, nil, nil
	}
	all, err := rs.all()
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, a := range all {
		if len(a.Members) == 0 || slices.ContainsFunc(a.Members, func(m string) bool { return p.hooks.Alive(a.Root, m) }) {
			continue
		}
		if p.hooks.Reclaimed != nil {
			if err := p.hooks.Reclaimed(a.clone()); err != nil {
				errs = append(errs, fmt.Errorf("reclaim range %s of owner %s (it stays taken): %w", a.Range(), a.Owner, err))
				continue
			}
		}
		dead = append(dead, a)
	}
	for _, a := range dead {
		if err := rs.remove(a); err != nil {
			return nil, nil, err
		}
	}
	return dead, errors.Join(errs...), nil
}

// claim tells the caller that member holds a's range.
func (p *Pool) claim(a *Allocation, member string) error {
	if p.hooks.Claim == nil || member == "" {
		return nil
	}
	return p.hooks.Claim(a.clone(), member)
}

// rebuildState makes RecordDir hold the live containers' records (Scan)
// in place of a state that is missing or damaged (cause), and removes a
// version 1 state file. The records must pass the same checks as a state
// file; if they do not, nothing is written or guessed and the pool stays
// unusable until the operator looks.
func (p *Pool) rebuildState(cause error, extraRoot string) (*records, error) {
	roots, err := p.readRoots()
	if err != nil {
		return nil, err
	}
	if extraRoot != "" && !slices.Contains(roots, extraRoot) {
		roots = append(roots, extraRoot)
	}
	found, err := p.hooks.Scan(roots)
	if err != nil {
		return nil, fmt.Errorf("rebuild pool state from the containers under %v: %w", roots, err)
	}
	st := &state{Version: stateVersion, SlotSize: p.layout.slot}
	for _, a := range found {
		if st.SlotSize == 0 {
			st.SlotSize = a.Size
		}
		i := st.find(a.Owner)
		if i < 0 {
			a.Members = slices.Clone(a.Members)
			if a.Allocated.IsZero() {
				a.Allocated = p.now().UTC().Truncate(time.Second)
			}
			st.Allocations = append(st.Allocations, a)
			continue
		}
		have := &st.Allocations[i]
		if have.HostID != a.HostID || have.Size != a.Size || have.Root != a.Root {
			return nil, fmt.Errorf("%w: rebuild: owner %s is recorded with host IDs %s under %s and %s under %s by different containers; delete them, then run `runc-userns pool gc`", ErrCorruptState, a.Owner, have.Range(), have.Root, a.Range(), a.Root)
		}
		for _, m := range a.Members {
			addMember(have, m)
		}
	}
	data, err := encodeState(st)
	if err != nil {
		return nil, err
	}
	checked, err := parseState(data)
	if err != nil {
		return nil, fmt.Errorf("rebuild pool state: the live containers' records do not make a valid pool: %w", err)
	}
	if err := replaceAll(p.dir, checked.Allocations); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(p.dir, StateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("user namespace pool: %w", err)
	}
	if p.hooks.Rebuilt != nil {
		p.hooks.Rebuilt(cause, slices.Clone(checked.Allocations))
	}
	rs, err := readRecordDir(p.dir, true)
	if err != nil {
		return nil, err
	}
	rs.rebuilt = true
	return rs, nil
}

// readRoots returns the roots file's entries; a missing file is none.
func (p *Pool) readRoots() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(p.dir, RootsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("user namespace pool: %w", err)
	}
	var roots []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); filepath.IsAbs(l) && !slices.Contains(roots, filepath.Clean(l)) {
			roots = append(roots, filepath.Clean(l))
		}
	}
	return roots, nil
}

// noteRoot adds root to the roots file if it is not there yet.
func (p *Pool) noteRoot(root string) error {
	roots, err := p.readRoots()
	if err != nil || slices.Contains(roots, root) {
		return err
	}
	roots = append(roots, root)
	return writeFileAtomic(p.dir, RootsFile, []byte(strings.Join(roots, "\n")+"\n"))
}
