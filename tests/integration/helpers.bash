# Shared helpers for the bats suites, after runc's tests/integration/helpers.bash.
bats_require_minimum_version 1.5.0
#
# Every test gets its own runc --root, runc-userns state dir, pool range and
# bundles under a temporary directory; teardown deletes its containers and
# fails the test if a mount or pool entry of it is left behind.

# From this file, not the test file: bench/cri.bats loads it too.
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WRAPPER=$ROOT_DIR/bin/runc-userns
# The same program with the fault switches (RUNC_USERNS_TEST_KILL_AT and
# _STOP_AT, internal/fault), built with the tag faults by make build-faults;
# $WRAPPER has none.
FAULTS_WRAPPER=$ROOT_DIR/bin/runc-userns-faults
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
		# Not a skip: a missing test binary would hide the fault tests.
		faults) [ -x "$FAULTS_WRAPPER" ] || fail "$FAULTS_WRAPPER missing: make build-faults" ;;
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
#
# This and the other helpers that print what they made (setup_bundle,
# pooled_bundle) are called in $(...), where bash drops set -e: each step
# is checked (|| return 1), or a failed one would go unnoticed.
rootfs_template() {
	if [ ! -d "$BATS_FILE_TMPDIR/rootfs" ]; then
		rm -rf "$BATS_FILE_TMPDIR/rootfs.tmp"
		"$ROOT_DIR/hack/mkrootfs.sh" "$BATS_FILE_TMPDIR/rootfs.tmp" || return 1
		mv "$BATS_FILE_TMPDIR/rootfs.tmp" "$BATS_FILE_TMPDIR/rootfs" || return 1
	fi
	echo "$BATS_FILE_TMPDIR/rootfs"
}

# setup_bundle NAME: $TESTDIR/NAME with a busybox rootfs and a `runc spec`
# config running `sleep infinity`, no terminal. Prints the bundle path.
# Fails if the bundle exists: a test that makes it twice would go on with
# the first one's (edited) spec.
setup_bundle() {
	local b=$TESTDIR/$1 rootfs
	if [ -e "$b" ]; then
		fail "setup_bundle: $b exists already"
		return 1
	fi
	mkdir -p "$b" || return 1
	rootfs=$(rootfs_template) || return 1
	cp -a "$rootfs" "$b/rootfs" || return 1
	(cd "$b" && "$REAL_RUNC" spec) || return 1
	# A cgroup of its own: runc's default is /<id>, and suites running side
	# by side reuse IDs.
	update_config "$b" '.process.terminal = false | .root.readonly = false | .process.args = ["sleep", "infinity"]
		| .linux.cgroupsPath = "/'"$(basename "$TESTDIR")-$1"'"' || return 1
	echo "$b"
}

# pooled_bundle NAME: setup_bundle, asking for a pool user namespace.
pooled_bundle() {
	local b
	b=$(setup_bundle "$1") || return 1
	annotate "$b" runc-userns.io/userns auto || return 1
	echo "$b"
}

# netns_elsewhere: a network namespace made outside any container, pinned
# at $TESTDIR/netns, as containerd's and CRI-O's CNI namespaces are (the
# host's user namespace owns it). The test unmounts it: teardown_env fails
# on a mount left under the test dir.
netns_elsewhere() {
	touch "$TESTDIR/netns" || return 1
	unshare --net="$TESTDIR/netns" true
}

# join_netns PATH BUNDLE...: each bundle's network namespace entry joins
# the namespace at PATH.
join_netns() {
	local ns=$1 b
	shift
	for b in "$@"; do
		update_config "$b" '.linux.namespaces |= map(if .type == "network" then .path = "'"$ns"'" else . end)' || return 1
	done
}

# pod_elsewhere SANDBOX APP: a pod with a pool user namespace, its sandbox
# and one app container (bundles $TESTDIR/SANDBOX and $TESTDIR/APP),
# started in a network namespace made elsewhere (netns_elsewhere), as
# containerd and CRI-O run every pod.
pod_elsewhere() {
	local sb app
	netns_elsewhere || return 1
	sb=$(pooled_bundle "$1") || return 1
	app=$(pooled_bundle "$2") || return 1
	join_netns "$TESTDIR/netns" "$sb" "$app" || return 1
	as_pod "$sb" "$1" sandbox || return 1
	as_pod "$app" "$1" container || return 1
	start_container "$sb" "$1" || return 1
	start_container "$app" "$2"
}

# create_to_file ID BUNDLE: create ID, its output in a file, setting status
# and output as `run` does (a pipe would be held by the container's init
# should the create reach runc, and `run` would wait for it).
create_to_file() {
	status=0
	wrapper create --bundle "$2" "$1" </dev/null >"$TESTDIR/create-$1.out" 2>&1 || status=$?
	output=$(cat "$TESTDIR/create-$1.out")
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

# envless_wrapper ARGS...: the wrapper with the test's runc root and no
# environment at all, as podman and some shims call delete and exec. It
# then reads the operator config at its default path, so it runs in a
# private mount namespace in which /etc (an overlay on the host's) has the
# test's config at /etc/runc-userns/config.json.
envless_wrapper() {
	mkdir -p "$TESTDIR/etc.upper/runc-userns" "$TESTDIR/etc.work" || return 1
	cp "$RUNC_USERNS_CONFIG" "$TESTDIR/etc.upper/runc-userns/config.json" || return 1
	unshare -m --propagation private sh -c 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc && shift 2 && exec env -i "$@"' \
		envless "$TESTDIR/etc.upper" "$TESTDIR/etc.work" "$WRAPPER" --root "$RUNC_ROOT" "$@"
}

# start_container BUNDLE ID: create (detached, stdio on /dev/null) and start.
start_container() {
	wrapper create --bundle "$1" "$2" </dev/null >/dev/null 2>"$TESTDIR/$2.create.err" || {
		cat "$TESTDIR/$2.create.err" >&2
		return 1
	}
	wrapper start "$2"
}

# wait_pids PID...: wait for each background job (all of them, even after
# one failed); fails naming each that did not exit 0. A bare `wait`
# returns 0 whatever its jobs did.
wait_pids() {
	local pid rc bad=""
	for pid in "$@"; do
		rc=0
		wait "$pid" || rc=$?
		[ "$rc" = 0 ] || bad+=" $pid (status $rc)"
	done
	[ -z "$bad" ] || fail "background jobs failed:$bad"
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

# pool_records: the files in the pool's record directory (one per range),
# temporary files included.
pool_records() {
	ls -A "$STATE_DIR/pool.d" 2>/dev/null || true
}

# pool_empty: the pool holds no range (and has no file being written), or
# was never made.
pool_empty() {
	[ -z "$(pool_records)" ]
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

# note_missing LIST PATH...: append to LIST each PATH that does not exist yet
# (its highest missing ancestor, for what mkdir -p makes), before a suite
# or the program it runs makes it on the host.
note_missing() {
	local list=$1 p top
	shift
	for p in "$@"; do
		top=
		while [ ! -e "$p" ] && [ "$p" != / ]; do
			top=$p
			p=$(dirname "$p")
		done
		[ -z "$top" ] || echo "$top" >>"$list"
	done
}

# noted LIST PATH: note_missing noted PATH in LIST.
noted() { [ -f "$1" ] && grep -qxF "$2" "$1"; }

# remove_noted LIST: remove what note_missing noted, as far as it is empty:
# the empty directories of a noted directory (deepest first), an empty noted
# file. Anything with content stays, for the host check to show.
remove_noted() {
	[ -f "$1" ] || return 0
	local p
	for p in $(sort -ru "$1"); do
		if [ -d "$p" ] && [ ! -L "$p" ]; then
			find "$p" -xdev -depth -type d -empty -delete 2>/dev/null || true
		elif [ -f "$p" ] && [ ! -s "$p" ]; then
			rm -f "$p"
		fi
	done
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
	local records
	records=$(pool_records)
	[ -z "$records" ] || leaks+="pool entries left: $(echo $records); "
	if [ -f "$STATE_DIR/pool.json" ]; then
		leaks+="an unconverted pool.json left: $(cat "$STATE_DIR/pool.json"); "
	fi
	if [ -d "$STATE_DIR" ]; then
		local left
		left=$(cd "$STATE_DIR" && find pods containers inflight -mindepth 1 2>/dev/null | head -5)
		[ -z "$left" ] || leaks+="state dir entries left: $left; "
	fi
	rm -rf "$TESTDIR"
	[ -z "$leaks" ] || fail "teardown: $leaks"
}

# --- Pass-through parity, logging and argv helpers (passthrough.bats,
# logging.bats, cli.bats).

FAKE_RUNC=$ROOT_DIR/tests/bin/runc

# normalise_time: runc's log lines carry the time they were written; blank
# it (text: time="...", json: "time":"...") so two runs can be compared.
normalise_time() {
	sed -E 's/time="[^"]*"/time="-"/g; s/"time":"[^"]*"/"time":"-"/g'
}

# capture NAME CMD...: run CMD with stdin on /dev/null; its stdout goes to
# $TESTDIR/NAME.out, its stderr (times normalised) to $TESTDIR/NAME.err,
# its exit status to $TESTDIR/NAME.rc. Never fails.
capture() {
	local name=$1 rc=0
	shift
	"$@" </dev/null >"$TESTDIR/$name.out" 2>"$TESTDIR/$name.err.raw" || rc=$?
	normalise_time <"$TESTDIR/$name.err.raw" >"$TESTDIR/$name.err"
	rm -f "$TESTDIR/$name.err.raw"
	echo "$rc" >"$TESTDIR/$name.rc"
}

# same_capture A B: captures A and B have the same stdout, stderr and exit
# status; the differences are printed otherwise.
same_capture() {
	local f bad=0
	for f in out err rc; do
		if ! cmp -s "$TESTDIR/$1.$f" "$TESTDIR/$2.$f"; then
			echo "$f differs ($1 vs $2):" >&2
			diff -u --label "$1.$f" --label "$2.$f" "$TESTDIR/$1.$f" "$TESTDIR/$2.$f" >&2 || true
			bad=1
		fi
	done
	return "$bad"
}

# as_argv0 NAME CMD ARGS...: run CMD with argv[0] NAME.
as_argv0() {
	(exec -a "$1" "${@:2}")
}

# same_as_runc_argv ARGS...: $WRAPPER ARGS and $REAL_RUNC ARGS, called by
# the same argv[0] (runc names itself after it), print the same stdout and
# stderr (runc's times normalised) and exit alike.
same_as_runc_argv() {
	capture runc as_argv0 "$WRAPPER" "$REAL_RUNC" "$@"
	capture wrapper "$WRAPPER" "$@"
	same_capture runc wrapper
}

# same_as_runc ARGS...: same_as_runc_argv with the test's --root first.
same_as_runc() {
	same_as_runc_argv --root "$RUNC_ROOT" "$@"
}

# wait_status ID STATUS: wait (5 s at most) until runc reports the
# container in STATUS.
wait_status() {
	local i s
	for i in $(seq 50); do
		s=$(plain_runc state "$1" 2>/dev/null | jq -r .status)
		[ "$s" = "$2" ] && return 0
		sleep 0.1
	done
	fail "container $1 is ${s:-gone}, not $2"
}

# use_fake_runc: the operator config's runtime is tests/bin/runc, which
# records each call in $FAKE_RUNC_LOG (see that file).
use_fake_runc() {
	export FAKE_RUNC_LOG=$TESTDIR/fake-runc.log
	rm -f "$FAKE_RUNC_LOG"
	write_config "$(jq -n --arg rt "$FAKE_RUNC" '{runtime: $rt}')"
}

# fake_runc_calls: how many times the fake runc ran.
fake_runc_calls() {
	local -a f
	local i=0 n=0
	[ -f "$FAKE_RUNC_LOG" ] || {
		echo 0
		return
	}
	mapfile -t -d '' f <"$FAKE_RUNC_LOG"
	while [ "$i" -lt "${#f[@]}" ]; do
		i=$((i + 2 + f[i]))
		n=$((n + 1))
	done
	echo "$n"
}

# fake_runc_argv [N]: call N of the fake runc (from 1; the last one by
# default): its $0 and its arguments, each NUL-terminated.
fake_runc_argv() {
	local -a f starts=()
	local i=0 want=${1:-0}
	mapfile -t -d '' f <"$FAKE_RUNC_LOG"
	while [ "$i" -lt "${#f[@]}" ]; do
		starts+=("$i")
		i=$((i + 2 + f[i]))
	done
	[ "$want" -gt 0 ] || want=${#starts[@]}
	[ "$want" -le "${#starts[@]}" ] || fail "fake runc ran ${#starts[@]} times, not $want"
	i=${starts[want - 1]}
	printf '%s\0' "${f[@]:i+1:f[i]+1}"
}

# expect_fake_argv ARGS...: the fake runc's last call was "$FAKE_RUNC" ARGS,
# byte for byte (both sides are shown, one argument a line, on mismatch).
expect_fake_argv() {
	local want got
	want=$(printf '%s\0' "$FAKE_RUNC" "$@" | od -An -c)
	got=$(fake_runc_argv | od -An -c)
	[ "$want" = "$got" ] && return 0
	echo "fake runc argv differs; want:" >&2
	printf '  [%s]\n' "$FAKE_RUNC" "$@" >&2
	echo "got:" >&2
	fake_runc_argv | xargs -0 printf '  [%s]\n' >&2
	return 1
}

# fake_runc_env NAME: the value of NAME in the fake runc's last environment
# (fails if it was not set).
fake_runc_env() {
	local kv
	while IFS= read -r -d '' kv; do
		if [ "${kv%%=*}" = "$1" ]; then
			printf '%s\n' "${kv#*=}"
			return 0
		fi
	done <"$FAKE_RUNC_LOG.env"
	fail "fake runc's environment has no $1"
}

# fake_runc_fd FD: where the fake runc's fd FD pointed in its last call
# (fails if it was not open).
fake_runc_fd() {
	awk -v fd="$1" '$(NF-1) == "->" && $(NF-2) == fd {print $NF; found = 1} END {exit !found}' "$FAKE_RUNC_LOG.fds" ||
		fail "fake runc had no fd $1 open: $(cat "$FAKE_RUNC_LOG.fds")"
}

# as_nobody CMD...: CMD as an unprivileged local user.
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

# container_dir ID: the state dir's directory of container ID (its staging).
container_dir() {
	local d
	for d in "$STATE_DIR"/containers/*/"$1"; do
		[ -d "$d" ] && echo "$d" && return 0
	done
	fail "no container directory for $1 under $STATE_DIR/containers"
}

# staging_unreachable ID: an unprivileged local user gets EACCES on every
# path below container ID's directory (its staged rootfs, volumes and
# overlay layers), and cannot list it.
staging_unreachable() {
	local dir p out n=0
	dir=$(container_dir "$1") || return 1
	if out=$(as_nobody ls "$dir" 2>&1) || [[ "$out" != *"Permission denied"* ]]; then
		fail "ls $dir as nobody: $out"
		return 1
	fi
	while read -r p; do
		n=$((n + 1))
		if out=$(as_nobody stat "$p" 2>&1) || [[ "$out" != *"Permission denied"* ]]; then
			fail "stat $p as nobody: $out"
			return 1
		fi
	done < <(find "$dir" -mindepth 1 -maxdepth 2)
	[ "$n" -gt 0 ] || { fail "nothing below $dir to check"; return 1; }
}
