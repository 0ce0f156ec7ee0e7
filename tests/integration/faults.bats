#!/usr/bin/env bats
# The wrapper killed (SIGKILL, as an OOM kill or a crashing shim) at each
# step of create: delete --force gives back everything, and the next
# create works. The kills and stops are the fault switches of the test
# binary, $FAULTS_WRAPPER (make build-faults); the production binary has
# none (the last test checks it).

load helpers

setup() {
	requires root faults
	setup_env
}

teardown() {
	if [ -n "${STOPPED_PID:-}" ]; then
		kill -CONT "$STOPPED_PID" 2>/dev/null || true
		wait "$STOPPED_PID" 2>/dev/null || true
	fi
	# A test that failed half-way with a create in the background: the
	# wrapper and its runtime go before the checks that nothing is left.
	if [ -n "${KILL_PIDS:-}" ]; then
		kill -KILL $KILL_PIDS 2>/dev/null || true
		pkill -KILL -f "^/bin/bash $TESTDIR/" 2>/dev/null || true
		wait $KILL_PIDS 2>/dev/null || true
	fi
	teardown_env
}

# kill_at STEP ID BUNDLE: create ID, killed at STEP; wait for a runc create
# it started to end.
kill_at() {
	local step=$1 id=$2 b=$3 status=0
	# Output to a file, not a pipe: the container's init inherits it, and
	# once the wrapper is dead nothing would close a pipe for `run`.
	env RUNC_USERNS_TEST_KILL_AT="$step" "$FAULTS_WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" "$id" \
		</dev/null >"$TESTDIR/$id.out" 2>&1 || status=$?
	[ "$status" = 137 ] || fail "create was not killed at $step: status $status, output $(cat "$TESTDIR/$id.out")"
	# runc create may still be running when the wrapper died: let it end
	# (containerd, too, deletes only after create returned).
	for _ in $(seq 100); do pgrep -f -- "create --bundle $b $id\$" >/dev/null || break; sleep 0.1; done
	! pgrep -f -- "create --bundle $b $id\$" >/dev/null || fail "runc create of $id still runs 10 s after the kill at $step"
}

# nothing_left STEP: no staging mount, pool entry, pod dir, pin or
# in-flight marker is left.
nothing_left() {
	[ -z "$(staging_mounts)" ] || fail "staging mounts left after $1: $(staging_mounts)"
	[ "$(pool_json | jq length)" = 0 ] || fail "pool not empty after $1: $(pool_json)"
	[ -z "$(ls "$STATE_DIR/pods" 2>/dev/null)" ] || fail "pod dir left after $1: $(ls "$STATE_DIR/pods")"
	[ -z "$(ls "$STATE_DIR/containers" 2>/dev/null)" ] || fail "container dir left after $1"
	[ -z "$(ls "$STATE_DIR/inflight" 2>/dev/null)" ] || fail "in-flight marker left after $1: $(ls "$STATE_DIR/inflight")"
	[ -z "$(awk -v d="$STATE_DIR/pods/" 'index($5, d) == 1' /proc/self/mountinfo)" ] || fail "pin left after $1"
}

# stop_at STEP ID BUNDLE: start create ID in the background, stopped
# (SIGSTOP) at STEP; STOPPED_PID is the wrapper.
stop_at() {
	local step=$1 id=$2 b=$3 i
	env RUNC_USERNS_TEST_STOP_AT="$step" "$FAULTS_WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" "$id" \
		</dev/null >"$TESTDIR/$id.out" 2>&1 &
	STOPPED_PID=$!
	for i in $(seq 100); do
		[ "$(awk '{print $3}' "/proc/$STOPPED_PID/stat" 2>/dev/null)" = T ] && return 0
		sleep 0.1
	done
	fail "create of $id did not stop at $step: $(cat "$TESTDIR/$id.out")"
}

# only_pod ID: the pool holds one range, pod ID's, with ID its only member.
only_pod() {
	[ "$(pool_json | jq -c '[.[] | {owner, members}]')" = "[{\"owner\":\"$1\",\"members\":[\"$1\"]}]" ] || fail "pool: $(pool_json)"
}

# pooled_then_deleted ID: ID runs in the pool's first range, and delete
# --force gives everything back.
pooled_then_deleted() {
	[ "$(cexec "$1" cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	wrapper delete --force "$1"
	nothing_left "delete of $1"
}

# kept_then_resumed ID: the stopped create of pod ID still holds its range
# alone; resumed, it starts in it, and delete gives everything back.
kept_then_resumed() {
	only_pod "$1"
	resume
	wrapper start "$1"
	pooled_then_deleted "$1"
}

# resume: let the stopped create go on; fails if it fails.
resume() {
	local pid=$STOPPED_PID status=0
	kill -CONT "$pid"
	wait "$pid" || status=$?
	STOPPED_PID=
	[ "$status" = 0 ] || fail "create failed after it was resumed: status $status: $(cat "$TESTDIR"/*.out)"
}

# killed_create STEP: create a pool pod, killed at STEP; then delete --force.
killed_create() {
	local step=$1 b
	b=$(pooled_bundle "k-$step")
	kill_at "$step" "k-$step" "$b"
	# What it staged is no one else's, killed or not.
	case $step in
	staged | written | runc-started) staging_unreachable "k-$step" ;;
	esac
	run -0 wrapper delete --force "k-$step"
	nothing_left "$step"
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

@test "a plain file where the pod's pin goes (a create killed before its mount) does not stop the sandbox's create" {
	b=$(pooled_bundle stale)
	mkdir -p "$STATE_DIR/pods/stale"
	: >"$STATE_DIR/pods/stale/userns"
	start_container "$b" stale
	[ "$(cexec stale cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	wrapper delete --force stale
	nothing_left "delete"
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

# killed_then_gc STEP: as killed_create, but the operator's `pool gc`
# cleans up instead of a delete (the shim died too and never calls it).
killed_then_gc() {
	local step=$1 b
	b=$(pooled_bundle "g-$step")
	kill_at "$step" "g-$step" "$b"
	run -0 "$WRAPPER" pool gc
	echo "$output"
	[[ "$output" == *"reclaimed g-$step $POOL_BASE-"* ]] || fail "gc did not reclaim g-$step: $output"
	nothing_left "gc after $step"
	# A later delete of the dead container is still fine (idempotent).
	run -0 wrapper delete --force "g-$step"
	start_container "$b" "g-$step-again"
	[ "$(cexec "g-$step-again" cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	wrapper delete --force "g-$step-again"
}

@test "pool gc after a kill once the range was allocated" {
	killed_then_gc allocated
}

@test "pool gc after a kill once the staging mounts were attached" {
	killed_then_gc staged
}

@test "pool gc after a kill once config.json was written" {
	killed_then_gc written
}

@test "pool gc: a dead pod whose leftovers cannot be removed stays taken and is named; the others are reclaimed" {
	local b1 b2
	b1=$(pooled_bundle g1)
	b2=$(pooled_bundle g2)
	kill_at pinned g1 "$b1"
	kill_at pinned g2 "$b2"
	# Something of the operator's in g1's pod directory: it cannot go.
	touch "$STATE_DIR/pods/g1/operator-note"
	run -1 "$WRAPPER" pool gc
	echo "$output"
	[[ "$output" == *"reclaimed g2 "* ]] || fail "gc did not reclaim g2: $output"
	[[ "$output" == *"owner g1 (it stays taken): remove pod dir"* ]] || fail "gc did not name g1's failure: $output"
	[[ "$output" == *"run pool gc again"* ]] || fail "gc: $output"
	[ "$(pool_json | jq -r '.[].owner')" = g1 ] || fail "pool: $(pool_json)"
	rm "$STATE_DIR/pods/g1/operator-note"
	run -0 "$WRAPPER" pool gc
	[[ "$output" == *"reclaimed g1 "* ]] || fail "second gc: $output"
	nothing_left "gc"
	wrapper delete --force g1
	wrapper delete --force g2
}

@test "pool gc keeps a running container's range" {
	local b
	b=$(pooled_bundle live)
	start_container "$b" live
	run -0 "$WRAPPER" pool gc
	[[ "$output" == *"0 ranges reclaimed"* ]] || fail "gc: $output"
	[ "$(pool_json | jq -r '.[0].owner')" = live ] || fail "pool after gc: $(pool_json)"
	wrapper delete --force live
	nothing_left "delete"
}

@test "pool gc reclaims a pod whose init died without a delete" {
	local b pid
	b=$(pooled_bundle dead)
	start_container "$b" dead
	pid=$(plain_runc state dead | jq .pid)
	kill -9 "$pid"
	wait_status dead stopped
	run -0 "$WRAPPER" pool gc
	[[ "$output" == *"reclaimed dead $POOL_BASE-"* ]] || fail "gc: $output"
	[ "$(pool_json | jq length)" = 0 ] || fail "pool after gc: $(pool_json)"
	wrapper delete --force dead
	nothing_left "delete"
}

@test "pool gc drops the pin of a pod whose delete was killed after the range went back" {
	local b status=0
	b=$(pooled_bundle orph)
	start_container "$b" orph
	env RUNC_USERNS_TEST_KILL_AT=released "$FAULTS_WRAPPER" --root "$RUNC_ROOT" delete --force orph \
		</dev/null >"$TESTDIR/del.out" 2>&1 || status=$?
	[ "$status" = 137 ] || fail "delete was not killed at released: status $status, output $(cat "$TESTDIR/del.out")"
	[ "$(pool_json | jq length)" = 0 ] || fail "pool: $(pool_json)"
	# containerd's retried delete no longer knows the pod: the pin stays.
	"$WRAPPER" --root "$RUNC_ROOT" delete --force orph >/dev/null 2>&1 || true
	[ -n "$(awk -v d="$STATE_DIR/pods/orph/" 'index($5, d) == 1' /proc/self/mountinfo)" ] || fail "no pin left to sweep"
	run -0 "$WRAPPER" pool gc
	[[ "$output" == *"unpinned pod orph: it holds no range"* ]] || fail "gc: $output"
	[[ "$output" == *"1 pinned user namespaces of pods without a range dropped"* ]] || fail "gc: $output"
	nothing_left "gc"
	run -0 "$WRAPPER" pool gc
	[[ "$output" == *"0 pinned user namespaces"* ]] || fail "second gc: $output"
}

@test "a delete killed while the runc it started deletes: the retried delete gives everything back" {
	local status=0 i
	b=$(pooled_bundle early)
	start_container "$b" early
	env RUNC_USERNS_TEST_KILL_AT=runc-started "$FAULTS_WRAPPER" --root "$RUNC_ROOT" delete --force early \
		</dev/null >"$TESTDIR/del.out" 2>&1 || status=$?
	[ "$status" = 137 ] || fail "delete was not killed at runc-started: status $status, output $(cat "$TESTDIR/del.out")"
	# runc, our child, carries on without us.
	for i in $(seq 100); do
		[ -e "$RUNC_ROOT/early" ] || break
		sleep 0.1
	done
	[ ! -e "$RUNC_ROOT/early" ] || fail "runc did not delete the container: $(cat "$TESTDIR/del.out")"
	[ "$(pool_json | jq length)" = 1 ] || fail "released before the kill point: $(pool_json)"
	# containerd's retried delete finds no state.json: by pool membership.
	"$WRAPPER" --root "$RUNC_ROOT" delete --force early >/dev/null 2>&1 || true
	nothing_left "the retried delete"
}

@test "pool gc never reclaims a create in flight" {
	local step b
	for step in allocated staged written; do
		b=$(pooled_bundle "f-$step")
		stop_at "$step" "f-$step" "$b"
		run -0 "$WRAPPER" pool gc
		[[ "$output" == *"0 ranges reclaimed"* ]] || fail "gc reclaimed an in-flight create at $step: $output"
		[ "$(pool_json | jq -r '.[0].owner')" = "f-$step" ] || fail "pool: $(pool_json)"
		resume
		wrapper start "f-$step"
		[ "$(cexec "f-$step" cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
		wrapper delete --force "f-$step"
		nothing_left "in-flight $step"
	done
}

@test "a create stopped after staging or writing: nobody else reaches what it staged" {
	local step b dir
	for step in staged written; do
		b=$(pooled_bundle "s-$step")
		mkdir -p "$TESTDIR/vol-$step"
		update_config "$b" '.mounts += [{"destination": "/v", "type": "bind", "source": "'"$TESTDIR/vol-$step"'", "options": ["rbind"]}]'
		# A setuid-root program of the image's, seen through the staged
		# rootfs, ran as the pod's root.
		cp "$b/rootfs/bin/busybox" "$b/rootfs/bin/suid-busybox"
		chmod 4755 "$b/rootfs/bin/suid-busybox"
		stop_at "$step" "s-$step" "$b"
		staging_unreachable "s-$step"
		dir=$(container_dir "s-$step")
		[ -u "$dir/rootfs/bin/suid-busybox" ]
		# From a shell of nobody's (setpriv's own execve still holds
		# root's capabilities).
		run as_nobody /bin/sh -c 'exec "$0" id -u' "$dir/rootfs/bin/suid-busybox"
		[ "$status" = 126 ] || fail "nobody ran the pod's setuid program: $status: $output"
		[[ "$output" == *"Permission denied"* ]]
		resume
		staging_unreachable "s-$step"
		wrapper delete --force "s-$step"
		nothing_left "stopped at $step"
	done
}

@test "a delete while the create is in flight releases nothing; the create goes on" {
	local b
	b=$(pooled_bundle d)
	stop_at written d "$b"
	# No state.json yet: runc has nothing to delete, and the range, pin and
	# staging mounts are the create's, not the delete's.
	run wrapper delete --force d
	[ "$status" != 0 ] || fail "delete of a container being created succeeded: $output"
	[[ "$output" == *"container d: a create or another delete of it is still running"*"nothing was released"* ]] || fail "delete: $output"
	kept_then_resumed d
}

@test "a create of a container runc has: runc refuses it, and the container keeps its range, pin and records" {
	local b b2
	b=$(pooled_bundle c1)
	start_container "$b" c1
	# The same ID again, from a bundle the wrapper would refuse after
	# taking the range (a bind mount of a missing source): refused or not,
	# nothing of c1's may be undone.
	b2=$(pooled_bundle c1-again)
	update_config "$b2" '.mounts += [{destination: "/x", type: "bind", source: "/nonexistent-runc-userns-test", options: ["bind"]}]'
	create_to_file c1 "$b2"
	[ "$status" != 0 ] || fail "a second create of c1 succeeded"
	only_pod c1
	[ -n "$(awk -v d="$STATE_DIR/pods/c1/" 'index($5, d) == 1' /proc/self/mountinfo)" ] || fail "c1's pin is gone"
	[[ "$output" == *"exist"* ]] || fail "not runc's refusal: $output"
	[[ "$output" != *"nonexistent-runc-userns-test"* ]] || fail "the wrapper worked on the second create: $output"
	pooled_then_deleted c1
}

@test "two creates of one ID at once: the second changes nothing and says why" {
	local b b2
	b=$(pooled_bundle two)
	stop_at written two "$b"
	b2=$(pooled_bundle two-again)
	create_to_file two "$b2"
	[ "$status" != 0 ] || fail "the second create of two succeeded"
	[[ "$output" == *"container two: another create of this container is running, or a delete of it is releasing what it held (its in-flight marker $STATE_DIR/inflight/"*"-two is locked): nothing was changed"* ]] || fail "second create: $output"
	kept_then_resumed two
}

@test "a record's temp file left by a killed create does not keep delete or pool gc from releasing" {
	local b
	b=$(pooled_bundle tmpf)
	start_container "$b" tmpf
	# As a create killed while writing them leaves them.
	local cdir
	cdir=$(dirname "$(find "$STATE_DIR/containers" -name rootfs -maxdepth 3 | head -1)")
	[ -d "$cdir" ] || fail "no container dir under $STATE_DIR/containers"
	touch "$cdir/.netns.tmp-1234" "$cdir/netns.tmp" "$STATE_DIR/pods/tmpf/.mapping.tmp-1234"
	wrapper delete --force tmpf
	nothing_left "delete"
}

@test "a full pool reclaims the range of a killed create" {
	POOL_SLOTS=1 write_config '{}'
	local a b
	a=$(pooled_bundle a)
	kill_at allocated a "$a"
	[ "$(pool_json | jq -r '.[0].owner')" = a ] || fail "pool: $(pool_json)"
	b=$(pooled_bundle b)
	wrapper --log "$TESTDIR/b.log" --log-format json create --bundle "$b" b </dev/null >/dev/null 2>"$TESTDIR/b.err" || fail "create b: $(cat "$TESTDIR/b.err")"
	grep -q 'reclaimed host IDs' "$TESTDIR/b.log" || fail "no reclaim logged: $(cat "$TESTDIR/b.log")"
	wrapper start b
	[ "$(cexec b cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	[ "$(pool_json | jq -r '.[].owner')" = b ] || fail "pool: $(pool_json)"
	wrapper delete --force b
	wrapper delete --force a
	nothing_left "delete"
}

@test "a full pool never reclaims a create in flight" {
	POOL_SLOTS=1 write_config '{}'
	local a b
	a=$(pooled_bundle a)
	stop_at written a "$a"
	b=$(pooled_bundle b)
	# Output to a file: should b be created, its init would hold a pipe.
	local status=0
	wrapper create --bundle "$b" b </dev/null >"$TESTDIR/b.out" 2>&1 || status=$?
	[ "$status" != 0 ] || fail "create b took a's range while a's create was in flight"
	grep -q "user namespace pool exhausted: 1 of 1 ranges in use" "$TESTDIR/b.out" || fail "create b: $(cat "$TESTDIR/b.out")"
	resume
	wrapper start a
	wrapper delete --force a
	nothing_left "delete"
}

@test "a garbage, truncated or missing pool state is rebuilt from the live containers" {
	local how a b record
	a=$(pooled_bundle a)
	start_container "$a" a
	record="$STATE_DIR/pool.d/$POOL_BASE-a"
	for how in garbage truncated mismatched missing; do
		[ -f "$record" ] || fail "no record of a ($how): $(pool_records)"
		case $how in
		garbage) printf '\0\377{"owner":' >"$record" ;;
		truncated) truncate -s 30 "$record" ;;
		mismatched) sed -i 's/"owner":"a"/"owner":"z"/' "$record" ;;
		missing) rm -r "$STATE_DIR/pool.d" ;;
		esac
		b=$(pooled_bundle "b-$how")
		wrapper --log "$TESTDIR/$how.log" --log-format json create --bundle "$b" "b-$how" </dev/null >/dev/null 2>"$TESTDIR/$how.err" ||
			fail "create after a $how state: $(cat "$TESTDIR/$how.err")"
		grep -q 'pool in .* rebuilt from the live containers' "$TESTDIR/$how.log" || fail "no rebuild logged ($how): $(cat "$TESTDIR/$how.log")"
		# a keeps its range; b gets another one.
		[ "$(pool_json | jq -r '.[] | select(.owner == "a") | .hostID')" = "$POOL_BASE" ] || fail "a lost its range ($how): $(pool_json)"
		[ "$(pool_json | jq -r '.[] | select(.owner == "b-'"$how"'") | .hostID')" = "$((POOL_BASE + 65536))" ] || fail "b ($how): $(pool_json)"
		wrapper start "b-$how"
		wrapper delete --force "b-$how"
		[ "$(pool_json | jq -r '.[].owner')" = a ] || fail "after deleting b ($how): $(pool_json)"
	done
	wrapper delete --force a
	nothing_left "delete"
}

@test "a rebuild ignores the stamp of a stopped container kept for its logs, whose range went to another pod" {
	local old new third
	old=$(pooled_bundle old)
	update_config "$old" '.process.args = ["true"]'
	start_container "$old" old
	for _ in $(seq 50); do
		[ "$(plain_runc state old | jq -r .status)" = stopped ] && break
		sleep 0.1
	done
	[ "$(plain_runc state old | jq -r .status)" = stopped ]
	# kubelet keeps it (logs --previous); gc gives its range back.
	run -0 "$WRAPPER" pool gc
	[ "$(pool_json | jq length)" = 0 ]
	new=$(pooled_bundle new)
	start_container "$new" new
	[ "$(pool_json | jq -r '.[] | select(.owner == "new") | .hostID')" = "$POOL_BASE" ]
	rm -r "$STATE_DIR/pool.d"
	# old's stamp says POOL_BASE too, but old holds nothing.
	third=$(pooled_bundle third)
	create_to_file third "$third"
	[ "$status" = 0 ] || fail "create after the state was lost: $output"
	[ "$(pool_json | jq -c '[.[] | {owner, hostID}] | sort_by(.hostID)')" = "[{\"owner\":\"new\",\"hostID\":$POOL_BASE},{\"owner\":\"third\",\"hostID\":$((POOL_BASE + 65536))}]" ]
	for id in third new old; do wrapper delete --force $id; done
	nothing_left "delete"
}

@test "the pool.json of an earlier release is read, then converted by the next create" {
	local a b
	a=$(pooled_bundle a)
	start_container "$a" a
	# The state as the release before pool.d leaves it.
	pool_json | jq '{version: 1, slotSize: 65536, allocations: .}' >"$TESTDIR/pool.json"
	rm -r "$STATE_DIR/pool.d"
	cp "$TESTDIR/pool.json" "$STATE_DIR/pool.json"
	[ "$(pool_json | jq -r '.[].owner')" = a ] || fail "pool ls of a version 1 state: $(pool_json)"
	[ ! -e "$STATE_DIR/pool.d" ] || fail "pool ls converted the state"
	b=$(pooled_bundle b)
	wrapper --log "$TESTDIR/convert.log" --log-format json create --bundle "$b" b </dev/null >/dev/null 2>"$TESTDIR/b.err" ||
		fail "create after a version 1 state: $(cat "$TESTDIR/b.err")"
	! grep -q 'rebuilt from the live containers' "$TESTDIR/convert.log" || fail "converted by a rebuild: $(cat "$TESTDIR/convert.log")"
	[ ! -e "$STATE_DIR/pool.json" ] || fail "pool.json left after the conversion"
	[ "$(pool_records | sort | tr '\n' ' ')" = "$POOL_BASE-a $((POOL_BASE + 65536))-b " ] || fail "records: $(pool_records)"
	[ "$(jq -c . "$STATE_DIR/pool.d/$POOL_BASE-a")" = "$(jq -c '.allocations[0]' "$TESTDIR/pool.json")" ] || fail "a's record: $(cat "$STATE_DIR/pool.d/$POOL_BASE-a")"
	wrapper start b
	wrapper delete --force b
	wrapper delete --force a
	nothing_left "delete"
}

# killed_joiner ID: a pool pod "target" runs; a create of ID joining its
# PID namespace is killed once the target's namespaces are pinned. b is
# ID's bundle.
killed_joiner() {
	local id=$1 t status=0
	t=$(pooled_bundle target)
	b=$(setup_bundle "$id")
	annotate "$b" runc-userns.io/pid-namespace container:target
	start_container "$t" target
	env RUNC_USERNS_TEST_KILL_AT=joined "$FAULTS_WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" "$id" \
		</dev/null >"$TESTDIR/$id.out" 2>&1 || status=$?
	[ "$status" = 137 ] || fail "create was not killed at joined: status $status, output $(cat "$TESTDIR/$id.out")"
	# The pins of the target's namespaces exist now.
	[ -n "$(staging_mounts)" ]
}

@test "killed after a container:<ID> target's namespaces were pinned" {
	killed_joiner k-joined
	# Its pins of the target's namespaces are no one else's.
	staging_unreachable k-joined
	# delete --force of a container runc never had drops them.
	run -0 wrapper delete --force k-joined
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

@test "pool gc after a container:<ID> join was killed while pinned: the target's namespaces are unpinned, the target runs on" {
	killed_joiner g-joined
	# No delete comes (its shim died too): gc drops the pins.
	run -0 "$WRAPPER" pool gc
	[ -z "$(staging_mounts)" ] || fail "pins left after gc: $(staging_mounts)"
	[ "$(pool_json | jq -r '[.[].owner] | join(",")')" = target ]
	cexec target true
	run -0 wrapper delete --force g-joined
	[ -z "$(ls "$STATE_DIR/containers/"*/g-joined 2>/dev/null)" ] || fail "container dir left"
	wrapper delete --force target
	[ "$(pool_json | jq length)" = 0 ]
}

@test "a SIGTERM to a pooled create while runc runs reaches runc; the wrapper exits with runc's status and gives everything back" {
	local b pid status=0 i
	# A runtime whose create waits for SIGTERM and exits 42 on it; what
	# else it is asked it hands to runc.
	cat >"$TESTDIR/slow-runc" <<-SCRIPT
		#!/bin/bash
		for a in "\$@"; do
			if [ "\$a" = create ]; then
				trap 'echo term >"$TESTDIR/slow-runc.term"; exit 42' TERM
				touch "$TESTDIR/slow-runc.started"
				for _ in \$(seq 300); do sleep 0.1; done
				exit 1
			fi
		done
		exec "$REAL_RUNC" "\$@"
	SCRIPT
	chmod +x "$TESTDIR/slow-runc"
	write_config "$(jq -n --arg rt "$TESTDIR/slow-runc" '{runtime: $rt}')"
	b=$(pooled_bundle t)
	# fd 3 closed: bats waits for whatever holds it.
	"$WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" t </dev/null >"$TESTDIR/t.out" 2>&1 3>&- &
	pid=$!
	KILL_PIDS=$pid
	for i in $(seq 100); do [ -e "$TESTDIR/slow-runc.started" ] && break; sleep 0.1; done
	[ -e "$TESTDIR/slow-runc.started" ] || fail "the runtime's create never started: $(cat "$TESTDIR/t.out")"
	only_pod t
	kill -TERM "$pid"
	for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "create still running 10s after SIGTERM: $(cat "$TESTDIR/t.out")"
	wait "$pid" || status=$?
	KILL_PIDS=
	[ "$status" = 42 ] || fail "create exited $status, want runc's 42: $(cat "$TESTDIR/t.out")"
	[ -e "$TESTDIR/slow-runc.term" ] || fail "SIGTERM never reached the runtime"
	nothing_left "a create whose runc a SIGTERM ended"
}

@test "the production binary has no fault switches: armed at each step, create and delete go through" {
	local b step status
	# The switches' names are in the test binary only.
	grep -q RUNC_USERNS_TEST_KILL_AT "$FAULTS_WRAPPER"
	! grep -q -e RUNC_USERNS_TEST_KILL_AT -e RUNC_USERNS_TEST_STOP_AT "$WRAPPER"
	t=$(pooled_bundle target)
	start_container "$t" target
	for step in joined allocated pinned staged written runc-started; do
		# As killed_joiner's and killed_create's: a join for joined, a pool
		# pod for the other steps.
		if [ "$step" = joined ]; then
			b=$(setup_bundle "p-$step")
			annotate "$b" runc-userns.io/pid-namespace container:target
		else
			b=$(pooled_bundle "p-$step")
		fi
		# Killed or stopped, the create would not return 0 (timeout kills
		# a stopped one: 137).
		status=0
		env RUNC_USERNS_TEST_KILL_AT="$step" RUNC_USERNS_TEST_STOP_AT="$step" timeout -s KILL 30 \
			"$WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" "p-$step" </dev/null >"$TESTDIR/p-$step.out" 2>&1 3>&- || status=$?
		[ "$status" = 0 ] || fail "create armed at $step: status $status: $(cat "$TESTDIR/p-$step.out")"
		wrapper start "p-$step"
		cexec "p-$step" true
	done
	[ "$(cexec p-joined readlink /proc/self/ns/pid)" = "$(cexec target readlink /proc/self/ns/pid)" ]
	for step in runc-started released; do
		status=0
		env RUNC_USERNS_TEST_KILL_AT="$step" RUNC_USERNS_TEST_STOP_AT="$step" timeout -s KILL 30 \
			"$WRAPPER" --root "$RUNC_ROOT" delete --force "p-$step" </dev/null >"$TESTDIR/d-$step.out" 2>&1 3>&- || status=$?
		[ "$status" = 0 ] || fail "delete armed at $step: status $status: $(cat "$TESTDIR/d-$step.out")"
	done
	for step in joined allocated pinned staged written; do wrapper delete --force "p-$step"; done
	wrapper delete --force target
	nothing_left "the deletes"
}

# regenerate BUNDLE JQ-FILTER: config.json again from the bundle's first
# one (config.orig), edited by JQ-FILTER, as a CRI implementation writes a
# fresh spec for each create.
regenerate() {
	jq "$2" "$1/config.orig" >"$1/config.json"
}

@test "a create clears what an earlier container of its ID left: a lost delete, a killed create" {
	mkdir -p "$TESTDIR/vol/dir"
	echo dir >"$TESTDIR/vol/dir/what"
	echo file >"$TESTDIR/vol/file"
	b=$(pooled_bundle same)
	cp "$b/config.json" "$b/config.orig"
	# The same index each time, at a destination of its own (runc makes
	# the mount point in the rootfs, which the creates share).
	at() { echo '.mounts += [{"destination": "/v'"$1"'", "type": "bind", "source": "'"$TESTDIR/vol/$1"'", "options": ["bind"]}]'; }
	regenerate "$b" "$(at file)"
	start_container "$b" same
	[ "$(cexec same cat /vfile)" = file ]
	# A delete lost (runc's own, or one under a config that named another
	# stateDir): runc no longer has the container, its staging directories
	# and range are still there.
	plain_runc delete --force same
	[ -d "$(container_dir same)" ]
	# The same ID again, the same mount now a directory: what runc 1.1's
	# staging left for the file (mounts/N, a file) is no place for it.
	regenerate "$b" "$(at dir)"
	start_container "$b" same
	[ "$(cexec same cat /vdir/what)" = dir ]
	[ -z "$(staging_mounts)" ]
	only_pod same
	wrapper delete --force same
	nothing_left "delete after a lost delete"

	# Killed with its staging attached: the next create of the ID detaches
	# and removes it before it stages the file where the directory was.
	kill_at staged same "$b"
	[ -n "$(staging_mounts)" ]
	regenerate "$b" "$(at file)"
	start_container "$b" same
	[ "$(cexec same cat /vfile)" = file ]
	[ -z "$(staging_mounts)" ]
	only_pod same
	wrapper delete --force same
	nothing_left "delete after a killed create"
}

@test "a delete while the runc create of a killed wrapper still runs: it waits for the create, then deletes and releases what it made" {
	# The chaos run's leak (issue 51): containerd's shim gets the killed
	# create's status at once and deletes, while the runc it started
	# still creates (a createRuntime hook makes it slow here). That delete
	# found nothing, released nothing and gave up; the created container
	# then stayed, its init holding the marker, range and staging.
	b=$(pooled_bundle slow)
	update_config "$b" '.hooks.createRuntime = [{"path": "/bin/sleep", "args": ["sleep", "3"]}]'
	status=0
	env RUNC_USERNS_TEST_KILL_AT=runc-started "$FAULTS_WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" slow \
		</dev/null >"$TESTDIR/slow.out" 2>&1 || status=$?
	[ "$status" = 137 ] || fail "create was not killed: status $status, $(cat "$TESTDIR/slow.out")"
	pgrep -f -- "create --bundle $b slow\$" >/dev/null || fail "runc create is not running any more: the test proves nothing"
	run -0 wrapper delete --force slow
	! pgrep -f -- "create --bundle $b slow\$" >/dev/null
	[ ! -e "$RUNC_ROOT/slow" ]
	nothing_left "delete during the create"
}
