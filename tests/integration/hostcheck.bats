#!/usr/bin/env bats
# hack/hostcheck.sh, which make test runs around the suites: it must see
# what a suite could leave on the host, and pass a host left as it was.
# Each test leaves something on purpose after `save` and removes it in
# teardown, so the check that make test runs after the suites passes.

load helpers

HOSTCHECK=$ROOT_DIR/hack/hostcheck.sh

setup() {
	requires root
	SAVED=$BATS_TEST_TMPDIR/host.saved
	NAME=runc-userns-hostcheck-test.$$
	if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
		CG=/sys/fs/cgroup/$NAME
	else
		CG=/sys/fs/cgroup/pids/$NAME
	fi
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
}

teardown() {
	[ -z "${PID:-}" ] || { kill -9 "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
	if mountpoint -q "$MNT"; then umount "$MNT"; fi
	if [ -d "$CG" ]; then rmdir "$CG"; fi
	rm -f "/run/$NAME"
	if [ -n "${MADE_RUN_MOUNT:-}" ]; then rmdir /run/mount; fi
	if [ -n "${SHMID:-}" ]; then ipcrm -m "$SHMID" 2>/dev/null || true; fi
}

@test "hostcheck: a cgroup, a /run entry and a mount made after save fail the check, each named in its diff" {
	"$HOSTCHECK" save "$SAVED"
	run -0 "$HOSTCHECK" check "$SAVED"
	[ "$output" = "hostcheck: host as before the tests" ]

	mkdir "$CG"
	touch "/run/$NAME"
	mount -t tmpfs hostcheck-test "$MNT"
	run -1 "$HOSTCHECK" check "$SAVED"
	[[ "$output" == *"+$CG"* ]]
	[[ "$output" == *"+$NAME"* ]]
	[[ "$output" == *"+$MNT"* ]]
	[[ "$output" == *"the tests left the host changed"* ]]

	# Gone again: the host passes.
	umount "$MNT"
	rmdir "$CG"
	rm "/run/$NAME"
	run -0 "$HOSTCHECK" check "$SAVED"
}

@test "hostcheck: /run/mount, which libmount makes on the first mount(8) since boot, is not a change" {
	# On a fresh machine the first mount(8) is a suite's: the directory
	# appears between save and check. Made here if the host has none yet
	# (and removed in teardown); never removed if it was there.
	"$HOSTCHECK" save "$SAVED"
	if [ ! -d /run/mount ]; then
		MADE_RUN_MOUNT=1
		mkdir /run/mount
	fi
	run ! grep -qx mount "$SAVED"
	run -0 "$HOSTCHECK" check "$SAVED"
	[ "$output" = "hostcheck: host as before the tests" ]
}

@test "hostcheck: a runc process left running fails the check; one that existed before save does not" {
	"$HOSTCHECK" save "$SAVED"
	(exec -a runc sleep 600) </dev/null >/dev/null 2>&1 3>&- &
	PID=$!
	for _ in $(seq 50); do grep -q '^runc' "/proc/$PID/cmdline" 2>/dev/null && break; sleep 0.1; done
	run -1 "$HOSTCHECK" check "$SAVED"
	[[ "$output" == *"+      1 runc 600"* ]]

	# Saved with it running, it is part of the host as it was.
	"$HOSTCHECK" save "$SAVED"
	run -0 "$HOSTCHECK" check "$SAVED"
}

@test "hostcheck: a SysV shared memory segment made after save fails the check" {
	# What critest's HostIpc specs do on the host (ipcmk), and leave.
	"$HOSTCHECK" save "$SAVED"
	SHMID=$(ipcmk -M 4096 | sed 's/.*: //')
	key=$(awk -v id="$SHMID" '$2 == id {print $1}' /proc/sysvipc/shm)
	run -1 "$HOSTCHECK" check "$SAVED"
	[[ "$output" == *"+$key 4096 0"* ]]
	ipcrm -m "$SHMID"
	run -0 "$HOSTCHECK" check "$SAVED"
}

@test "hostcheck: a /dev node whose owner changed since save fails the check" {
	# What crun 1.8.1 does to a container's stdio on /dev/null. The test
	# never chowns the host's node: it changes the saved owner instead.
	"$HOSTCHECK" save "$SAVED"
	now=$(stat -c %u:%g /dev/null)
	sed -E -i 's|^/dev/null [0-9]+:[0-9]+ |/dev/null 12345:12345 |' "$SAVED"
	run -1 "$HOSTCHECK" check "$SAVED"
	[[ "$output" == *"-/dev/null 12345:12345 "* ]]
	[[ "$output" == *"+/dev/null $now "* ]]
}

@test "hostcheck: a network link made since save fails the check" {
	# A suite's bridge or veth left on the host's network. The test adds no
	# link to the host's: it takes lo out of the saved state instead.
	"$HOSTCHECK" save "$SAVED"
	grep -qx lo "$SAVED"
	sed -i '/^# network links of the host$/,/^# /{/^lo$/d}' "$SAVED"
	run -1 "$HOSTCHECK" check "$SAVED"
	[[ "$output" == *$'\n+lo\n'* ]]
}

@test "hostcheck: check without a saved state, or without arguments, is a usage error" {
	run -2 "$HOSTCHECK" check "$BATS_TEST_TMPDIR/none"
	[[ "$output" == *"no saved state at $BATS_TEST_TMPDIR/none: run"*"save"* ]]
	run -2 "$HOSTCHECK"
	[[ "$output" == "usage: "* ]]
}

@test "note_missing and remove_noted: what a suite made is removed as far as it is empty; what was there, or has content, stays" {
	local T=$BATS_TEST_TMPDIR/host list=$BATS_TEST_TMPDIR/made
	mkdir -p "$T/there/sub"
	touch "$T/there-file"
	note_missing "$list" "$T/there" "$T/there-file" "$T/new/a/b" "$T/new/c" "$T/full" "$T/empty-file" "$T/full-file"
	# The highest missing ancestor, once per path noted; nothing that was there.
	run -0 cat "$list"
	[ "$output" = "$(printf '%s\n' "$T/new" "$T/new" "$T/full" "$T/empty-file" "$T/full-file")" ]
	noted "$list" "$T/new"
	run ! noted "$list" "$T/there"
	run ! noted "$list" "$T/new/a"

	mkdir -p "$T/new/a/b" "$T/new/c" "$T/full/d"
	echo data >"$T/full/d/f"
	touch "$T/empty-file"
	echo data >"$T/full-file"
	remove_noted "$list"
	[ ! -e "$T/new" ]
	[ ! -e "$T/empty-file" ]
	[ -f "$T/full/d/f" ]
	[ -s "$T/full-file" ]
	[ -d "$T/there/sub" ]
	[ -f "$T/there-file" ]
	# A list never written (setup failed early) is no error.
	remove_noted "$BATS_TEST_TMPDIR/none"
}
