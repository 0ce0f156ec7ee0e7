#!/usr/bin/env bats
# Host hygiene: a user-namespaced container whose stdio is a host device
# node must not get that node chowned. crun 1.8.1 fchowns fds 0-2 to the
# container's root; with stdio on the host's /dev/null that made the host's
# /dev/null the pod's. The wrapper hands such a runtime private nodes of
# the same devices instead. runc does not need them (its init chowns stdio
# from inside the user namespace, where host-owned nodes cannot be
# chowned, and skips /dev/null): it gets the caller's stdio, and the runc
# test below checks that the host's nodes survive it.

load helpers

DEVS="/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty"

setup() {
	requires root
	setup_env
	b=$(pooled_bundle d)
}

# host_devs_ok: every device of $DEVS is 0:0 0666; a broken one is
# repaired, and the test fails.
host_devs_ok() {
	local d bad=""
	for d in $DEVS; do
		[ -e "$d" ] || continue
		if [ "$(stat -c '%u:%g %a' "$d")" != "0:0 666" ]; then
			bad+="$d is $(stat -c '%u:%g %a' "$d"); "
			chown 0:0 "$d"
			chmod 0666 "$d"
		fi
	done
	[ -z "$bad" ] || fail "host device nodes changed (repaired): $bad"
}

teardown() {
	local status=0
	host_devs_ok || status=1
	teardown_env || status=1
	return "$status"
}

# with_stdio_on DEV ID: create (and start, if it worked) ID with fds 0, 1
# and 2 on DEV, the way podman hands them over with no log driver.
with_stdio_on() {
	wrapper create --bundle "$b" "$2" <"$1" >"$1" 2>"$1"
}

@test "runc: stdio on host device nodes; the nodes keep 0:0 0666, the container sees EOF and discards output" {
	local dev
	for dev in /dev/null /dev/zero /dev/full; do
		with_stdio_on "$dev" "c${dev##*/}" || fail "create with stdio on $dev failed"
		# runc's container holds the host's node itself, not a private one.
		local fd1
		fd1=$(readlink "/proc/$(plain_runc state "c${dev##*/}" | jq .pid)/fd/1")
		[ "$fd1" = "$dev" ] || fail "the container's stdout is $fd1, want the caller's $dev"
		wrapper start "c${dev##*/}"
		host_devs_ok
		wrapper delete --force "c${dev##*/}"
	done
	# Same device semantics through the private node: stdin /dev/null is
	# at EOF at once, output to /dev/null succeeds.
	update_config "$b" '.process.args = ["sh", "-c", "cat; echo x; echo stdin-eof rc=$? >&3"]'
	wrapper run --preserve-fds 1 --bundle "$b" fg </dev/null >/dev/null 2>"$TESTDIR/fg.err" 3>"$TESTDIR/fd3" || fail "run: $(cat "$TESTDIR/fg.err")"
	[ "$(cat "$TESTDIR/fd3")" = "stdin-eof rc=0" ] || fail "fd3: $(cat "$TESTDIR/fd3")"
	host_devs_ok
}

@test "crun: stdio on the host's /dev/null of a pool container leaves it 0:0 0666" {
	command -v crun >/dev/null || fail "crun is not installed (hack/install-deps.sh installs it)"
	REAL_RUNC=$(command -v crun) write_config '{}'
	# crun 1.8.1 reads specs up to 1.1; upstream runc's `spec` writes 1.2.
	update_config "$b" '.ociVersion = "1.0.2"'
	local status=0
	# fds 0 and 1 on the host's /dev/null; 2 on a file, for crun's error.
	wrapper create --bundle "$b" cr </dev/null >/dev/null 2>"$TESTDIR/cr.err" || status=$?
	# This node runs cgroup v1 hybrid, where crun 1.8.1 refuses every
	# container ("cgroups in hybrid mode not supported") after it has
	# already chowned its stdio: the chown is what this test is about.
	if [ "$status" != 0 ]; then
		grep -q "cgroups in hybrid mode not supported" "$TESTDIR/cr.err" ||
			fail "crun create failed for another reason: $(cat "$TESTDIR/cr.err")"
	else
		wrapper start cr
		wrapper delete --force cr
	fi
	host_devs_ok
	[ "$(pool_json | jq length)" = 0 ] || fail "pool: $(pool_json)"
}
