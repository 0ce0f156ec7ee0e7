// Package fault lets the fault-injection tests kill the wrapper at a named
// step of create or delete: with RUNC_USERNS_TEST_KILL_AT=<step> in its
// environment, the wrapper SIGKILLs itself when it reaches that step, as an
// OOM kill or a crashing shim would. With RUNC_USERNS_TEST_STOP_AT=<step>
// it SIGSTOPs itself there instead, so that a test can act while the
// create is in flight and then SIGCONT it.
//
// The steps, in the order a create reaches them: joined (a container:<ID>
// target's namespaces are pinned), allocated (the pool range is taken),
// pinned (the pod's user namespace is pinned), staged (the idmapped rootfs
// and mounts are attached), written (config.json is rewritten),
// runc-started (runc create is running). A delete reaches runc-started
// (runc delete is running) and released (the pod's range is back in the
// pool, its pin not yet dropped). A step a call does not take is never
// reached: the variable then does nothing.
//
// The switches exist only in a binary built with the build tag "faults"
// (make build-faults: bin/runc-userns-faults, which the bats fault tests
// run and nothing installs). Without the tag, Point is an empty function
// and neither variable is read: the production binary's path is the same
// whether or not a caller sets them, and the variables' names are not in
// it (faults.bats checks both). Enabled says which build this is.
//
// With the tag, Point costs two getenvs and writes nothing to disk.
// Kernel requirement: kill(2) of the process itself.
package fault
