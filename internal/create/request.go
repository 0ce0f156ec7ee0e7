package create

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/nsjoin"
)

// createPlan reads what a create asks of the wrapper from its loaded spec,
// after checking the caller's own user namespace and mappings, and undoes
// an earlier create's edits of the bundle (a stamp). want: a pool user
// namespace. untouched: the call goes to runc as it is.
func (a *Call) createPlan(doc *oci.Document, bundle string) (req oci.Request, want, untouched bool, err error) {
	id := a.Inv.ID
	if req, err = oci.ParseRequest(id, doc.Spec.Annotations); err != nil {
		return req, false, false, err
	}
	for _, k := range req.Unknown {
		a.Log.Warnf("container %s: unknown annotation %s ignored (known: %s, %s, %s)", id, k, oci.AnnotationUserns, oci.AnnotationPIDNamespace, oci.AnnotationIdmapSkip)
	}
	if req.Stamp != nil {
		foreign, err := a.verifyOwnStamp(req.Stamp, oci.Binding{Bundle: bundle}, true)
		if err != nil {
			return req, false, false, a.stampRefused(req.Stamp, err)
		}
		if foreign {
			a.releaseEarlier(req.Stamp)
		}
		undoStamp(doc.Spec, req.Stamp)
		a.Log.Debugf("container %s: undid the edits of an earlier create of bundle %s", id, bundle)
	}
	if err := a.checkCallerMappings(doc.Spec); err != nil {
		return req, false, false, err
	}
	if err := a.checkCallerUserns(doc.Spec); err != nil {
		return req, false, false, err
	}
	if want, err = a.wantUserns(doc.Spec, req, doc.Capabilities); err != nil {
		return req, false, false, err
	}
	untouched = !want && !idmap.Requested(doc.Spec) && !nsjoin.Wanted(doc.Spec, req.PIDNamespace)
	return req, want, untouched, nil
}

// wantUserns decides whether this container gets a pool user namespace.
// An app container of a pod follows its sandbox (followSandbox), unless
// it asks for auto itself.
func (a *Call) wantUserns(s *specs.Spec, req oci.Request, caps capsOf) (bool, error) {
	id, mode := a.Inv.ID, a.Cfg.Userns.Mode
	explicit := req.Userns == oci.UsernsAuto
	if !explicit && !libuserns.HasUserns(s) && req.Pod.InPod && !req.Pod.Sandbox {
		pooled := a.podIsPooled(req.Pod)
		if pooled || !a.infraless(s, req.Pod) {
			return a.followSandbox(s, req, caps, pooled)
		}
		// The first container of a pod with no sandbox container decides
		// for the pod, as a sandbox would: below.
	}
	if explicit && mode == config.ModeOff {
		return false, fmt.Errorf("container %s asks for a user namespace (%s=auto) but the node's operator turned them off (userns.mode %q in %s): remove the annotation or ask the operator to enable them", id, oci.AnnotationUserns, mode, configName(a.Cfg))
	}
	if !explicit && (mode != config.ModeAlways || req.Userns == oci.UsernsHost) {
		return false, nil
	}
	if libuserns.HasUserns(s) {
		if explicit {
			a.Log.Infof("container %s: the spec already sets a user namespace or uid/gid mappings: the caller's mappings win over %s=auto, nothing allocated", id, oci.AnnotationUserns)
		}
		return false, nil
	}
	if shared := hostNamespaces(s, hostNSDirs); len(shared) > 0 {
		if explicit {
			return false, fmt.Errorf("container %s asks for %s=auto but shares the host's %v namespace: a pod in its own user namespace cannot (Kubernetes refuses hostUsers: false with hostNetwork, hostPID and hostIPC too); drop the annotation or the host namespace", id, oci.AnnotationUserns, shared)
		}
		a.Log.Infof("container %s: shares the host's %v namespace: no user namespace (userns.mode always)", id, shared)
		return false, nil
	}
	priv, err := privileged(s, caps)
	if err != nil {
		return false, fmt.Errorf("container %s: %w", id, err)
	}
	if priv {
		if explicit {
			return false, fmt.Errorf("container %s asks for %s=auto but is privileged: in a user namespace its capabilities count for nothing against the host's devices, network namespace and /sys, so it would not get what privileged promises; drop the annotation or privileged", id, oci.AnnotationUserns)
		}
		a.Log.Infof("container %s is privileged: no user namespace (userns.mode always); a privileged container is host root by design", id)
		return false, nil
	}
	return true, nil
}

// podIsPooled reports whether the container is an app container of a pod
// whose sandbox holds a pool user namespace (its pin exists: one lstat).
func (a *Call) podIsPooled(pod oci.Pod) bool {
	if !pod.InPod || pod.Sandbox || oci.ValidateID(pod.Owner) != nil || !filepath.IsAbs(a.Cfg.StateDir) {
		return false
	}
	_, err := os.Lstat(state.Layout(a.Cfg.StateDir).Pin(pod.Owner))
	return err == nil
}

// infraless reports whether an app container belongs to a CRI-O pod that
// has no sandbox container (CRI-O's drop_infra_ctr, its default): CRI-O's
// pod annotations name a sandbox that runc does not have under this
// root. Such a pod's first container takes the pod's range and pins its
// namespaces, and its last one to go releases them (takeRange). With an
// infra container, CRI-O creates it before any other container of the
// pod, as containerd always does.
func (a *Call) infraless(s *specs.Spec, pod oci.Pod) bool {
	if !pod.InPod || pod.Sandbox || s.Annotations[oci.CRIOContainerType] != oci.ContainerTypeContainer || oci.ValidateID(pod.Owner) != nil {
		return false
	}
	root, err := filepath.Abs(a.Inv.Root)
	if err != nil {
		return false
	}
	return !state.RuncHas(root, pod.Owner)
}

// followSandbox: an app container of a pod follows its sandbox's verdict,
// which the sandbox's create made once and recorded as the pod's pin:
// every container of a pod shares its user namespace (KEP-127), and one
// that decided on its own could be real root beside a pod that is not,
// or want a user namespace its pod does not have. pooled: the pod has
// one. An app container that asks for auto itself, or has a user
// namespace of its own, is not followSandbox's.
func (a *Call) followSandbox(s *specs.Spec, req oci.Request, caps capsOf, pooled bool) (bool, error) {
	always := a.Cfg.Userns.Mode == config.ModeAlways
	switch {
	case pooled && !nsjoin.Wanted(s, req.PIDNamespace):
		return a.joinPooledPod(s, req, caps)
	case pooled:
		// A container:<ID> join takes its target's user namespace
		// (nsjoin), which is the pod's: compared with the pin when the
		// mode gives the container the pod's anyway.
		return always, nil
	case always && req.Userns != oci.UsernsHost:
		a.Log.Infof("container %s: its pod %s's sandbox is not in a user namespace from the pool (the sandbox shares a host namespace, or was created before userns.mode always or without runc-userns): the container stays in the host's user namespace with it", a.Inv.ID, req.Pod.Owner)
	}
	return false, nil
}

// joinPooledPod: an app container whose pod runs in a pool user namespace
// but whose own spec does not ask for it. All containers of a pod share
// its user namespace (KEP-127), and one in the host's would be real root
// beside a pod that is not: it joins, whatever the node's mode. CRI-O
// copies the pod's annotations into every container (README, CRI-O), as
// containerd's pod_annotations does, but a containerd without that
// setting does not, and a container's own `host` must not undo its
// pod's choice. A container that asks for the host's, or shares a host namespace, is
// refused. A privileged one stays in the host's user namespace under
// mode always, and is refused otherwise (its pod asked for auto).
func (a *Call) joinPooledPod(s *specs.Spec, req oci.Request, caps capsOf) (bool, error) {
	id, owner := a.Inv.ID, req.Pod.Owner
	if req.Userns == oci.UsernsHost {
		return false, fmt.Errorf("container %s asks for the host's user namespace (%s=host), but its pod %s runs in a user namespace from runc-userns's pool, which all containers of a pod share: drop the annotation, or recreate the pod without %s=auto", id, oci.AnnotationUserns, owner, oci.AnnotationUserns)
	}
	if shared := hostNamespaces(s, hostNSDirs); len(shared) > 0 {
		return false, fmt.Errorf("container %s shares the host's %v namespace, but its pod %s runs in a user namespace from runc-userns's pool, which cannot: drop the host namespace, or recreate the pod without %s=auto", id, shared, owner, oci.AnnotationUserns)
	}
	priv, err := privileged(s, caps)
	if err != nil {
		return false, fmt.Errorf("container %s: %w", id, err)
	}
	if priv {
		if a.Cfg.Userns.Mode == config.ModeAlways {
			a.Log.Infof("container %s is privileged: it stays in the host's user namespace (userns.mode always), beside its pod %s, whose other containers keep the pod's user namespace from the pool; a privileged container is host root by design, and its capabilities would count for nothing in a user namespace", id, owner)
			return false, nil
		}
		return false, fmt.Errorf("container %s is privileged, but its pod %s runs in a user namespace from runc-userns's pool (%s=auto), where a privileged container's capabilities count for nothing against the host's devices, network namespace and /sys: drop privileged, or recreate the pod without %s=auto", id, owner, oci.AnnotationUserns, oci.AnnotationUserns)
	}
	a.Log.Infof("container %s: its pod %s runs in a user namespace from the pool: the container joins it (its spec has no %s annotation; on containerd, is the runtime handler's pod_annotations set?)", id, owner, oci.AnnotationUserns)
	return true, nil
}

// capsOf returns the spec's process.capabilities (oci.Document.Capabilities:
// decoded only when asked).
type capsOf func() (*specs.LinuxCapabilities, error)

func privileged(s *specs.Spec, caps capsOf) (bool, error) {
	c, err := caps()
	if err != nil {
		return false, err
	}
	return libuserns.Privileged(s, c), nil
}

// hostNSDirs are where the host's namespaces are read: the wrapper's own
// (it is started in the host's namespaces, by containerd's shim, CRI-O or
// conmon), then PID 1's, which root cannot read on some machines (a PID 1
// holding a capability the rest of the machine lacks).
var hostNSDirs = []string{"/proc/self/ns", "/proc/1/ns"}

// hostNamespaces lists the namespaces among network, pid and ipc that the
// container shares with the host: no entry, or a path to the host's own
// (the same namespace as one in nsDirs, hostNSDirs but in tests).
func hostNamespaces(s *specs.Spec, nsDirs []string) []specs.LinuxNamespaceType {
	var shared []specs.LinuxNamespaceType
	for _, t := range []specs.LinuxNamespaceType{specs.NetworkNamespace, specs.PIDNamespace, specs.IPCNamespace} {
		found, host := false, false
		if s.Linux != nil {
			for _, ns := range s.Linux.Namespaces {
				if ns.Type != t {
					continue
				}
				found = true
				host = ns.Path != "" && slices.ContainsFunc(nsDirs, func(dir string) bool {
					return sameFile(ns.Path, filepath.Join(dir, procNSName(t)))
				})
			}
		}
		if !found || host {
			shared = append(shared, t)
		}
	}
	return shared
}

func procNSName(t specs.LinuxNamespaceType) string {
	if t == specs.NetworkNamespace {
		return "net"
	}
	return string(t)
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// asksForUs says why a create whose argv the wrapper cannot fully use (an
// ID runc refuses, a flag the scanner does not know) concerns us, or ""
// if it does not: the operator gives every pod a user namespace, its
// bundle carries an annotation of ours, or its pod runs in a pool user
// namespace. Such a create fails with our message; any other is runc's
// business and gets runc's own error. A spec that cannot be read is
// runc's to report.
func (a *Call) asksForUs() string {
	if a.Cfg.Userns.Mode == config.ModeAlways {
		return fmt.Sprintf("userns.mode is %q in %s", config.ModeAlways, configName(a.Cfg))
	}
	bundle, err := bundleDir(a.Inv.Bundle)
	if err != nil {
		return ""
	}
	doc, err := oci.Load(bundle)
	if err != nil {
		return ""
	}
	keys := make([]string, 0, len(doc.Spec.Annotations))
	for k := range doc.Spec.Annotations {
		if strings.HasPrefix(k, oci.Prefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		return "its config.json has the annotation " + strings.Join(keys, ", ")
	}
	if pod := oci.PodOf(a.Inv.ID, doc.Spec.Annotations); a.podIsPooled(pod) {
		return "its pod " + pod.Owner + " runs in a pool user namespace"
	}
	return ""
}
