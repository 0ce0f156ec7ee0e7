// Package create is the create/run pipeline, and the release that is its
// other half at delete. In order, each step in its file:
//
//	create.go      Call.Create: the ID, the bundle, config.json; creation.do runs the rest
//	request.go     the request: annotations, a pool user namespace or not;
//	stamp.go         an earlier create's stamp verified and its edits undone;
//	callerspec.go    the caller's own mappings and user namespace checked
//	plan.go        the plan value; creation.plan fills it, the only step with side effects:
//	pidjoin.go       a container:<ID> PID namespace, and the user namespace owning it
//	userns.go        the pod's range and pinned user namespace (take, pin, join, leave)
//	podns.go         the pod's own IPC and UTS namespaces, for CRI-O's pinned ones
//	mounts.go        rootfs staging, idmapped binds, sources under an earlier mount
//	netns.go         a network namespace the pod's user namespace does not own
//	modifiers.go   the spec edits, pure functions of the plan, the signed stamp last
//	create.go      validate, write config.json atomically, run runc, detach the staging
//	rollback.go    a failed create gives back what the plan took, last first
//	release.go     delete gives back what the container held, by its verified stamp
//
// netns.go also holds exec's half: the network namespace a create entered for runc.
// The files on disk are package state's and pool's; the stamp's format is internal/oci's.
package create
