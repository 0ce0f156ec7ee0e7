package fault

// EnvKillAt names the step to die at; EnvStopAt the step to stop at. Only
// a build with the tag "faults" reads them.
const (
	EnvKillAt = "RUNC_USERNS_TEST_KILL_AT"
	EnvStopAt = "RUNC_USERNS_TEST_STOP_AT"
)

// The steps of create, in order, and of delete.
const (
	Joined      = "joined"       // a container:<ID> target's namespaces are pinned
	Allocated   = "allocated"    // the pool range is taken
	Pinned      = "pinned"       // the pod's user namespace is pinned
	Staged      = "staged"       // the idmapped rootfs and mounts are attached
	Written     = "written"      // config.json is rewritten
	RuncStarted = "runc-started" // runc create (or, for a delete, runc delete) is running

	Released = "released" // delete: the pod's range is back in the pool, its pin not yet dropped
)
