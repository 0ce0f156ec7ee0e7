package oci

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// Annotations read or written by runc-userns. Every key under Prefix is
// listed here; an unknown key under the prefix is reported (a typo such as
// "runc-userns.io/usern" must not silently run a pod without isolation).
const (
	Prefix = "runc-userns.io/"

	// AnnotationUserns asks for a user namespace: "auto" (allocate a range
	// from the pool for this pod) or "host" (none, also under mode "always").
	AnnotationUserns = Prefix + "userns"
	// AnnotationPIDNamespace is "container:<ID>": join the PID namespace of
	// container <ID> of the same pod.
	AnnotationPIDNamespace = Prefix + "pid-namespace"
	// AnnotationIdmapSkip lists container paths (comma-separated) whose bind
	// mounts must not be idmapped.
	AnnotationIdmapSkip = Prefix + "idmap-skip"

	// AnnotationStamp is written by runc-userns on every spec it edits: a
	// JSON Stamp recording what was allocated and what was changed, so that
	// delete can release it (from runc's state, with no environment) and a
	// second create of the same bundle can undo the first one's edits.
	AnnotationStamp = Prefix + "stamp"
	// AnnotationIdmapSkipped is written by runc-userns: the container paths
	// of bind mounts it would have idmapped but whose filesystem cannot be
	// (they stay plain binds; the log says why).
	AnnotationIdmapSkipped = Prefix + "idmap-skipped"
)

// Pod identity annotations set by the CRI implementations.
const (
	CRIContainerType  = "io.kubernetes.cri.container-type"
	CRISandboxID      = "io.kubernetes.cri.sandbox-id"
	CRIOContainerType = "io.kubernetes.cri-o.ContainerType"
	CRIOSandboxID     = "io.kubernetes.cri-o.SandboxID"

	containerTypeSandbox = "sandbox"
	// ContainerTypeContainer is the container type of a pod's app
	// containers, in both CRIs' annotations.
	ContainerTypeContainer = "container"
)

// MaxAnnotationValue bounds the values we parse; pod authors control them.
// Our own stamp carries the spec's mounts and may be larger.
const (
	MaxAnnotationValue = 4096
	MaxStampValue      = 1 << 20
)

// UsernsMode is the value of AnnotationUserns.
type UsernsMode string

const (
	UsernsUnset UsernsMode = ""
	UsernsAuto  UsernsMode = "auto"
	UsernsHost  UsernsMode = "host"
)

// Pod says which pod a container belongs to.
type Pod struct {
	// Owner is the pod's sandbox ID, or the container's own ID for a
	// container that belongs to no pod. Pool ranges are held per Owner.
	Owner string
	// Sandbox is true for the pod's sandbox and for a standalone container:
	// the container that creates the pod's namespaces.
	Sandbox bool
	// InPod is true when a CRI implementation set pod annotations.
	InPod bool
}

// Request is everything the annotations ask of us, parsed once.
type Request struct {
	Userns       UsernsMode
	PIDNamespace string
	IdmapSkip    []string
	Pod          Pod
	Stamp        *Stamp
	// Unknown lists keys under Prefix that this version does not know.
	Unknown []string
}

// Stamp records the edits runc-userns made to a spec.
type Stamp struct {
	Version int    `json:"v"`
	Owner   string `json:"owner"`
	// ID, Root and Bundle are the container the stamp was written for (its
	// ID, absolute runc root and bundle, the latter two clean): the MAC
	// covers them, so a stamp copied onto another container does not
	// verify for it (Verify). A version 1 stamp has no ID and Bundle.
	ID       string `json:"id,omitempty"`
	Root     string `json:"root"`
	Bundle   string `json:"bundle,omitempty"`
	StateDir string `json:"stateDir"`
	Runtime  string `json:"runtime,omitempty"`
	HostID   uint32 `json:"hostID"`
	Size     uint32 `json:"size"`
	// UsernsPath is the namespace path we added (the pod's pin).
	UsernsPath string `json:"usernsPath,omitempty"`
	// Mappings is true when the uid/gid mappings are ours.
	Mappings bool `json:"mappings,omitempty"`
	// JoinedMappings is true when the uid/gid mappings are those of the
	// user namespace the caller's spec joins by path, which we added for
	// a runtime that does not read them from the namespace (runc 1.1).
	JoinedMappings bool `json:"joinedMappings,omitempty"`
	// Netns is the network namespace path we removed from the spec and
	// start runc in instead (runc < 1.3, a network namespace the pod's
	// user namespace does not own).
	Netns string `json:"netns,omitempty"`
	// NetSysctls are the spec's net.* sysctls, as the caller gave them,
	// that we removed from the spec and wrote into the network namespace
	// ourselves (one the pod's user namespace does not own, which cannot
	// write them there).
	NetSysctls map[string]string `json:"netSysctls,omitempty"`
	// PodNS are the IPC and UTS namespace paths of the caller's spec, by
	// namespace type, that we pointed at the pod's own (a CRI-O pod's
	// pinns namespaces, which the host's user namespace owns).
	PodNS map[string]string `json:"podNS,omitempty"`
	// Rootfs is root.path before we pointed it at the staging mount.
	Rootfs string `json:"rootfs,omitempty"`
	// Staged is the staging mount we pointed root.path at.
	Staged string `json:"staged,omitempty"`
	// Mounts is the spec's mounts array before we edited it (idmap), so
	// that a second create of the same bundle starts from the caller's.
	Mounts json.RawMessage `json:"mounts,omitempty"`
	// MAC authenticates the stamp (see Sign): pod authors control
	// annotations, and a forged stamp must not be able to choose mounts,
	// a runtime to execute, or a range to release.
	MAC string `json:"mac,omitempty"`
}

// Encode returns the stamp as an annotation value.
func (s *Stamp) Encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		// Only Mounts can fail, and it is always made by json.Marshal.
		panic(fmt.Sprintf("encode stamp: %v", err))
	}
	return string(b)
}

// DecodeStamp parses an AnnotationStamp value.
func DecodeStamp(v string) (*Stamp, error) {
	var s Stamp
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadAnnotation, AnnotationStamp, err)
	}
	if s.Version != 1 && s.Version != StampVersion {
		return nil, fmt.Errorf("%w: %s: unsupported version %d (written by a newer runc-userns?)", ErrBadAnnotation, AnnotationStamp, s.Version)
	}
	return &s, nil
}

// PodOf works out a container's pod from the CRI annotations (containerd
// first, then CRI-O).
func PodOf(id string, annotations map[string]string) Pod {
	ctype, sandbox := annotations[CRIContainerType], annotations[CRISandboxID]
	if ctype == "" && sandbox == "" {
		ctype, sandbox = annotations[CRIOContainerType], annotations[CRIOSandboxID]
	}
	switch {
	case ctype == "" && sandbox == "":
		return Pod{Owner: id, Sandbox: true}
	case ctype == containerTypeSandbox || sandbox == "" || sandbox == id:
		return Pod{Owner: id, Sandbox: true, InPod: true}
	}
	return Pod{Owner: sandbox, InPod: true}
}

// CheckPodIdentity refuses pod identity annotations no CRI writes: both
// containerd's and CRI-O's, or one of them present but empty. containerd
// sets its own after the pod annotations it passes on, but CRI-O copies
// every pod annotation onto the sandbox's spec after its own, so there a
// pod author can write any of them (see also PodCgroup). It is checked
// where membership is acted on (a pool join, a PID namespace join), not on
// specs that ask nothing of the wrapper.
func CheckPodIdentity(id string, annotations map[string]string) error {
	var cri, crio []string
	for _, k := range []string{CRIContainerType, CRISandboxID, CRIOContainerType, CRIOSandboxID} {
		v, ok := annotations[k]
		if !ok {
			continue
		}
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("%w: container %s: %s is present but empty: no CRI implementation writes that; remove it", ErrBadAnnotation, id, k)
		}
		if strings.HasPrefix(k, "io.kubernetes.cri-o.") {
			crio = append(crio, k)
		} else {
			cri = append(cri, k)
		}
	}
	if len(cri) > 0 && len(crio) > 0 {
		return fmt.Errorf("%w: container %s carries both containerd's pod annotations (%s) and CRI-O's (%s): each CRI implementation writes only its own, so one set was written by someone else (on CRI-O, a pod author can); remove the foreign ones", ErrBadAnnotation, id, strings.Join(cri, ", "), strings.Join(crio, ", "))
	}
	return nil
}

// PodCgroup is the cgroup parent of a spec's linux.cgroupsPath: the slice
// of runc's systemd form "slice:prefix:name" (no '/' in any part), else the
// path's directory.
// Every CRI implementation puts all the containers of a pod, sandbox
// included, in the pod's cgroup (kubelet's cgroup_parent), which pod
// authors do not choose: where annotations say a container belongs to a
// pod, this says whether it can. "" when the spec names no cgroup.
func PodCgroup(cgroupsPath string) string {
	p := cgroupsPath
	if p == "" {
		return ""
	}
	if !strings.Contains(p, "/") && strings.Count(p, ":") == 2 {
		slice, _, _ := strings.Cut(p, ":")
		return slice
	}
	return filepath.Dir(filepath.Clean(p))
}

// ParseRequest reads our annotations from a spec. It fails on a value we
// refuse; the error names the container, the key and the value.
func ParseRequest(id string, annotations map[string]string) (Request, error) {
	req := Request{Pod: PodOf(id, annotations)}
	for key, value := range annotations {
		if !strings.HasPrefix(key, Prefix) {
			continue
		}
		if max := MaxAnnotationValue; len(value) > max && key != AnnotationStamp || len(value) > MaxStampValue {
			if key == AnnotationStamp {
				max = MaxStampValue
			}
			return req, fmt.Errorf("%w: container %s: %s is %d bytes long, more than %d", ErrBadAnnotation, id, key, len(value), max)
		}
		if !utf8.ValidString(value) {
			return req, fmt.Errorf("%w: container %s: %s=%q is not valid UTF-8", ErrBadAnnotation, id, key, value)
		}
		switch key {
		case AnnotationUserns:
			switch m := UsernsMode(strings.TrimSpace(value)); m {
			case UsernsAuto, UsernsHost:
				req.Userns = m
			default:
				return req, fmt.Errorf("%w: container %s: %s=%q: want %q (a user namespace from the node's pool) or %q (none)", ErrBadAnnotation, id, key, value, UsernsAuto, UsernsHost)
			}
		case AnnotationPIDNamespace:
			req.PIDNamespace = value
		case AnnotationIdmapSkip:
			for _, p := range strings.Split(value, ",") {
				if p = strings.TrimSpace(p); p != "" {
					req.IdmapSkip = append(req.IdmapSkip, p)
				}
			}
		case AnnotationIdmapSkipped:
			// ours, informational
		case AnnotationStamp:
			s, err := DecodeStamp(value)
			if err != nil {
				return req, fmt.Errorf("container %s: %w", id, err)
			}
			req.Stamp = s
		default:
			req.Unknown = append(req.Unknown, key)
		}
	}
	sort.Strings(req.Unknown)
	return req, nil
}
