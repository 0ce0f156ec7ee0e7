#!/usr/bin/env bats
# The pass-through fast path (fastpath_linux.c): state, kill, start and the
# other bare pass-through commands, and delete and exec of a container the
# wrapper never edited, exec runc before the Go runtime starts (no thread
# is created before runc's execve); a delete of a container it edited
# starts runc first and, in the usual case, releases what the container
# held without the Go runtime (fp_release); RUNC_USERNS_FASTPATH=0 gives
# the same answers through the Go code; whatever the fast path is not sure
# of reaches the Go code.

load helpers

setup() {
	requires root
	command -v strace >/dev/null || skip "strace not installed (make deps)"
	setup_env
}

teardown() {
	# A test that failed while it held the pool's lock (hold_pool_lock):
	# its holder's loop ends on the unlock file (killing flock would leave
	# the loop holding the lock), and a create of gated_create that waited
	# for the lock goes on; it gets 10 s to finish, so that teardown_env
	# deletes its container, before it is killed (its runc at the gate
	# with it: PR_SET_PDEATHSIG).
	if [ -n "${LOCK_HOLDER:-}" ]; then
		touch "$TESTDIR/unlock"
		wait "$LOCK_HOLDER" 2>/dev/null || true
	fi
	if [ -n "${WPID:-}" ]; then
		for _ in $(seq 200); do
			kill -0 "$WPID" 2>/dev/null || break
			sleep 0.05
		done
		kill "$WPID" 2>/dev/null || true
		wait "$WPID" 2>/dev/null || true
	fi
	teardown_env
}

# traced NAME ARGS...: the wrapper with the test's root under strace, the
# trace of execve and thread/process creation in $TESTDIR/NAME.trace.
traced() {
	local name=$1
	shift
	strace -f -qq -s 4096 -o "$TESTDIR/$name.trace" -e trace=execve,clone,clone3,fork,vfork \
		"$WRAPPER" --root "$RUNC_ROOT" "$@"
}

# root_hash ROOT: layout.go's rootHash, the name of a runc root in the
# state dir (ROOT clean and absolute).
root_hash() { printf %s "$1" | sha256sum | cut -c1-12; }

# traced_alone NAME ARGS...: traced, but the wrapper's process alone (no
# -f): strace waits for every process it follows, and a created
# container's init lives until start.
traced_alone() {
	local name=$1
	shift
	strace -qq -s 4096 -o "$TESTDIR/$name.trace" -e trace=execve,clone,clone3,fork,vfork \
		"$WRAPPER" --root "$RUNC_ROOT" "$@"
}

# fast_path_taken NAME: in the trace, the real runc was exec'd (argv[0]
# its path) before anything was cloned: no Go runtime ran.
fast_path_taken() {
	awk -v rt="execve(\"$REAL_RUNC\", [\"$REAL_RUNC\", " '
		index($0, rt) { found = 1; exit }
		/(^| )(clone3?|v?fork)\(/ { cloned = 1; exit }
		END { exit !(found && !cloned) }' "$TESTDIR/$1.trace" || {
		echo "runc was not exec'd before the first clone:" >&2
		cat "$TESTDIR/$1.trace" >&2
		return 1
	}
}

# early_start_taken NAME: in the trace, the first process or thread made
# is a vfork-style child (posix_spawn) that execs the real runc, and it
# does so before anything else is cloned: runc started before the Go
# runtime, which then made its threads.
early_start_taken() {
	awk -v rt="execve(\"$REAL_RUNC\", [\"$REAL_RUNC\", " '
		/(^| )(clone3?|v?fork)\(/ { if (++cloned == 1 && /CLONE_VFORK/) spawned = 1; if (cloned > 1) exit }
		spawned && index($0, rt) { found = 1; exit }
		END { exit !(spawned && found) }' "$TESTDIR/$1.trace" || {
		echo "runc was not started by a vfork child before the first thread:" >&2
		cat "$TESTDIR/$1.trace" >&2
		return 1
	}
	go_path_taken "$1"
}

# go_runtime_ran NAME: in the trace, the wrapper's own process (the first
# line's) made a thread: its Go runtime started. A delete the constructor
# released by itself (fp_release) makes none.
go_runtime_ran() {
	awk 'NR == 1 { pid = $1 } $1 == pid && /CLONE_THREAD/ { found = 1; exit } END { exit !found }' "$TESTDIR/$1.trace"
}

# go_path_taken NAME: the trace shows the Go runtime ran first.
go_path_taken() {
	if fast_path_taken "$1" 2>/dev/null; then
		echo "the fast path was taken:" >&2
		cat "$TESTDIR/$1.trace" >&2
		return 1
	fi
}

@test "start, state and kill exec runc before any thread is created" {
	b=$(setup_bundle c1)
	wrapper create --bundle "$b" c1 </dev/null >/dev/null
	run -0 traced start start c1
	fast_path_taken start
	wait_status c1 running
	run -0 --separate-stderr traced state state c1
	fast_path_taken state
	[ "$(echo "$output" | jq -r .status)" = running ]
	run -0 traced kill kill c1 KILL
	fast_path_taken kill
	wait_status c1 stopped
	# Global flags in both forms, and --.
	run -0 traced flags --debug --log-format=json -- state c1
	fast_path_taken flags
	# The Go code, for comparison: the runtime's threads come first.
	export RUNC_USERNS_FASTPATH=0
	run -0 traced slow state c1
	go_path_taken slow
	unset RUNC_USERNS_FASTPATH
	# Not a pass-through command: the Go code.
	run -1 traced run run --bundle "$b" c1
	go_path_taken run
}

@test "create of a container that asks nothing of the wrapper execs runc before any thread is created" {
	b=$(setup_bundle c1)
	as_pod "$b" plainpod container
	# Output to files: the container's init holds the create's stdio.
	traced_alone create create --bundle "$b" c1 </dev/null >/dev/null 2>"$TESTDIR/create.err"
	fast_path_taken create
	wait_status c1 created
	# runc's own refusal of a second one, as is.
	run -1 traced again create -b="$b" c1 --pid-file "$TESTDIR/pid" </dev/null
	fast_path_taken again
	[[ "$output" == *"already exists"* ]]
	# What the Go code acts on, or might: a pod's sandbox asking for a
	# user namespace, then an app container of that pod without the
	# annotation (it joins the pod's), and one that asks itself.
	s=$(setup_bundle sb)
	as_pod "$s" sb sandbox
	annotate "$s" runc-userns.io/userns auto
	traced_alone sandbox create --bundle "$s" sb </dev/null >/dev/null 2>"$TESTDIR/sb.err"
	go_path_taken sandbox
	a=$(setup_bundle app)
	as_pod "$a" sb container
	traced_alone app create --bundle "$a" app </dev/null >/dev/null 2>"$TESTDIR/app.err"
	go_path_taken app
	[ "$(jq -r '.linux.namespaces[] | select(.type == "user") | .path' "$a/config.json")" = "$STATE_DIR/pods/sb/userns" ]
	# Not sure: no --bundle (the working directory), a bundle path Go
	# would clean, a spec that is not valid JSON.
	run -1 traced cwd create c2 </dev/null
	go_path_taken cwd
	setup_bundle c2 >/dev/null
	traced_alone unclean create --bundle "$b/../c2" c2 </dev/null >/dev/null 2>"$TESTDIR/unclean.err"
	go_path_taken unclean
	d=$(setup_bundle bad)
	printf '{"ociVersion": 1.0.2}' >"$d/config.json"
	run -1 traced bad create --bundle "$d" bad </dev/null
	go_path_taken bad
	[[ "$output" == *"invalid JSON at offset"* ]]
	for id in app sb c1 c2; do wrapper delete --force "$id"; done
	pool_empty
}

@test "create, RUNC_USERNS_FASTPATH=0: the same stdout, stderr, exit status and container" {
	local argv id
	b=$(setup_bundle c0)
	w=$(setup_bundle wrong)
	# A value of the wrong type: runc's refusal through the fast path, the
	# Go code's own refusal without it; both say which field.
	update_config "$w" '.process.args = "sh"'
	for argv in "create --bundle $b ../x" "create --bundle $TESTDIR/nosuch x" "create --help" "create --bundle $b --bogus c9" "create --bundle $b"; do
		# shellcheck disable=SC2086 # split on purpose
		capture fast "$WRAPPER" --root "$RUNC_ROOT" $argv
		# shellcheck disable=SC2086
		capture slow env RUNC_USERNS_FASTPATH=0 "$WRAPPER" --root "$RUNC_ROOT" $argv
		same_capture fast slow || fail "differs: $argv"
	done
	capture fast "$WRAPPER" --root "$RUNC_ROOT" create --bundle "$w" w1
	capture slow env RUNC_USERNS_FASTPATH=0 "$WRAPPER" --root "$RUNC_ROOT" create --bundle "$w" w2
	[ "$(cat "$TESTDIR/fast.rc")" = 1 ] && [ "$(cat "$TESTDIR/slow.rc")" = 1 ]
	grep -q "process.args" "$TESTDIR/slow.err"
	grep -qi "args" "$TESTDIR/fast.err"
	# One container each way, from alike bundles (a cgroup each).
	b1=$(setup_bundle c1)
	b2=$(setup_bundle c2)
	capture fast "$WRAPPER" --root "$RUNC_ROOT" create --bundle "$b1" c1
	capture slow env RUNC_USERNS_FASTPATH=0 "$WRAPPER" --root "$RUNC_ROOT" create --bundle "$b2" c2
	same_capture fast slow
	[ "$(cat "$TESTDIR/fast.rc")" = 0 ]
	for id in c1 c2; do
		[ "$(wrapper state "$id" | jq -r .status)" = created ]
	done
	for id in c1 c2; do wrapper delete --force "$id"; done
}

@test "RUNC_USERNS_FASTPATH=0: the same stdout, stderr and exit status" {
	b=$(setup_bundle c1)
	start_container "$b" c1
	local argv id
	for id in c2 c3; do
		b=$(setup_bundle $id)
		wrapper create --bundle "$b" $id </dev/null >/dev/null
	done
	for argv in "state c1" "state c2" "state nosuchid" "list" "list -q" "list --format json" \
		"ps c1 -o pid,comm" "kill nosuchid" "kill c2 0" "pause nosuchid" "resume c1" \
		"update --pids-limit 100 c1" "update nosuchid" "start nosuchid" "events --stats nosuchid" \
		"--log-format json state nosuchid" "--debug state c1" "-- state c1" "state" "state --help" \
		"--root=$RUNC_ROOT list -q"; do
		# shellcheck disable=SC2086 # split on purpose
		capture fast "$WRAPPER" --root "$RUNC_ROOT" $argv
		# shellcheck disable=SC2086
		capture slow env RUNC_USERNS_FASTPATH=0 "$WRAPPER" --root "$RUNC_ROOT" $argv
		same_capture fast slow || fail "differs: $argv"
	done
	# start succeeds once per container: one each way.
	capture fast "$WRAPPER" --root "$RUNC_ROOT" start c2
	capture slow env RUNC_USERNS_FASTPATH=0 "$WRAPPER" --root "$RUNC_ROOT" start c3
	same_capture fast slow
	[ "$(cat "$TESTDIR/fast.rc")" = 0 ]
	wait_status c2 running
	wait_status c3 running
}

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
	# goes on to runc (the Go code's, with a warning: logging.bats).
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

@test "a config the fast path is not sure of: the Go code runs the call" {
	b=$(setup_bundle c1)
	start_container "$b" c1
	# Valid for Go (escapes, a key in another case), left to it by C.
	local rt=${REAL_RUNC//\//\\/}
	for cfg in "{\"runtime\": \"$rt\"}" "{\"RUNTIME\": \"$REAL_RUNC\"}"; do
		echo "$cfg" >"$RUNC_USERNS_CONFIG"
		run -0 --separate-stderr traced state state c1
		[ "$(echo "$output" | jq -r .status)" = running ]
		go_path_taken state
		grep -qF "execve(\"$REAL_RUNC\", [\"$REAL_RUNC\", " "$TESTDIR/state.trace"
	done
}

@test "delete and exec of a container the wrapper never edited exec runc before any thread is created" {
	b=$(setup_bundle c1)
	start_container "$b" c1
	run -0 --separate-stderr traced exec exec c1 echo hello
	fast_path_taken exec
	[ "$output" = hello ]
	# exec's flags before the ID, and the command's after it.
	run -0 --separate-stderr traced execflags exec --env X=y -t=false c1 sh -c 'echo $X' --help
	fast_path_taken execflags
	[ "$output" = y ]
	# Not deleted while running: runc's refusal, as is.
	run -1 traced running delete c1
	fast_path_taken running
	[[ "$output" == *"running"* ]]
	run -0 traced delete delete c1 --force
	fast_path_taken delete
	[ ! -e "$RUNC_ROOT/c1" ]
	# No state.json and nothing of ours left for it (containerd's second
	# delete, --force, of every container): runc's delete, and its error.
	run -1 traced gone delete c1
	fast_path_taken gone
	[[ "$output" == *"does not exist"* ]]
	run -0 traced goneforce delete --force c1
	fast_path_taken goneforce
	# No state.json, but an in-flight marker of the ID (a create killed
	# before runc had the container): the Go code, which releases by the
	# pool's records.
	mkdir -p "$STATE_DIR/inflight"
	touch "$STATE_DIR/inflight/$(root_hash "$RUNC_ROOT")-c1"
	run -1 traced marked delete c1
	go_path_taken marked
	[[ "$output" == *"does not exist"* ]]
	[ ! -e "$STATE_DIR/inflight/$(root_hash "$RUNC_ROOT")-c1" ]
	# The Go code, for comparison.
	b=$(setup_bundle c2)
	wrapper create --bundle "$b" c2 </dev/null >/dev/null
	RUNC_USERNS_FASTPATH=0 run -0 traced slow delete c2
	go_path_taken slow
	[ ! -e "$RUNC_ROOT/c2" ]
}

@test "exec of a userns container goes through the Go code; its delete starts runc first, then gives the range back" {
	b=$(pooled_bundle c1)
	start_container "$b" c1
	grep -qF runc-userns.io/stamp "$RUNC_ROOT/c1/state.json"
	[ "$(pool_json | jq length)" = 1 ]
	run -0 --separate-stderr traced exec exec c1 cat /proc/self/uid_map
	go_path_taken exec
	[ "$(echo "$output" | awk '{print $2}')" -ge "$POOL_BASE" ]
	# Running, no --force: runc's refusal, and the range stays (the Go
	# code waits for runc's status).
	run -1 traced running delete c1
	early_start_taken running
	go_runtime_ran running
	[[ "$output" == *"running"* ]]
	[ "$(pool_json | jq length)" = 1 ]
	# The constructor releases the range itself: no Go runtime.
	run -0 traced delete delete --force c1
	early_start_taken delete
	run ! go_runtime_ran delete
	[ ! -e "$RUNC_ROOT/c1" ]
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
	[ -z "$(find "$STATE_DIR/pods" "$STATE_DIR/inflight" "$STATE_DIR/containers" -mindepth 1)" ]
}

@test "a pod's containers leave its range one by one, the last one returns it: all without the Go runtime" {
	sb=$(pooled_bundle sb)
	app=$(pooled_bundle app)
	as_pod "$sb" sb sandbox
	as_pod "$app" sb container
	start_container "$sb" sb
	start_container "$app" app
	[ "$(pool_json | jq -c '.[0].members')" = '["sb","app"]' ]
	run -0 traced app delete --force app
	run ! go_runtime_ran app
	[ "$(pool_json | jq -c '.[0].members')" = '["sb"]' ]
	[ -n "$(find "$STATE_DIR/pods" -mindepth 1)" ]
	run -0 traced sb delete --force sb
	run ! go_runtime_ran sb
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
	[ -z "$(find "$STATE_DIR/pods" "$STATE_DIR/inflight" "$STATE_DIR/containers" -mindepth 1)" ]
}

@test "a pod in a network namespace made elsewhere (containerd's CNI netns): its deletes release without the Go runtime, netns records included" {
	pod_elsewhere sb app
	if runc_before_1_3; then
		# runc < 1.3: the wrapper started runc in the namespace and
		# recorded it (netjoin.go).
		[ -f "$(echo "$STATE_DIR"/containers/*/app/netns)" ]
		[ -f "$(echo "$STATE_DIR"/containers/*/sb/netns)" ]
	fi
	run -0 traced app delete --force app
	run ! go_runtime_ran app
	[ "$(pool_json | jq -c '.[0].members')" = '["sb"]' ]
	run -0 traced sb delete --force sb
	run ! go_runtime_ran sb
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(find "$STATE_DIR/pods" "$STATE_DIR/inflight" "$STATE_DIR/containers" -mindepth 1)" ]
	umount "$TESTDIR/netns"
	[ -z "$(test_mounts)" ]
}

@test "delete --debug of a pooled container goes through the Go code, which logs where its time went" {
	b=$(pooled_bundle c1)
	start_container "$b" c1
	run -0 traced debug --debug --log "$TESTDIR/log" delete --force c1
	go_runtime_ran debug
	grep -q "container c1: delete took" "$TESTDIR/log"
	[ "$(pool_json | jq length)" = 0 ]
}

@test "a signal to a delete while the constructor waits for runc reaches runc; the constructor releases after it" {
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
	# inittrace: a Go runtime of ours would name its packages on stderr
	# (runc's own, which the runtime execs, names runc's).
	GODEBUG=inittrace=1 "$WRAPPER" --root "$RUNC_ROOT" delete --force c1 2>"$TESTDIR/delete.err" &
	pid=$!
	for i in $(seq 100); do
		[ -e "$TESTDIR/waiting" ] && break
		sleep 0.05
	done
	[ -e "$TESTDIR/waiting" ] || fail "the runtime's delete did not start"
	kill -TERM "$pid"
	status=0
	wait "$pid" || status=$?
	[ "$status" = 0 ]
	[ "$(cat "$TESTDIR/got")" = TERM ]
	grep -q '^init ' "$TESTDIR/delete.err" # runc's: the trace works
	run ! grep -F runc-userns/internal "$TESTDIR/delete.err"
	[ ! -e "$RUNC_ROOT/c1" ]
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
}

@test "a caller that ignores SIGCHLD: delete of a userns container starts runc from the Go code, and succeeds" {
	b=$(pooled_bundle c1)
	start_container "$b" c1
	# With SIGCHLD ignored the kernel reaps children unwaited: a runc the
	# constructor started could be gone before the Go code waits for it,
	# and a delete that succeeded would fail (waitid: ECHILD).
	run -0 strace -f -qq -s 4096 -o "$TESTDIR/ignored.trace" -e trace=execve,clone,clone3,fork,vfork \
		perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV or die "exec: $!"' "$WRAPPER" --root "$RUNC_ROOT" delete --force c1
	run ! early_start_taken ignored
	go_path_taken ignored
	[ ! -e "$RUNC_ROOT/c1" ]
	[ "$(pool_json | jq length)" = 0 ]
}

# hold_pool_lock: the pool's lock taken by another process until
# release_pool_lock: the Go code of a pooled create waits for it (the state
# dir and pool made by a create and delete first).
hold_pool_lock() {
	rm -f "$TESTDIR/locked" "$TESTDIR/unlock"
	if [ ! -d "$TESTDIR/warm" ]; then
		start_container "$(pooled_bundle warm)" warm
		wrapper delete --force warm
	fi
	flock "$STATE_DIR/pool.lock" sh -c "touch '$TESTDIR/locked'; while [ ! -e '$TESTDIR/unlock' ]; do sleep 0.05; done" &
	LOCK_HOLDER=$!
	for i in $(seq 100); do
		[ -e "$TESTDIR/locked" ] && return 0
		sleep 0.05
	done
	fail "the pool's lock was not taken"
}

release_pool_lock() {
	touch "$TESTDIR/unlock"
	wait "$LOCK_HOLDER"
	LOCK_HOLDER=
}

# netns_inode PATH: the inode of the namespace file at PATH (followed).
netns_inode() { stat -L -c %i "$1"; }

# runc_before_1_3: the real runc is older than 1.3 (netjoin.go starts it
# inside a pod's network namespace made elsewhere).
runc_before_1_3() { [[ "$("$REAL_RUNC" --version | awk 'NR == 1 {print $3}')" == 1.[012].* ]]; }

# gated_create ID BUNDLE [CMD...]: create ID in the background (--debug,
# --log $TESTDIR/log), run through CMD if given (taskset, say), the
# wrapper's pid in WPID, its runc's at the gate in RPID.
gated_create() {
	local id=$1 b=$2
	shift 2
	"$@" "$WRAPPER" --root "$RUNC_ROOT" --debug --log "$TESTDIR/log" --log-format json create --bundle "$b" "$id" </dev/null >"$TESTDIR/$id.out" 2>&1 &
	WPID=$!
	RPID=$(gated_runc "$WPID")
}

# cpus_of PID: the CPUs process PID may run on (Cpus_allowed_list).
cpus_of() { awk '/^Cpus_allowed_list:/ {print $2}' "/proc/$1/status"; }

# gated_netns_create ID: a pooled create of ID that joins a network
# namespace made elsewhere ($TESTDIR/netns) by path, as a CRI pod's does,
# started by gated_create while the pool's lock is held (the warm-up create
# of hold_pool_lock caches runc's features, which tell the constructor
# whether runc must start in that namespace).
gated_netns_create() {
	local b
	netns_elsewhere
	hold_pool_lock
	b=$(pooled_bundle "$1")
	join_netns "$TESTDIR/netns" "$b"
	gated_create "$1" "$b"
}

# in_test_netns ID: container ID's init is in $TESTDIR/netns.
in_test_netns() {
	[ "$(netns_inode "/proc/$(wrapper state "$1" | jq .pid)/ns/net")" = "$(netns_inode "$TESTDIR/netns")" ]
}

# started_in_pool_userns ID: container ID, started, runs in the pool's
# first range.
started_in_pool_userns() {
	wrapper start "$1"
	run -0 cexec "$1" cat /proc/self/uid_map
	[ "$(echo "$output" | awk '{print $1, $2, $3}')" = "0 $POOL_BASE 65536" ]
}

# gated_create_done ID: gated_create's create of ID succeeded.
gated_create_done() {
	wait "$WPID" || { cat "$TESTDIR/$1.out" >&2; fail "create of $1 failed"; }
}

# gated_runc WRAPPER-PID: the pid of the runc that wrapper started behind
# the gate (its --log names a descriptor of the wrapper), within 5 s.
gated_runc() {
	local pid
	for i in $(seq 100); do
		pid=$(pgrep -f -- "--log /proc/$1/fd/[0-9]+ .*create" || true)
		[ -n "$pid" ] && echo "$pid" && return 0
		sleep 0.05
	done
	fail "no runc behind the gate of wrapper $1"
}

@test "a pooled create starts runc before the Go runtime, behind a gate that holds until the edited spec is written" {
	hold_pool_lock
	b=$(pooled_bundle c1)
	# runc runs while the Go code waits for the pool's lock, before
	# anything of the spec is edited: it waits in its open of --log.
	gated_create c1 "$b"
	sleep 0.5
	kill -0 "$RPID"
	[ ! -e "$RUNC_ROOT/c1" ]
	run -1 grep -F runc-userns.io/stamp "$b/config.json"
	# The constructor's vfork child took its CPU out of the wrapper's
	# mask for the wake-up (leave_cpu); the wrapper put its mask back
	# before the Go runtime started, and runc's was never changed.
	[ "$(cpus_of "$WPID")" = "$(cpus_of $$)" ]
	[ "$(cpus_of "$RPID")" = "$(cpus_of $$)" ]
	release_pool_lock
	gated_create_done c1
	grep -q "container c1: runc (pid $RPID) started before the Go runtime, at the gate until the spec was written" "$TESTDIR/log"
	# runc read the spec as edited: its container runs in the pool's
	# user namespace (a runc through the gate early would have read the
	# spec without one, and the container would run as host root).
	started_in_pool_userns c1
	# runc's log lines (nsexec's, with --debug) went through the gate.
	grep -q '"msg":"nsexec' "$TESTDIR/log"
	run -0 wrapper delete --force c1
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(find "$STATE_DIR" -maxdepth 1 -name '.gate-*')" ]
}

@test "a gated create keeps a caller's CPU mask: the wrapper's and runc's, and the container's is what runc alone gives" {
	local one i=0
	one=$(cpus_of $$ | cut -d, -f1 | cut -d- -f1)
	for mask in "$(cpus_of $$)" "$one"; do
		i=$((i + 1))
		hold_pool_lock
		b=$(pooled_bundle "m$i")
		gated_create "m$i" "$b" taskset -c "$mask"
		[ "$(cpus_of "$WPID")" = "$mask" ]
		[ "$(cpus_of "$RPID")" = "$mask" ]
		release_pool_lock
		gated_create_done "m$i"
		grep -q "container m$i: runc (pid $RPID) started before the Go runtime" "$TESTDIR/log"
		wrapper start "m$i"
		# runc 1.1 leaves its init the caller's mask; later runcs give it
		# its cpuset's CPUs. Whichever: what runc gives alone.
		p=$(setup_bundle "p$i")
		taskset -c "$mask" "$REAL_RUNC" --root "$RUNC_ROOT" create --bundle "$p" "p$i" </dev/null >/dev/null 2>"$TESTDIR/p$i.err" || fail "plain runc create: $(cat "$TESTDIR/p$i.err")"
		plain_runc start "p$i"
		[ "$(cpus_of "$(wrapper state "m$i" | jq .pid)")" = "$(cpus_of "$(plain_runc state "p$i" | jq .pid)")" ]
		run -0 wrapper delete --force "m$i"
		run -0 plain_runc delete --force "p$i"
	done
	[ "$(pool_json | jq length)" = 0 ]
}

@test "a pooled create that joins a network namespace by path (a CRI pod's) starts runc behind the gate: inside that namespace for runc < 1.3" {
	gated_netns_create c1
	if runc_before_1_3; then
		# As netjoin.go starts it: runc < 1.3 cannot join the namespace
		# once in the pod's user namespace.
		[ "$(netns_inode "/proc/$RPID/ns/net")" = "$(netns_inode "$TESTDIR/netns")" ]
		want="started before the Go runtime in network namespace $TESTDIR/netns, at the gate"
	else
		[ "$(netns_inode "/proc/$RPID/ns/net")" = "$(netns_inode /proc/self/ns/net)" ]
		want="started before the Go runtime, at the gate"
	fi
	release_pool_lock
	gated_create_done c1
	grep -q "container c1: runc (pid $RPID) $want" "$TESTDIR/log"
	# The container: in the pool's user namespace and in the namespace.
	started_in_pool_userns c1
	in_test_netns c1
	run -0 wrapper delete --force c1
	[ "$(pool_json | jq length)" = 0 ]
	umount "$TESTDIR/netns"
}

@test "a network namespace path that names another namespace while runc waits at the gate: the container joins the one it names when the Go code reads it" {
	gated_netns_create c1
	old=$(netns_inode "$TESTDIR/netns")
	umount "$TESTDIR/netns"
	unshare --net="$TESTDIR/netns" true
	[ "$(netns_inode "$TESTDIR/netns")" != "$old" ]
	release_pool_lock
	gated_create_done c1
	if runc_before_1_3; then
		# The gated runc waits in the old namespace: not the runc to let
		# through, killed at the gate; the Go code starts runc in the
		# namespace it recorded.
		run ! kill -0 "$RPID"
		grep -qF "container c1: runc (pid $RPID) started before the Go runtime not let through (not in network namespace $TESTDIR/netns as recorded)" "$TESTDIR/log"
	else
		# runc joins the namespace by path itself, after the gate.
		grep -q "container c1: runc (pid $RPID) started before the Go runtime, at the gate" "$TESTDIR/log"
	fi
	in_test_netns c1
	run -0 wrapper delete --force c1
	[ "$(pool_json | jq length)" = 0 ]
	umount "$TESTDIR/netns"
}

@test "a network namespace path that names no namespace file: the Go code's error, and no runc left at the gate" {
	# The warm-up create: the marker directory and runc's cached features.
	start_container "$(pooled_bundle warm)" warm
	wrapper delete --force warm
	b=$(pooled_bundle c1)
	echo not-a-namespace >"$TESTDIR/notns"
	join_netns "$TESTDIR/notns" "$b"
	run -1 strace -f -qq -o "$TESTDIR/notns.trace" -e trace=execve,vfork \
		"$WRAPPER" --root "$RUNC_ROOT" --log "$TESTDIR/log" create --bundle "$b" c1 </dev/null
	[[ "$output" == *"$TESTDIR/notns"* ]]
	gate=$(awk -v rt="execve(\"$REAL_RUNC\"" 'index($0, rt) && /--log", "\/proc\/[0-9]+\/fd\// {print $1; exit}' "$TESTDIR/notns.trace")
	if runc_before_1_3; then
		# The constructor, which would start runc in that namespace,
		# opened the path, found no nsfs file and started nothing (a
		# child's setns would have failed after its start): no vfork.
		[ -z "$gate" ]
		run ! grep -F 'vfork(' "$TESTDIR/notns.trace"
	else
		# runc joins it itself: started in ours, killed at the gate.
		[ -n "$gate" ]
		awk -v pid="$gate" '$1 == pid && /\+\+\+ killed by SIGKILL \+\+\+/ {found = 1} END {exit !found}' "$TESTDIR/notns.trace"
	fi
	[ ! -e "$RUNC_ROOT/c1" ]
	[ "$(pool_json | jq length)" = 0 ]
}

@test "a create the Go code refuses kills the runc at its gate" {
	# The gate needs the state dir's marker directory: made by a create.
	start_container "$(pooled_bundle warm)" warm
	wrapper delete --force warm
	b=$(setup_bundle c1)
	annotate "$b" runc-userns.io/userns sometimes
	run -1 strace -f -qq -o "$TESTDIR/refused.trace" -e trace=execve \
		"$WRAPPER" --root "$RUNC_ROOT" --log "$TESTDIR/log" create --bundle "$b" c1 </dev/null
	[[ "$output" == *"runc-userns.io/userns"* ]]
	# runc was started behind the gate, and killed there.
	gate=$(awk -v rt="execve(\"$REAL_RUNC\"" 'index($0, rt) && /--log", "\/proc\/[0-9]+\/fd\// {print $1; exit}' "$TESTDIR/refused.trace")
	[ -n "$gate" ]
	awk -v pid="$gate" '$1 == pid && /\+\+\+ killed by SIGKILL \+\+\+/ {found = 1} END {exit !found}' "$TESTDIR/refused.trace"
	# The marker it made for the create is gone with it.
	[ -z "$(find "$STATE_DIR/inflight" -mindepth 1)" ]
	[ ! -e "$RUNC_ROOT/c1" ]
	[ -z "$(find "$STATE_DIR" -maxdepth 1 -name '.gate-*')" ]
	# Its marker is free: the same ID is created once the spec is right.
	annotate "$b" runc-userns.io/userns auto
	start_container "$b" c1
	run -0 wrapper delete --force c1
	[ "$(pool_json | jq length)" = 0 ]
}

@test "runc's own error, behind the gate, reaches --log and stderr" {
	b=$(pooled_bundle c1)
	update_config "$b" '.process.args = ["/nonexistent"]'
	run -1 --separate-stderr wrapper --log "$TESTDIR/log" --log-format json create --bundle "$b" c1 </dev/null
	[[ "$stderr" == *'exec: "/nonexistent"'* ]]
	jq -e 'select(.level == "error" and (.msg | contains("exec: \"/nonexistent\"")))' "$TESTDIR/log"
	[ ! -e "$RUNC_ROOT/c1" ]
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
}

@test "a wrapper killed while its runc waits at the gate takes that runc with it" {
	hold_pool_lock
	b=$(pooled_bundle c1)
	gated_create c1 "$b"
	kill -KILL "$WPID"
	wait "$WPID" || true
	# PR_SET_PDEATHSIG: else it would wait at the gate for ever.
	for i in $(seq 100); do
		kill -0 "$RPID" 2>/dev/null || break
		sleep 0.05
	done
	run ! kill -0 "$RPID"
	release_pool_lock
	[ ! -e "$RUNC_ROOT/c1" ]
	# What the killed create left is the next create's to clear.
	start_container "$b" c1
	run -0 wrapper delete --force c1
	[ "$(pool_json | jq length)" = 0 ]
}

@test "delete and exec, RUNC_USERNS_FASTPATH=0: the same stdout, stderr, exit status and pool" {
	local id argv
	for id in p1 p2 u1 u2; do
		b=$(setup_bundle $id)
		[[ $id != u* ]] || annotate "$b" runc-userns.io/userns auto
		start_container "$b" $id
	done
	[ "$(pool_json | jq length)" = 2 ]
	for argv in "exec p1 true" "exec p1 sh -c exit\ 3" "exec p1 nosuchcommand" "exec -t=false p1 echo x" \
		"exec u1 id -u" "exec nosuchid true" "exec ../x true" "exec p1" "exec --help" \
		"delete nosuchid" "delete --force nosuchid" "delete ../x" "delete p1" "delete u1" "delete --help" "delete p1 u1"; do
		# shellcheck disable=SC2086 # split on purpose
		capture fast "$WRAPPER" --root "$RUNC_ROOT" $argv
		# shellcheck disable=SC2086
		capture slow env RUNC_USERNS_FASTPATH=0 "$WRAPPER" --root "$RUNC_ROOT" $argv
		same_capture fast slow || fail "differs: $argv"
	done
	# delete --force: once per container, one each way.
	capture fast "$WRAPPER" --root "$RUNC_ROOT" delete --force p1
	capture slow env RUNC_USERNS_FASTPATH=0 "$WRAPPER" --root "$RUNC_ROOT" delete --force p2
	same_capture fast slow
	[ "$(cat "$TESTDIR/fast.rc")" = 0 ]
	capture fast "$WRAPPER" --root "$RUNC_ROOT" delete --force u1
	capture slow env RUNC_USERNS_FASTPATH=0 "$WRAPPER" --root "$RUNC_ROOT" delete --force u2
	same_capture fast slow
	[ "$(cat "$TESTDIR/fast.rc")" = 0 ]
	[ -z "$(ls -A "$RUNC_ROOT")" ]
	[ "$(pool_json | jq length)" = 0 ]
}
