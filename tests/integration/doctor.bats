#!/usr/bin/env bats
# `runc-userns doctor [--json] [PATH...]`: is this node fit for pods with
# user namespaces, and can each PATH be idmapped (ext4, tmpfs, proc).

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

# doctor_json STATUS ARGS...: `doctor --json ARGS` exits STATUS, its
# stdout in $output; stderr (the one-line summary of failures) is kept
# apart so that $output stays one JSON document.
doctor_json() {
	local want=$1
	shift
	run "-$want" --separate-stderr "$WRAPPER" doctor --json "$@"
	echo "$output" | jq -e '.checks | type == "array"' >/dev/null
}

# check NAME: the check named NAME in $output, as compact JSON.
check() {
	echo "$output" | jq -ec --arg n "$1" '.checks[] | select(.name == $n)'
}

# state_snapshot: everything under the state dir (path, type, mode, size,
# mtime), or "absent".
state_snapshot() {
	if [ -e "$STATE_DIR" ]; then
		find "$STATE_DIR" -printf '%p %y %m %s %T@\n' | sort
	else
		echo absent
	fi
}

@test "doctor: exits 0 on this machine, one ok line for the kernel" {
	run -0 "$WRAPPER" doctor
	echo "$output" | grep -E '^ok +kernel +[0-9]+\.[0-9]+.*idmapped mounts \(>= 5\.12\)'
	[ "$(echo "$output" | grep -c '^FAIL' || true)" = 0 ]
	# The config the helpers wrote, with its pool of $POOL_SLOTS slots.
	echo "$output" | grep -E "^ok +config +$RUNC_USERNS_CONFIG: "
	echo "$output" | grep -E "^ok +pool usage +0 of $POOL_SLOTS slots in use, $POOL_SLOTS free"
}

@test "doctor --json: the runtime's idmap support is what its features say; runc 1.1 is fine too" {
	doctor_json 0
	echo "$output" | jq -e '.ok == true'
	echo "$output" | jq -e '[.checks[] | keys == ["detail", "hint", "name", "status"]] | all'
	check runtime | jq -e --arg rt "$REAL_RUNC" '.status == "ok" and (.detail | startswith($rt + ": runc version"))'
	if [ "$("$REAL_RUNC" features 2>/dev/null | jq '.linux.mountExtensions.idmap.enabled // false')" = true ]; then
		check "runtime idmap" | jq -e '.status == "ok" and (.detail | startswith("native"))'
	else
		check "runtime idmap" | jq -e '.status == "ok" and (.detail | endswith("runc-userns stages idmapped mounts itself"))'
	fi
	check "kernel idmap" | jq -e '.status == "ok"'
}

@test "doctor PATH on ext4: idmapped mounts supported" {
	# An ext4 of the test's own (a loop file), whatever the test dir is on
	# (tmpfs, overlay); unmounted here, or by teardown_env on a failure (a
	# loop mount's device goes with its last unmount).
	truncate -s 32M "$TESTDIR/ext4.img"
	mkfs.ext4 -q -F "$TESTDIR/ext4.img"
	mkdir "$TESTDIR/ext4"
	mount -o loop "$TESTDIR/ext4.img" "$TESTDIR/ext4"
	[ "$(findmnt -n -o FSTYPE -T "$TESTDIR/ext4")" = ext4 ]
	run --separate-stderr "$WRAPPER" doctor --json "$TESTDIR/ext4"
	umount "$TESTDIR/ext4"
	# After the unmount, so that a failure leaves no mount behind.
	[ "$status" = 0 ]
	echo "$output" | jq -e '.ok == true'
	check "path $TESTDIR/ext4" | jq -e '.status == "ok" and .detail == "ext4: idmapped mounts supported"'
}

@test "doctor PATH on tmpfs: supported from Linux 6.3" {
	v=$(uname -r)
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%[!0-9]*}
	[ "$major" -gt 6 ] || { [ "$major" = 6 ] && [ "$minor" -ge 3 ]; } || skip "kernel $v: tmpfs has idmapped mounts from 6.3"
	mkdir "$TESTDIR/tmpfs"
	mount -t tmpfs -o mode=0755 tmpfs "$TESTDIR/tmpfs"
	run --separate-stderr "$WRAPPER" doctor --json "$TESTDIR/tmpfs"
	umount "$TESTDIR/tmpfs"
	# After the unmount, so that a failure leaves no mount behind.
	[ "$status" = 0 ]
	check "path $TESTDIR/tmpfs" | jq -e '.status == "ok" and .detail == "tmpfs: idmapped mounts supported"'
}

@test "doctor /proc: fails naming proc, with the kernel's error and a hint; exit 1" {
	run -1 "$WRAPPER" doctor /proc
	echo "$output" | grep -E '^FAIL +path /proc +proc: .*MOUNT_ATTR_IDMAP.*invalid argument'
	echo "$output" | grep -E '^ +hint: idmapped mounts need ext4'
	echo "$output" | grep -F 'runc-userns: doctor: 1 of '
	# The rest of the node is fine.
	[ "$(echo "$output" | grep -c '^FAIL')" = 1 ]

	doctor_json 1 /proc
	echo "$output" | jq -e '.ok == false'
	check "path /proc" | jq -e '.status == "fail" and (.detail | startswith("proc: ")) and .hint != ""'
}

@test "doctor with a missing path: fails naming it" {
	doctor_json 1 "$TESTDIR/nope" "$TESTDIR"
	echo "$output" | jq -e '.ok == false'
	check "path $TESTDIR/nope" | jq -e --arg p "$TESTDIR/nope" '.status == "fail" and (.detail | contains($p)) and (.detail | contains("no such file"))'
	# A bad path does not spoil the others.
	check "path $TESTDIR" | jq -e '.status == "ok"'
}

@test "doctor changes nothing: no mount left, state dir untouched (absent, or with a running pod)" {
	mounts_before=$(cat /proc/self/mountinfo)
	mkdir "$TESTDIR/tmp"
	TMPDIR=$TESTDIR/tmp run -0 "$WRAPPER" doctor "$TESTDIR"
	[ "$(state_snapshot)" = absent ]
	[ "$(cat /proc/self/mountinfo)" = "$mounts_before" ]
	[ -z "$(ls -A "$TESTDIR/tmp")" ]

	# An empty state dir stays empty: no pool.lock, no features cache.
	mkdir -m 0711 "$STATE_DIR"
	run -0 "$WRAPPER" doctor
	[ -z "$(ls -A "$STATE_DIR")" ]

	b=$(pooled_bundle pod)
	start_container "$b" pod
	state_before=$(state_snapshot)
	mounts_before=$(cat /proc/self/mountinfo)
	TMPDIR=$TESTDIR/tmp run -1 --separate-stderr "$WRAPPER" doctor --json "$TESTDIR" /proc "$TESTDIR/nope"
	[ "$(state_snapshot)" = "$state_before" ]
	[ "$(cat /proc/self/mountinfo)" = "$mounts_before" ]
	[ -z "$(ls -A "$TESTDIR/tmp")" ]
	check "pool usage" | jq -e --arg n "$POOL_SLOTS" '.status == "ok" and .detail == "1 of \($n) slots in use, \($n | tonumber - 1) free"'
}

@test "doctor: a full pool is a warning, not a failure" {
	write_config "$(jq -n --argjson base "$POOL_BASE" '{userns: {ranges: [{hostID: $base, size: 65536}]}}')"
	b=$(pooled_bundle full)
	start_container "$b" full
	run -0 "$WRAPPER" doctor
	echo "$output" | grep -E '^warn +pool usage +1 of 1 slots in use, 0 free'
	echo "$output" | grep -E '^ +hint: reclaim the ranges of pods whose containers are all gone \(runc-userns pool gc\)'
}

@test "doctor: a config that does not load fails, and the checks that need it are left out" {
	echo '{"stateDir": "/run/x", "bogus": 1}' >"$RUNC_USERNS_CONFIG"
	doctor_json 1
	check config | jq -e '.status == "fail" and (.detail | contains("bogus"))'
	echo "$output" | jq -e '[.checks[].name] == ["kernel", "user namespaces", "config"]'
}

@test "doctor: a state dir below a directory others cannot search fails with the chmod hint" {
	mkdir -m 0700 "$TESTDIR/private"
	write_config "$(jq -n --arg s "$TESTDIR/private/state" '{stateDir: $s}')"
	run -1 "$WRAPPER" doctor
	echo "$output" | grep -E "^FAIL +state dir +$TESTDIR/private/state \(not created yet\) on .*: $TESTDIR/private has mode 0700"
	echo "$output" | grep -E "^ +hint: chmod o\+x $TESTDIR/private"
	[ ! -e "$TESTDIR/private/state" ]
}

@test "doctor: pool records that are not slots of the configured ranges fail (the pool would allocate nothing)" {
	b=$(pooled_bundle moved)
	start_container "$b" moved
	# The operator moves the pool while a pod holds a range of the old one.
	write_config "$(jq -n --argjson base "$((POOL_BASE + POOL_SLOTS * 65536))" '{userns: {ranges: [{hostID: $base, size: 655360}]}}')"
	doctor_json 1
	check "pool usage" | jq -e --arg r "$POOL_BASE+65536" '.status == "fail" and (.detail | contains("owner moved holds \($r), not a slot"))'
	# Put it back so teardown can return the range.
	write_config '{}'
}
