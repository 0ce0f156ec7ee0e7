#!/usr/bin/env bats
# Many wrapper processes at once, as many shims call it on a busy node:
# disjoint ranges, no range released while a container still uses it.

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

@test "64 pods created in parallel: 64 disjoint ranges, all run, all deletes return every range" {
	local n=64 i pid want pids
	[ "$POOL_SLOTS" -ge "$n" ] || fail "POOL_SLOTS=$POOL_SLOTS: this test needs $n"
	for i in $(seq 1 $n); do
		b=$(pooled_bundle "p$i")
	done
	pids=()
	for i in $(seq 1 $n); do
		wrapper create --bundle "$TESTDIR/p$i" "p$i" </dev/null >/dev/null 2>"$TESTDIR/p$i.err" &
		pids+=($!)
	done
	wait_pids "${pids[@]}" || fail "creates: $(cat "$TESTDIR"/p*.err)"
	for i in $(seq 1 $n); do
		[ ! -s "$TESTDIR/p$i.err" ] || fail "create p$i: $(cat "$TESTDIR/p$i.err")"
	done
	pids=()
	for i in $(seq 1 $n); do
		wrapper start "p$i" &
		pids+=($!)
	done
	wait_pids "${pids[@]}"
	run -0 pool_json
	local pool=$output
	[ "$(jq length <<<"$pool")" = $n ] || fail "pool: $pool"
	[ "$(jq '[.[].hostID] | unique | length' <<<"$pool")" = $n ] || fail "ranges not disjoint: $pool"
	# Every range is a whole slot of the test pool, and they do not overlap.
	jq -e --argjson base "$POOL_BASE" --argjson slots "$POOL_SLOTS" \
		'sort_by(.hostID) | all(.[]; .size == 65536 and .hostID >= $base and (.hostID - $base) % 65536 == 0 and .hostID + .size <= $base + $slots * 65536)' <<<"$pool" >/dev/null ||
		fail "ranges outside the pool: $pool"
	# Each container runs, as its recorded range.
	for i in $(seq 1 $n); do
		[ "$(plain_runc state "p$i" | jq -r .status)" = running ] || fail "p$i is not running"
		pid=$(plain_runc state "p$i" | jq .pid)
		want=$(jq -r ".[] | select(.owner == \"p$i\") | .hostID" <<<"$pool")
		[ "$(stat -c %u "/proc/$pid")" = "$want" ] || fail "p$i runs as $(stat -c %u "/proc/$pid"), its range starts at $want"
	done
	pids=()
	for i in $(seq 1 $n); do
		wrapper delete --force "p$i" 2>"$TESTDIR/p$i.del.err" &
		pids+=($!)
	done
	wait_pids "${pids[@]}" || fail "deletes: $(cat "$TESTDIR"/p*.del.err)"
	for i in $(seq 1 $n); do
		[ ! -s "$TESTDIR/p$i.del.err" ] || fail "delete p$i: $(cat "$TESTDIR/p$i.del.err")"
	done
	[ "$(pool_json | jq length)" = 0 ] || fail "pool after the deletes: $(pool_json)"
}

@test "interleaved creates and deletes in one pod never release the range a live container uses" {
	local i round sb range pids
	sb=$(pooled_bundle sb)
	as_pod "$sb" sb sandbox
	start_container "$sb" sb
	range=$(pool_json | jq -r '.[0].hostID')
	for i in $(seq 1 12); do
		b=$(pooled_bundle "app$i")
		as_pod "$b" sb container
	done
	# Rounds of four creates racing four deletes of the round before.
	for round in 0 1 2; do
		pids=()
		for i in $(seq $((round * 4 + 1)) $((round * 4 + 4))); do
			start_container "$TESTDIR/app$i" "app$i" &
			pids+=($!)
		done
		if [ "$round" -gt 0 ]; then
			for i in $(seq $((round * 4 - 3)) $((round * 4))); do
				wrapper delete --force "app$i" &
				pids+=($!)
			done
		fi
		wait_pids "${pids[@]}"
		[ "$(pool_json | jq length)" = 1 ] || fail "round $round: pool $(pool_json)"
		[ "$(pool_json | jq -r '.[0].hostID')" = "$range" ] || fail "round $round: the pod's range moved: $(pool_json)"
		for i in $(seq $((round * 4 + 1)) $((round * 4 + 4))); do
			[ "$(cexec "app$i" cat /proc/self/uid_map | awk '{print $2}')" = "$range" ] || fail "app$i is not in the pod's range"
		done
	done
	# The sandbox goes first: its range stays while apps live, and
	# another pod gets a different one.
	wrapper delete --force sb
	[ "$(pool_json | jq -r '.[0].hostID')" = "$range" ] || fail "the range went with the sandbox while apps live: $(pool_json)"
	o=$(pooled_bundle other)
	start_container "$o" other
	[ "$(pool_json | jq -r '.[] | select(.owner == "other") | .hostID')" != "$range" ] || fail "another pod got the live pod's range"
	# And a gc keeps it too.
	run -0 "$WRAPPER" pool gc
	[ "$(pool_json | jq -r '.[] | select(.owner == "sb") | .hostID')" = "$range" ] || fail "gc took the range of a pod whose apps live: $output"
	pids=()
	for i in 9 10 11 12; do
		wrapper delete --force "app$i" &
		pids+=($!)
	done
	wait_pids "${pids[@]}"
	[ "$(pool_json | jq -r '.[].owner')" = other ] || fail "after the last app: $(pool_json)"
	wrapper delete --force other
}
