package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/netns"
)

// The network namespace a runc < 1.3 cannot join (see package netns): for a
// pool container that must join a network namespace its pod's user
// namespace does not own, create drops the namespace from the spec, records
// it beside the container's staging entries, and starts runc inside it;
// exec of such a container finds the record through the container's stamp
// and execs runc inside it too (runc exec joins only the namespaces the
// container's config lists), or refuses: it never lets runc run a process
// of such a container in the host's network namespace.

// netjoinModifier removes the network namespace entry: runc inherits the
// namespace the wrapper entered instead of joining it.
type netjoinModifier struct{}

func (netjoinModifier) Modify(s *specs.Spec) error {
	if s.Linux == nil {
		return nil
	}
	kept := s.Linux.Namespaces[:0]
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != specs.NetworkNamespace {
			kept = append(kept, ns)
		}
	}
	s.Linux.Namespaces = kept
	return nil
}

// netjoin is a recorded network namespace: its path and identity.
type netjoin struct {
	path string
	id   netns.ID
}

// writeNetjoin records the namespace at path for the container (0600,
// written whole before it is renamed into place).
func writeNetjoin(lay state.Layout, root, id, path string) (netjoin, error) {
	if strings.ContainsRune(path, '\n') {
		return netjoin{}, fmt.Errorf("the path has a newline: name the network namespace by a path without one")
	}
	f, nid, err := netns.Open(path)
	if err != nil {
		return netjoin{}, err
	}
	f.Close()
	rec := lay.NetjoinRecord(root, id)
	if err := os.MkdirAll(filepath.Dir(rec), 0o711); err != nil {
		return netjoin{}, err
	}
	if err := oci.ReplaceFile(rec, []byte(fmt.Sprintf("%d %d %s\n", nid.Dev, nid.Ino, path)), 0o600); err != nil {
		return netjoin{}, err
	}
	return netjoin{path: path, id: nid}, nil
}

// readNetjoin returns the container's record; found is false when it has
// none (the common case: one failed open).
func readNetjoin(lay state.Layout, root, id string) (nj netjoin, found bool, err error) {
	f, err := os.Open(lay.NetjoinRecord(root, id))
	if errors.Is(err, os.ErrNotExist) {
		return netjoin{}, false, nil
	}
	if err != nil {
		return netjoin{}, false, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return netjoin{}, true, fmt.Errorf("network namespace record %s: %w", f.Name(), err)
	}
	// "DEV INO PATH\n": the path is the rest of the line, spaces and all.
	fields := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 3)
	var dev, ino uint64
	if len(fields) == 3 {
		dev, err = strconv.ParseUint(fields[0], 10, 64)
		if err == nil {
			ino, err = strconv.ParseUint(fields[1], 10, 64)
		}
	}
	if len(fields) != 3 || err != nil || !filepath.IsAbs(fields[2]) {
		return netjoin{}, true, fmt.Errorf("network namespace record %s: malformed %q", f.Name(), line)
	}
	nj.id.Dev, nj.id.Ino, nj.path = dev, ino, fields[2]
	return nj, true, nil
}

// execIn runs `runc exec` for a container whose network namespace the
// wrapper entered at create: inside that namespace, or not at all.
func (a *app) execIn() int {
	root, err := filepath.Abs(a.inv.Root)
	if err != nil {
		return a.fail(err)
	}
	if a.inv.Help || (a.inv.Scanned && oci.ValidateID(a.inv.ID) != nil) {
		return a.exec() // runc prints its usage, or refuses the ID
	}
	if !a.inv.Scanned {
		// Without the ID we cannot tell whether the container needs its
		// network namespace entered: refuse rather than let runc run the
		// process in the host's, if any container of this root needs it.
		// (A flag no runc knows is refused by runc itself; this catches
		// one that a newer runc knows and our scanner does not.)
		if netjoinsUnder(root) {
			return a.fail(fmt.Errorf("runc-userns could not read the container ID from exec's arguments %q, and containers under --root %s run in a network namespace that runc-userns enters for runc (runc < 1.3): report the arguments as a bug", a.inv.Args, root))
		}
		return a.exec()
	}
	nj, found, err := a.netjoinOf(root, a.inv.ID)
	if err != nil {
		return a.fail(fmt.Errorf("container %s: %w", a.inv.ID, err))
	}
	if !found {
		return a.exec()
	}
	if _, _, err := netns.Enter(nj.path, nj.id); err != nil {
		return a.fail(fmt.Errorf("container %s: cannot enter its network namespace for exec: %w (the pod's network namespace must outlive its containers)", a.inv.ID, err))
	}
	// The thread stays locked and in the namespace: runc replaces it.
	return a.exec()
}

// netjoinMarker is how a stamp that removed a network namespace looks in
// runc's state.json: a "runc-userns.io/stamp=..." label whose JSON,
// escaped inside that label's string, has a netns field.
var netjoinMarker = []byte(`\"netns\":`)

// netjoinOf finds the network namespace record of container id under runc
// root from the container itself: the stamp on its spec, which runc's
// state keeps, names the state dir that holds the record, once it verifies
// with the configured stateDir's key (a call with no environment reads the
// operator's config at its default path). A container whose stamp says the
// wrapper entered its network namespace is exec'd in that namespace or not
// at all, never in the host's. Containers we did not edit that way cost
// one read of their state.json.
func (a *app) netjoinOf(root, id string) (nj netjoin, found bool, err error) {
	raw, err := os.ReadFile(filepath.Join(root, id, "state.json"))
	if err != nil || !hasNetjoinStamp(raw) {
		return netjoin{}, false, nil // runc reports a missing container
	}
	var st runc.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return netjoin{}, false, fmt.Errorf("read runc state of the container: %w", err)
	}
	v, _ := st.Annotation(oci.AnnotationStamp)
	stamp, err := oci.DecodeStamp(v)
	if err == nil {
		err = a.verifyStamp(stamp)
	}
	if err != nil {
		return netjoin{}, false, fmt.Errorf("its %s annotation does not verify (%w): refusing to exec a process that might land in the host's network namespace; delete and recreate the container", oci.AnnotationStamp, err)
	}
	if stamp.Netns == "" {
		return netjoin{}, false, nil
	}
	nj, found, err = readNetjoin(state.Layout(stamp.StateDir), root, id)
	if err == nil && !found {
		err = fmt.Errorf("runc-userns entered network namespace %s for it at create, but its record %s is gone: refusing to exec a process in the host's network namespace; delete and recreate the container", stamp.Netns, state.Layout(stamp.StateDir).NetjoinRecord(root, id))
	}
	return nj, err == nil, err
}

func hasNetjoinStamp(stateJSON []byte) bool {
	return bytes.Contains(stateJSON, []byte(oci.AnnotationStamp+"=")) && bytes.Contains(stateJSON, netjoinMarker)
}

// netjoinsUnder reports whether any container under runc root has a stamp
// that removed its network namespace. The substrings only select what to
// decode: a pod author can put both in any annotation value, and so, had
// they been enough, refuse every unparsed exec under the root. (A stamp
// that does not verify never reaches runc's state: create refuses it.)
func netjoinsUnder(root string) bool {
	list, err := os.ReadDir(root)
	if err != nil {
		return false
	}
	for _, e := range list {
		path := filepath.Join(root, e.Name(), "state.json")
		raw, err := os.ReadFile(path)
		if err != nil || !hasNetjoinStamp(raw) {
			continue
		}
		st, err := runc.ParseState(raw, path)
		if err != nil {
			return true // in doubt: it may be one
		}
		v, _ := st.Annotation(oci.AnnotationStamp)
		if stamp, err := oci.DecodeStamp(v); err == nil && stamp.Netns != "" {
			return true
		}
	}
	return false
}

// runIn runs runc (create/run) inside the network namespace nj, or where
// the wrapper is when nj is empty.
func (c *creation) runIn(nj netjoin) int {
	if nj.path == "" {
		return c.run()
	}
	restore, _, err := netns.Enter(nj.path, nj.id)
	if err != nil {
		return c.fail(fmt.Errorf("container %s: enter network namespace %s: %w", c.id, nj.path, err))
	}
	status := c.run()
	if err := restore(); err != nil {
		c.log.Warnf("container %s: %v", c.id, err)
	}
	return status
}
