package nsjoin

import "github.com/runc-userns/runc-userns/internal/oci"

// Pod is the pod a container belongs to.
type Pod struct {
	// ID is the pod's sandbox ID: the sandbox's own ID for the sandbox.
	// Empty when the container belongs to no pod.
	ID string
}

// InPod reports whether the container belongs to a pod.
func (p Pod) InPod() bool { return p.ID != "" }

// PodOf works out a container's pod from its annotations, by the wrapper's
// own rules (oci.PodOf: containerd's keys first, then CRI-O's). A
// container with neither belongs to no pod.
func PodOf(id string, annotations map[string]string) Pod {
	if p := oci.PodOf(id, annotations); p.InPod {
		return Pod{ID: p.Owner}
	}
	return Pod{}
}

// SamePod reports whether a container in pod joiner may join the PID
// namespace of one in pod target: both in the same pod (a sandbox counts
// as a member of its own pod, so dockershim's container:<sandbox> is
// allowed), or neither in any pod (two standalone containers, as
// `docker run --pid container:x` makes). A pod member and a container of
// no pod never share: that would let a pod reach outside itself.
func SamePod(joiner, target Pod) bool {
	return joiner.ID == target.ID
}
