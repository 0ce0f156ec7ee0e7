package create

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/netns"
)

// foreignNet is what planNetns decided for a pod's network namespace that
// its user namespace does not own.
type foreignNet struct {
	sysctls bool // the net.* sysctls leave the spec (netSysctls writes them)
	enter   bool // the namespace leaves the spec (runc starts in it: netjoin)
	native  bool // the runtime knows "rro" (the bind of /sys)
}

// planNetns: a pool container that joins a network namespace its pod's
// user namespace podNS does not own (a CNI netns) gets its net.* sysctls
// written by the wrapper, sysfs as a bind of the host's, and, with runc <
// 1.3, the namespace entered for runc instead of joined (package netns).
func (c *creation) planNetns(s *specs.Spec, stamp *oci.Stamp, feat *runc.Features, podNS *os.File, mapping []specs.LinuxIDMapping) error {
	foreign, path, err := netns.Foreign(s, ownedBy(podNS))
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	if !foreign {
		return nil
	}
	n := &foreignNet{native: feat.NativeIdmap}
	// runc, whatever its version, writes sysctls from inside the
	// pod's user namespace, which cannot write them there. The sandbox
	// sets up the pod's network namespace: it gets what a pod whose
	// user namespace owned it would have (netns.PodDefaults).
	var defaults map[string]string
	if c.req.Pod.InPod && c.req.Pod.Sandbox {
		defaults = netns.PodDefaults
	}
	if c.p.netSysctls, err = netns.PlanSysctls(s, path, defaults, mapping); err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	if c.p.netSysctls.Path != "" {
		stamp.NetSysctls = c.p.netSysctls.Spec
		c.Log.Infof("container %s: joins network namespace %s, which the pod's user namespace does not own: runc-userns writes its network sysctls there before runc starts (%s)", c.id, path, sysctlList(c.p.netSysctls.Values))
		n.sysctls = true
	}
	c.warnNetCaps(path)
	if feat.JoinsUsernsFirst {
		// runc < 1.3 would join the pod's user namespace first and then
		// lack the right to join this one: runIn.
		if c.p.netjoin, err = writeNetjoin(c.lay, c.root, c.id, path); err != nil {
			return fmt.Errorf("network namespace %s: %w", path, err)
		}
		stamp.Netns = path
		c.Log.Infof("container %s: runc %s cannot join network namespace %s after the pod's user namespace: runc-userns enters it for runc", c.id, feat.Version, path)
		n.enter = true
	}
	c.Log.Infof("container %s: joins network namespace %s, which the pod's user namespace does not own: sysfs becomes a read-only bind of the host's /sys", c.id, path)
	c.p.foreignNet = n
	return nil
}

// sysctlList is values as "key=value, ...", in key order, for a log line.
func sysctlList(values map[string]string) string {
	keys := slices.Sorted(maps.Keys(values))
	for i, k := range keys {
		keys[i] = k + "=" + values[k]
	}
	return strings.Join(keys, ", ")
}

// warnNetCaps: CAP_NET_ADMIN and CAP_NET_RAW of a pool container are its
// pod's root's, which has none over a network namespace the host's user
// namespace owns (interfaces, routes, firewall, raw sockets fail with
// EPERM there). NET_ADMIN is asked for on purpose: a warning. NET_RAW is
// in containerd's and Docker's default set, which every pod would trip:
// an info line (ping works without it, through ping_group_range).
func (c *creation) warnNetCaps(path string) {
	caps, err := c.caps()
	if err != nil || caps == nil {
		return // runc refuses a spec whose capabilities do not decode
	}
	has := func(name string) bool {
		return slices.Contains(caps.Bounding, name) || slices.Contains(caps.Effective, name) || slices.Contains(caps.Permitted, name)
	}
	const why = "its pod's root has none over network namespace %s, which the host's user namespace owns (the CRI runtime made it, not knowing the pod is in a user namespace): %s fails with EPERM there; a pod that must do that runs with %s=host"
	switch {
	case has("CAP_NET_ADMIN"):
		c.Log.Warnf("container %s asks for CAP_NET_ADMIN, but "+why, c.id, path, "configuring interfaces, routes or firewall rules", oci.AnnotationUserns)
	case has("CAP_NET_RAW"):
		c.Log.Infof("container %s has CAP_NET_RAW, but "+why, c.id, path, "opening a raw socket", oci.AnnotationUserns)
	}
}

// writeNetjoin records the network namespace at path that container id of
// runc root root is started in (state.Layout.NetjoinRecord), so that its
// exec enters it too (Call.NetjoinOf).
func writeNetjoin(lay state.Layout, root, id, path string) (netns.Record, error) {
	return netns.WriteRecord(lay.NetjoinRecord(root, id), path, func(file string, data []byte, mode os.FileMode) error {
		if err := os.MkdirAll(filepath.Dir(file), 0o711); err != nil {
			return err
		}
		return oci.ReplaceFile(file, data, mode)
	})
}

// ownedBy is netns.Foreign's owned: whether the network namespace at path
// is owned by the user namespace userns.
func ownedBy(userns *os.File) func(string) (bool, error) {
	return func(path string) (bool, error) {
		ns, _, err := netns.Open(path)
		if err != nil {
			return false, err
		}
		defer ns.Close()
		return libuserns.OwnedBy(ns, userns)
	}
}

// The network namespace a runc < 1.3 cannot join (package netns): exec of
// a container whose create entered it for runc finds its record through
// the container's stamp and execs runc inside it too (runc exec joins only
// the namespaces the container's config lists), or refuses: it never lets
// runc run a process of such a container in the host's network namespace.

// netjoinMarker is how a stamp that removed a network namespace looks in
// runc's state.json: a "runc-userns.io/stamp=..." label whose JSON,
// escaped inside that label's string, has a netns field.
var netjoinMarker = []byte(`\"netns\":`)

// NetjoinOf finds the network namespace record of container id under runc
// root from the container itself: the stamp on its spec, which runc's
// state keeps, names the state dir that holds the record, once it verifies
// with the configured stateDir's key (a call with no environment reads the
// operator's config at its default path), or with that of the state dir
// it names when that one is root-owned and private (verifyOwnStamp). A
// container whose stamp says the wrapper entered its network namespace is exec'd in that namespace or not
// at all, never in the host's. Containers we did not edit that way cost
// one read of their state.json.
func (a *Call) NetjoinOf(root, id string) (nj netns.Record, found bool, err error) {
	raw, err := os.ReadFile(filepath.Join(root, id, "state.json"))
	if err != nil || !hasNetjoinStamp(raw) {
		return netns.Record{}, false, nil // runc reports a missing container
	}
	var st runc.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return netns.Record{}, false, fmt.Errorf("read runc state of the container: %w", err)
	}
	v, _ := st.Annotation(oci.AnnotationStamp)
	stamp, err := oci.DecodeStamp(v)
	if err == nil {
		_, err = a.verifyOwnStamp(stamp, oci.Binding{ID: id, Root: root}, false)
	}
	if err != nil {
		return netns.Record{}, false, fmt.Errorf("its %s annotation does not verify (%w): refusing to exec a process that might land in the host's network namespace; delete and recreate the container", oci.AnnotationStamp, err)
	}
	if stamp.Netns == "" {
		return netns.Record{}, false, nil
	}
	rec := state.Layout(stamp.StateDir).NetjoinRecord(root, id)
	nj, found, err = netns.ReadRecord(rec)
	if err == nil && !found {
		err = fmt.Errorf("runc-userns entered network namespace %s for it at create, but its record %s is gone: refusing to exec a process in the host's network namespace; delete and recreate the container", stamp.Netns, rec)
	}
	return nj, err == nil, err
}

// hasNetjoinStamp is netjoinOf's first look: a stamp that removed a network
// namespace, or an annotation that looks like one.
func hasNetjoinStamp(stateJSON []byte) bool {
	return bytes.Contains(stateJSON, []byte(oci.AnnotationStamp+"=")) && bytes.Contains(stateJSON, netjoinMarker)
}

// NetjoinsUnder reports whether any container under runc root has a stamp
// that removed its network namespace. The substrings only select what to
// decode: a pod author can put both in any annotation value, and so, had
// they been enough, refuse every unparsed exec under the root. (A stamp
// that does not verify never reaches runc's state: create refuses it.)
func NetjoinsUnder(root string) bool {
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
