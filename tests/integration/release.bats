#!/usr/bin/env bats
# What delete gives back, and the calls the Go code answers before runc:
# a config it refuses, a runtime that is this binary; delete and exec of
# a container the wrapper never edited are runc's alone; a pooled
# container's delete waits for runc, forwards signals to it, and returns
# the pod's range once its last container is gone.

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

# root_hash ROOT: the name of a runc root in the state dir (internal
# layout's rootHash; ROOT clean and absolute).
root_hash() { printf %s "$1" | sha256sum | cut -c1-12; }

# runc_before_1_3: the real runc is older than 1.3 (runc-userns starts it in
# the pod's network namespace: package netns).
runc_before_1_3() { [[ "$("$REAL_RUNC" --version | awk 'NR == 1 {print $3}')" == 1.[012].* ]]; }

@test "a config that names this binary as the runtime: the Go code's refusal" {
	b=$(setup_bundle c1)
	start_container "$b" c1
	write_config "$(jq -n --arg rt "$WRAPPER" '{runtime: $rt}')"
	for argv in "state c1" "kill c1 0" "list"; do
		# shellcheck disable=SC2086 # split on purpose
		run -1 --separate-stderr wrapper $argv
		[ -z "$output" ]
		[[ "$stderr" == *"refusing to run runc-userns as the real runc"*"is this binary"* ]]
		[[ "$stderr" == *"(fix \"runtime\" in $RUNC_USERNS_CONFIG)"* ]]
	done
}

@test "a config the Go code refuses: its error, for state as for create" {
	b=$(setup_bundle c1)
	local cfg
	# Nothing to go on with (no runtime and stateDir to read): state fails
	# as create does.
	for cfg in '{"runtime": "runc"}' '{"Runtime": 1}' \
		'{"runtime": "/usr/sbin/runc"} x' '{"runtime": "/usr/sbin/runc"'; do
		echo "$cfg" >"$RUNC_USERNS_CONFIG"
		capture state wrapper state c1
		capture create wrapper create --bundle "$b" c1
		same_capture state create
		[ "$(cat "$TESTDIR/state.rc")" = 1 ]
		grep -qF "runc-userns config $RUNC_USERNS_CONFIG: " "$TESTDIR/state.err"
		[ -z "$(ls -A "$RUNC_ROOT" 2>/dev/null)" ]
	done
	# A mistake elsewhere in the file: create is refused for it, state
	# goes on to runc (with a warning: logging.bats).
	for cfg in '{"bogus": 1}' '{"userns": {"mode": "auto"}}'; do
		echo "$cfg" >"$RUNC_USERNS_CONFIG"
		capture state wrapper state c1
		capture create wrapper create --bundle "$b" c1
		capture runc plain_runc state c1
		same_capture state runc
		[ "$(cat "$TESTDIR/create.rc")" = 1 ]
		grep -qF "runc-userns config $RUNC_USERNS_CONFIG: " "$TESTDIR/create.err"
		[ -z "$(ls -A "$RUNC_ROOT" 2>/dev/null)" ]
	done
	# Unreadable: the Go code's error, not runc's.
	export RUNC_USERNS_CONFIG=$TESTDIR/nosuch.json
	run -1 --separate-stderr wrapper state c1
	[[ "$stderr" == *"read runc-userns config: "*"nosuch.json"* ]]
}

@test "delete and exec of a container the wrapper never edited: runc's answers, as is" {
	b=$(setup_bundle c1)
	start_container "$b" c1
	run -0 --separate-stderr wrapper exec c1 echo hello
	[ "$output" = hello ]
	# exec's flags before the ID, and the command's after it.
	run -0 --separate-stderr wrapper exec --env X=y -t=false c1 sh -c 'echo $X' --help
	[ "$output" = y ]
	# Not deleted while running: runc's refusal, as is.
	run -1 wrapper delete c1
	[[ "$output" == *"running"* ]]
	run -0 wrapper delete c1 --force
	[ ! -e "$RUNC_ROOT/c1" ]
	# No state.json and nothing of ours left for it (containerd's second
	# delete, --force, of every container): runc's delete, and its error.
	run -1 wrapper delete c1
	[[ "$output" == *"does not exist"* ]]
	run -0 wrapper delete --force c1
	# No state.json, but an in-flight marker of the ID (a create killed
	# before runc had the container): released by the pool's records,
	# marker included.
	mkdir -p "$STATE_DIR/inflight"
	touch "$STATE_DIR/inflight/$(root_hash "$RUNC_ROOT")-c1"
	run -1 wrapper delete c1
	[[ "$output" == *"does not exist"* ]]
	[ ! -e "$STATE_DIR/inflight/$(root_hash "$RUNC_ROOT")-c1" ]
}

@test "exec of a userns container runs in it; its delete waits for runc, then gives the range back" {
	b=$(pooled_bundle c1)
	start_container "$b" c1
	grep -qF runc-userns.io/stamp "$RUNC_ROOT/c1/state.json"
	[ "$(pool_json | jq length)" = 1 ]
	run -0 --separate-stderr wrapper exec c1 cat /proc/self/uid_map
	[ "$(echo "$output" | awk '{print $2}')" -ge "$POOL_BASE" ]
	# Running, no --force: runc's refusal, and the range stays.
	run -1 wrapper delete c1
	[[ "$output" == *"running"* ]]
	[ "$(pool_json | jq length)" = 1 ]
	run -0 wrapper delete --force c1
	[ ! -e "$RUNC_ROOT/c1" ]
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
	[ -z "$(find "$STATE_DIR/pods" "$STATE_DIR/inflight" "$STATE_DIR/containers" -mindepth 1)" ]
}

@test "a pod's containers leave its range one by one, the last one returns it" {
	sb=$(pooled_bundle sb)
	app=$(pooled_bundle app)
	as_pod "$sb" sb sandbox
	as_pod "$app" sb container
	start_container "$sb" sb
	start_container "$app" app
	[ "$(pool_json | jq -c '.[0].members')" = '["sb","app"]' ]
	run -0 wrapper delete --force app
	[ "$(pool_json | jq -c '.[0].members')" = '["sb"]' ]
	[ -n "$(find "$STATE_DIR/pods" -mindepth 1)" ]
	run -0 wrapper delete --force sb
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
	[ -z "$(find "$STATE_DIR/pods" "$STATE_DIR/inflight" "$STATE_DIR/containers" -mindepth 1)" ]
}

@test "a pod in a network namespace made elsewhere (containerd's CNI netns): its deletes release, netns records included" {
	pod_elsewhere sb app
	if runc_before_1_3; then
		# runc < 1.3: the wrapper started runc in the namespace and
		# recorded it (netns.Record).
		[ -f "$(echo "$STATE_DIR"/containers/*/app/netns)" ]
		[ -f "$(echo "$STATE_DIR"/containers/*/sb/netns)" ]
	fi
	run -0 wrapper delete --force app
	[ "$(pool_json | jq -c '.[0].members')" = '["sb"]' ]
	run -0 wrapper delete --force sb
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(find "$STATE_DIR/pods" "$STATE_DIR/inflight" "$STATE_DIR/containers" -mindepth 1)" ]
	umount "$TESTDIR/netns"
	[ -z "$(test_mounts)" ]
}

@test "delete --debug of a pooled container logs where its time went" {
	b=$(pooled_bundle c1)
	start_container "$b" c1
	run -0 wrapper --debug --log "$TESTDIR/log" delete --force c1
	grep -q "container c1: delete took" "$TESTDIR/log"
	[ "$(pool_json | jq length)" = 0 ]
}

@test "a signal to a delete while it waits for runc reaches runc; the release comes after it" {
	local i
	b=$(pooled_bundle c1)
	start_container "$b" c1
	# A runtime whose delete waits for SIGTERM, then deletes.
	cat >"$TESTDIR/slow-runc" <<-EOF
		#!/bin/sh
		case " \$* " in
		*" delete "*)
			trap 'echo TERM >"$TESTDIR/got"; exec "$REAL_RUNC" "\$@"' TERM
			touch "$TESTDIR/waiting"
			for i in \$(seq 200); do sleep 0.05; done
			exit 9 ;;
		esac
		exec "$REAL_RUNC" "\$@"
	EOF
	chmod +x "$TESTDIR/slow-runc"
	write_config "$(jq -n --arg rt "$TESTDIR/slow-runc" '{runtime: $rt}')"
	"$WRAPPER" --root "$RUNC_ROOT" delete --force c1 2>"$TESTDIR/delete.err" &
	pid=$!
	for i in $(seq 100); do
		[ -e "$TESTDIR/waiting" ] && break
		sleep 0.05
	done
	[ -e "$TESTDIR/waiting" ] || fail "the runtime's delete did not start"
	kill -TERM "$pid"
	status=0
	wait "$pid" || status=$?
	[ "$status" = 0 ] || fail "delete: status $status, $(cat "$TESTDIR/delete.err")"
	[ "$(cat "$TESTDIR/got")" = TERM ]
	[ ! -e "$RUNC_ROOT/c1" ]
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
}

@test "a caller that ignores SIGCHLD: delete of a userns container succeeds and releases" {
	b=$(pooled_bundle c1)
	start_container "$b" c1
	# With SIGCHLD ignored, the kernel reaps children unwaited unless the
	# process handles the signal: the wrapper must still get runc's status.
	run -0 perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV or die "exec: $!"' "$WRAPPER" --root "$RUNC_ROOT" delete --force c1
	[ ! -e "$RUNC_ROOT/c1" ]
	[ "$(pool_json | jq length)" = 0 ]
}

# other_config: $TESTDIR/other.json, the test's config but for another
# stateDir ($TESTDIR/other), as the operator's config at the default path
# may be while a container was created with RUNC_USERNS_CONFIG.
other_config() {
	jq --arg state "$TESTDIR/other" '.stateDir = $state' "$RUNC_USERNS_CONFIG" >"$TESTDIR/other.json"
}

# other_pool: the pool of $TESTDIR/other as JSON.
other_pool() {
	RUNC_USERNS_CONFIG=$TESTDIR/other.json "$WRAPPER" pool ls --json
}

@test "a delete under a config that names another stateDir releases in the stamp's, when that one is root-owned and private" {
	other_config
	b=$(pooled_bundle moved)
	start_container "$b" moved
	[ "$(pool_json | jq length)" = 1 ]
	# Not private (readable by others): its key verifies nothing, nothing
	# is released, and the warning says why and what to do.
	chmod 0755 "$STATE_DIR"
	RUNC_USERNS_CONFIG=$TESTDIR/other.json run -0 --separate-stderr envless_wrapper delete --force moved
	[[ "$stderr" == *"it names stateDir $STATE_DIR, whose key is not taken"*"has mode 0755"*"pool gc"* ]] || fail "stderr: $stderr"
	[ "$(pool_json | jq length)" = 1 ]
	chmod 0711 "$STATE_DIR"
	run -0 "$WRAPPER" pool gc
	[ "$(pool_json | jq length)" = 0 ]

	# Root-owned and private, as a configured stateDir: released there.
	start_container "$b" moved
	[ "$(pool_json | jq length)" = 1 ]
	RUNC_USERNS_CONFIG=$TESTDIR/other.json run -0 --separate-stderr envless_wrapper --debug delete --force moved
	[[ "$stderr" == *"written for stateDir $STATE_DIR"*"released there"* ]] || fail "stderr: $stderr"
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
	[ -z "$(find "$STATE_DIR/pods" "$STATE_DIR/inflight" "$STATE_DIR/containers" -mindepth 1)" ]
	[ ! -e "$TESTDIR/other/pool.d" ]
}

@test "a create under another config than the bundle's first: the earlier container's range goes back in the stamp's stateDir" {
	other_config
	b=$(pooled_bundle again)
	start_container "$b" again
	[ "$(cexec again cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	# Its delete lost: runc no longer has it, its range is still held.
	plain_runc delete --force again
	[ "$(pool_json | jq length)" = 1 ]
	# The bundle again, under the other config: its stamp verifies with
	# the key of the stateDir it names, whose range goes back.
	RUNC_USERNS_CONFIG=$TESTDIR/other.json "$WRAPPER" --debug --root "$RUNC_ROOT" create --bundle "$b" again \
		</dev/null >"$TESTDIR/create.out" 2>&1 || fail "create: $(cat "$TESTDIR/create.out")"
	output=$(cat "$TESTDIR/create.out")
	[[ "$output" == *"released what the earlier container again of its bundle held in stateDir $STATE_DIR"* ]] || fail "create: $output"
	[ "$(pool_json | jq length)" = 0 ]
	[ "$(other_pool | jq -c '[.[] | .members]')" = '[["again"]]' ]
	wrapper start again
	[ "$(cexec again cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	RUNC_USERNS_CONFIG=$TESTDIR/other.json run -0 wrapper delete --force again
	[ "$(other_pool | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
	[ -z "$(find "$STATE_DIR/pods" "$STATE_DIR/inflight" "$STATE_DIR/containers" "$TESTDIR/other/pods" "$TESTDIR/other/containers" -mindepth 1)" ]
}
