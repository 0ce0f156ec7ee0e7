# Shared helpers for the bats suites, after runc's tests/integration/helpers.bash.
bats_require_minimum_version 1.5.0
#
# Every test gets its own runc --root, runc-userns state dir, pool range and
# bundles under a temporary directory; teardown deletes its containers and
# fails the test if a mount or pool entry of it is left behind.

ROOT_DIR=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
WRAPPER=$ROOT_DIR/bin/runc-userns
REAL_RUNC=${REAL_RUNC:-/usr/sbin/runc}
# A test pool far from any real user: 64 slots of 65536 from 3221225472.
POOL_BASE=3221225472
POOL_SLOTS=${POOL_SLOTS:-64}

# requires FEATURE...: skip the test when the machine lacks a feature.
requires() {
	local f
	for f in "$@"; do
		case $f in
		root) [ "$(id -u)" = 0 ] || skip "test requires root" ;;
		*) fail "requires: unknown feature $f" ;;
		esac
	done
}

fail() {
	echo "$@" >&2
	return 1
}

# setup_env: a fresh test directory and operator config.
setup_env() {
	TESTDIR=$(mktemp -d "$BATS_RUN_TMPDIR/t.XXXXXX")
	# The pod's root (an unprivileged host ID) must reach the state dir.
	chmod 0711 "$BATS_RUN_TMPDIR" "$TESTDIR"
	RUNC_ROOT=$TESTDIR/runc-root
	STATE_DIR=$TESTDIR/state
	export RUNC_USERNS_CONFIG=$TESTDIR/runc-userns.json
	write_config '{}'
}

# write_config JSON-OVERRIDES: the operator config, with runtime, state dir
# and test pool set, merged with the overrides (jq syntax, e.g. '{"userns":{"mode":"always"}}').
write_config() {
	jq -n --arg runtime "$REAL_RUNC" --arg state "$STATE_DIR" \
		--argjson base "$POOL_BASE" --argjson size "$((POOL_SLOTS * 65536))" --argjson over "$1" \
		'{runtime: $runtime, stateDir: $state, userns: {ranges: [{hostID: $base, size: $size}]}} * $over' \
		>"$RUNC_USERNS_CONFIG"
}

# rootfs_template: one busybox rootfs per test file, copied into bundles.
rootfs_template() {
	if [ ! -d "$BATS_FILE_TMPDIR/rootfs" ]; then
		"$ROOT_DIR/hack/mkrootfs.sh" "$BATS_FILE_TMPDIR/rootfs.tmp" && mv "$BATS_FILE_TMPDIR/rootfs.tmp" "$BATS_FILE_TMPDIR/rootfs"
	fi
	echo "$BATS_FILE_TMPDIR/rootfs"
}

# setup_bundle NAME: $TESTDIR/NAME with a busybox rootfs and a `runc spec`
# config running `sleep infinity`, no terminal. Prints the bundle path.
setup_bundle() {
	local b=$TESTDIR/$1
	mkdir -p "$b"
	cp -a "$(rootfs_template)" "$b/rootfs"
	(cd "$b" && "$REAL_RUNC" spec)
	update_config "$b" '.process.terminal = false | .root.readonly = false | .process.args = ["sleep", "infinity"]'
	echo "$b"
}

# update_config BUNDLE JQ-FILTER
update_config() {
	jq "$2" "$1/config.json" >"$1/config.json.new" && mv "$1/config.json.new" "$1/config.json"
}

# annotate BUNDLE KEY VALUE
annotate() {
	update_config "$1" ".annotations[\"$2\"] = \"$3\""
}

# as_pod BUNDLE SANDBOX-ID TYPE: containerd's pod annotations.
as_pod() {
	update_config "$1" ".annotations[\"io.kubernetes.cri.sandbox-id\"] = \"$2\" | .annotations[\"io.kubernetes.cri.container-type\"] = \"$3\""
}

# wrapper ARGS...: runc-userns with the test's runc root.
wrapper() {
	"$WRAPPER" --root "$RUNC_ROOT" "$@"
}

# plain_runc ARGS...: the real runc with the same root.
plain_runc() {
	"$REAL_RUNC" --root "$RUNC_ROOT" "$@"
}

# start_container BUNDLE ID: create (detached, stdio on /dev/null) and start.
start_container() {
	wrapper create --bundle "$1" "$2" </dev/null >/dev/null 2>"$TESTDIR/$2.create.err" || {
		cat "$TESTDIR/$2.create.err" >&2
		return 1
	}
	wrapper start "$2"
}

# cexec ID CMD...: run a command in a running container.
cexec() {
	local id=$1
	shift
	wrapper exec "$id" "$@"
}

# pool_json: the pool as JSON.
pool_json() {
	"$WRAPPER" pool ls --json
}

# test_mounts: mounts under this test's directory.
test_mounts() {
	awk -v d="$TESTDIR" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo
}

# staging_mounts: staging mounts of ours (rootfs, bind mounts) that are on
# the host; none should outlive a create. Pod pins (pods/) are not staging.
staging_mounts() {
	awk -v d="$STATE_DIR/containers/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo
}

# teardown_env: delete every container of the test, then check nothing of
# it is left: no mount under the test dir, no pool entry, no state dir entry.
teardown_env() {
	[ -n "${TESTDIR:-}" ] || return 0
	local id leaks=""
	if [ -d "$RUNC_ROOT" ]; then
		for id in $(ls "$RUNC_ROOT"); do
			"$WRAPPER" --root "$RUNC_ROOT" delete --force "$id" >/dev/null 2>&1 || true
			"$REAL_RUNC" --root "$RUNC_ROOT" delete --force "$id" >/dev/null 2>&1 || true
		done
	fi
	local m
	m=$(test_mounts)
	if [ -n "$m" ]; then
		leaks+="mounts left: $m; "
		for m in $(echo "$m" | sort -r); do umount -l "$m" 2>/dev/null || true; done
	fi
	if [ -f "$STATE_DIR/pool.json" ]; then
		local n
		n=$(jq '.allocations | length' "$STATE_DIR/pool.json")
		[ "$n" = 0 ] || leaks+="pool entries left: $(jq -c '.allocations' "$STATE_DIR/pool.json"); "
	fi
	if [ -d "$STATE_DIR" ]; then
		local left
		left=$(cd "$STATE_DIR" && find pods containers -mindepth 1 2>/dev/null | head -5)
		[ -z "$left" ] || leaks+="state dir entries left: $left; "
	fi
	rm -rf "$TESTDIR"
	[ -z "$leaks" ] || fail "teardown: $leaks"
}
