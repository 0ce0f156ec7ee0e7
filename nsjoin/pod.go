package nsjoin

// Pod is the pod a container belongs to, as the caller works it out from
// its annotations (containerd's keys first, then CRI-O's: oci.PodOf).
type Pod struct {
	// ID is the pod's sandbox ID: the sandbox's own ID for the sandbox.
	// Empty when the container belongs to no pod.
	ID string
}

// InPod reports whether the container belongs to a pod.
func (p Pod) InPod() bool { return p.ID != "" }

// SamePod reports whether a container in pod joiner may join the PID
// namespace of one in pod target: both in the same pod (a sandbox counts
// as a member of its own pod, so dockershim's container:<sandbox> is
// allowed), or neither in any pod (two standalone containers, as
// `docker run --pid container:x` makes). A pod member and a container of
// no pod never share: that would let a pod reach outside itself.
func SamePod(joiner, target Pod) bool {
	return joiner.ID == target.ID
}
