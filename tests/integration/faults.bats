#!/usr/bin/env bats
# The wrapper killed (SIGKILL, as an OOM kill or a crashing shim) at each
# step of create: delete --force gives back everything, and the next
# create works.

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

# killed_create STEP: create a pool pod, killed at STEP; then delete --force.
killed_create() {
	local step=$1 b
	b=$(setup_bundle "k-$step")
	annotate "$b" runc-userns.io/userns auto
	# Output to a file, not a pipe: the container's init inherits it, and
	# once the wrapper is dead nothing would close a pipe for `run`.
	local status=0
	env RUNC_USERNS_TEST_KILL_AT="$step" "$WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" "k-$step" \
		</dev/null >"$TESTDIR/k-$step.out" 2>&1 || status=$?
	[ "$status" = 137 ] || fail "create was not killed at $step: status $status, output $(cat "$TESTDIR/k-$step.out")"
	# runc create may still be running when the wrapper died: let it end
	# (containerd, too, deletes only after create returned).
	for _ in $(seq 100); do pgrep -f -- "create --bundle $b k-$step\$" >/dev/null || break; sleep 0.1; done
	run wrapper delete --force "k-$step"
	[ -z "$(staging_mounts)" ] || fail "staging mounts left after $step: $(staging_mounts)"
	[ "$(pool_json | jq length)" = 0 ] || fail "pool not empty after $step: $(pool_json)"
	[ ! -e "$STATE_DIR/pods/k-$step" ] || fail "pod dir left after $step"
	[ -z "$(ls "$STATE_DIR/containers" 2>/dev/null)" ] || fail "container dir left after $step"
	[ -z "$(awk -v d="$STATE_DIR/pods/" 'index($5, d) == 1' /proc/self/mountinfo)" ] || fail "pin left after $step"
	# The next create of the same bundle works (under a new ID: this VM's
	# PID 1 does not reap orphans, and runc refuses a cgroup that still
	# holds the killed create's zombie init).
	start_container "$b" "k-$step-again"
	[ "$(cexec "k-$step-again" cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	wrapper delete --force "k-$step-again"
}

@test "killed after the range was allocated" {
	killed_create allocated
}

@test "killed after the pod's user namespace was pinned" {
	killed_create pinned
}

@test "killed after the staging mounts were attached" {
	killed_create staged
}

@test "killed after config.json was written" {
	killed_create written
}

@test "killed while runc create runs" {
	killed_create runc-started
}

@test "killed after a container:<ID> target's namespaces were pinned" {
	t=$(setup_bundle target)
	b=$(setup_bundle k-joined)
	annotate "$t" runc-userns.io/userns auto
	annotate "$b" runc-userns.io/pid-namespace container:target
	start_container "$t" target
	local status=0
	env RUNC_USERNS_TEST_KILL_AT=joined "$WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" k-joined \
		</dev/null >"$TESTDIR/k-joined.out" 2>&1 || status=$?
	[ "$status" = 137 ] || fail "create was not killed at joined: status $status, output $(cat "$TESTDIR/k-joined.out")"
	# The pins of the target's namespaces exist now...
	[ -n "$(staging_mounts)" ]
	# ...and delete --force of a container runc never had drops them.
	run wrapper delete --force k-joined
	[ -z "$(staging_mounts)" ] || fail "pins left: $(staging_mounts)"
	[ -z "$(ls "$STATE_DIR/containers/"*/k-joined 2>/dev/null)" ] || fail "container dir left"
	# The target keeps its range; the next create joins it, and keeps no
	# pin once it returned.
	[ "$(pool_json | jq -r '[.[].owner] | join(",")')" = target ]
	start_container "$b" k-joined-again
	[ -z "$(staging_mounts)" ]
	[ "$(cexec k-joined-again readlink /proc/self/ns/pid)" = "$(cexec target readlink /proc/self/ns/pid)" ]
	wrapper delete --force k-joined-again
	wrapper delete --force target
	[ "$(pool_json | jq length)" = 0 ]
}
