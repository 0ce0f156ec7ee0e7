#!/usr/bin/env bats
# podman as a client: `podman --runtime runc-userns` (issue 6).
#
# One private podman instance for the file: its own containers.conf drop-ins
# and storage.conf, graph root, run root, tmp dir, events log, file locks,
# network config dir, cgroupfs under a cgroup parent of its own, no network.
# Its storage is podman's default driver, overlay (issue 36); a second graph
# root on vfs (PD_DRIVER=vfs) keeps the tests of the directory rootfs.
# It all runs in a private mount namespace (held by a `sleep` for the file)
# in which
#  - /etc/runc-userns is a bind of a test directory, so the wrapper finds the
#    test's operator config (runtime = $REAL_RUNC, state dir and pool in the
#    test directory) where a real install has it. podman runs the runtime
#    with conmon's filtered environment on create/exec and with no
#    environment at all (no PATH) on kill/state/delete: nothing can be passed
#    through the environment, so podman's runtime here is bin/runc-userns
#    itself, found the way production finds it;
#  - /etc/containers/containers.conf.d holds the instance's settings and
#    contrib/podman/runc-userns.conf as shipped (only the binaries' paths
#    are this checkout's);
#  - /run/runc is a tmpfs: podman passes runc no --root, so runc's state
#    (and the root the wrapper's pool records) is runc's default;
#  - /var/lib/containers is a tmpfs: `podman import` writes its blob-info
#    cache there whatever --root says;
#  - /etc/subuid and /etc/subgid are binds of test files (podman --userns auto).
# The pod pins and staging mounts of the wrapper live in that namespace and
# die with it; every test also checks that none is left while it runs.

load helpers

# A second range, after the test pool: the caller's own mappings (--uidmap,
# --userns auto) must never be taken from or counted in the pool.
CALLER_BASE=$((POOL_BASE + POOL_SLOTS * 65536))

setup_file() {
	requires root
	local t
	for t in podman conmon unshare nsenter; do
		command -v "$t" >/dev/null || fail "$t is not installed (make deps installs it)"
	done
	export PD=$BATS_FILE_TMPDIR/podman
	# Short names: podman fails when its run root's path nears 50 bytes.
	mkdir -p "$PD"/{graph,run,tmp,gv,rv,tv,xdg,net,cfg,etc-runc-userns,state}
	# The pods' root (an unprivileged host ID) must reach the state dir.
	chmod 0711 "$BATS_RUN_TMPDIR" "$BATS_FILE_TMPDIR" "$PD"
	chmod 0700 "$PD/xdg"
	export PD_STATE=$PD/state PD_CGROUP=runc-userns-podman-$$
	export CONTAINERS_STORAGE_CONF=$PD/cfg/storage.conf
	export CONTAINERS_REGISTRIES_CONF=$PD/cfg/registries.conf
	export XDG_RUNTIME_DIR=$PD/xdg TMPDIR=$PD/tmp
	unset CONTAINERS_CONF
	: >"$CONTAINERS_REGISTRIES_CONF"
	: >"$PD/empty"
	# containers.conf comes from drop-ins, as on a real install: the
	# namespace's /etc/containers/containers.conf.d is $PD/conf.d with
	# the private instance's settings, contrib's runc-userns.conf as
	# shipped, and the paths of this checkout's binaries last.
	mkdir -p "$PD/conf.d"
	# Ulimits below the machine's hard limits: podman's default nofile
	# (1048576) is above them here, and raising a hard limit needs
	# CAP_SYS_RESOURCE, which this sandbox lacks (runc's setrlimit fails).
	cat >"$PD/conf.d/00-private.conf" <<-EOF
		[containers]
		default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
		netns = "none"
		cgroups = "no-conmon"
		[network]
		network_config_dir = "$PD/net"
		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		events_logfile_path = "$PD/tmp/events.log"
		lock_type = "file"
		tmp_dir = "$PD/tmp"
		image_copy_tmp_dir = "$PD/tmp"
		runtime = "runc"
	EOF
	cp "$ROOT_DIR/contrib/podman/runc-userns.conf" "$PD/conf.d/"
	cat >"$PD/conf.d/zz-paths.conf" <<-EOF
		[engine.runtimes]
		runc = ["$REAL_RUNC"]
		runc-userns = ["$WRAPPER"]
	EOF
	cat >"$CONTAINERS_STORAGE_CONF" <<-EOF
		[storage]
		driver = "overlay"
		graphroot = "$PD/graph"
		runroot = "$PD/run"
		[storage.options]
		root-auto-userns-user = "containers"
	EOF
	# A runc built without libseccomp (`go install` without -tags seccomp)
	# refuses podman's default profile: run unconfined with that one.
	if ! "$REAL_RUNC" features 2>/dev/null | jq -e '.linux.seccomp.enabled' >/dev/null; then
		sed -i 's/^\[containers\]$/&\nseccomp_profile = "unconfined"/' "$PD/conf.d/00-private.conf"
	fi
	write_pd_config '{}'
	echo "containers:$CALLER_BASE:131072" >"$PD/subid"

	# Mount points that do not exist on the host are made for the file and
	# removed by teardown_file (as far as they are empty).
	local p dirs=(/etc/runc-userns /var/lib/containers /run/runc /etc/containers/containers.conf.d)
	note_missing "$PD/made" "${dirs[@]}" /etc/subuid /etc/subgid
	mkdir -p -m 0700 "${dirs[@]}"
	for p in /etc/subuid /etc/subgid; do
		[ -e "$p" ] || touch "$p"
	done
	unshare -m --propagation private sleep infinity </dev/null >/dev/null 2>&1 3>&- &
	export NS_PID=$!
	local i
	for i in $(seq 50); do
		[ "$(readlink "/proc/$NS_PID/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && break
		sleep 0.1
	done
	[ "$(readlink "/proc/$NS_PID/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || fail "no private mount namespace"
	in_ns mount --bind "$PD/etc-runc-userns" /etc/runc-userns
	in_ns mount --bind "$PD/conf.d" /etc/containers/containers.conf.d
	# The host's own settings, if any, stay out.
	[ ! -e /etc/containers/containers.conf ] || in_ns mount --bind "$PD/empty" /etc/containers/containers.conf
	in_ns mount -t tmpfs -o mode=0700 tmpfs /var/lib/containers
	in_ns mount -t tmpfs -o mode=0700 tmpfs /run/runc
	in_ns mount --bind "$PD/subid" /etc/subuid
	in_ns mount --bind "$PD/subid" /etc/subgid

	"$ROOT_DIR/hack/mkrootfs.sh" "$PD/rootfs"
	import_busybox
	PD_DRIVER=vfs import_busybox
}

# import_busybox: the test image, localhost/busybox, in pd's store.
import_busybox() {
	tar -C "$PD/rootfs" -c . | pd import - localhost/busybox >/dev/null
}

teardown_file() {
	[ -n "${PD:-}" ] || return 0
	if [ -n "${NS_PID:-}" ]; then
		pd rm -a -f -t 0 >/dev/null 2>&1 || true
		PD_DRIVER=vfs pd rm -a -f -t 0 >/dev/null 2>&1 || true
		# Whatever podman could not remove: its runc containers, then the
		# processes left in the namespace (conmon), then the holder.
		local id pid ns
		for id in $(in_ns ls /run/runc 2>/dev/null); do
			in_ns "$WRAPPER" delete --force "$id" >/dev/null 2>&1 || true
		done
		ns=$(readlink "/proc/$NS_PID/ns/mnt")
		for pid in $(ls /proc | grep -E '^[0-9]+$'); do
			[ "$pid" != "$NS_PID" ] && [ "$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)" = "$ns" ] &&
				kill -9 "$pid" 2>/dev/null || true
		done
		kill "$NS_PID" 2>/dev/null || true
		wait "$NS_PID" 2>/dev/null || true
	fi
	remove_noted "$PD/made"
	local p
	for p in /sys/fs/cgroup/*/"$PD_CGROUP"; do
		[ -d "$p" ] && rmdir "$p" 2>/dev/null || true
	done
	# With the namespace gone, nothing is mounted on the stores: overlay's
	# and vfs's layers are plain directories, rm can do it.
	rm -rf "$PD"
}

setup() {
	# The image, unless a test before this one removed it.
	pd image exists localhost/busybox || import_busybox
	VOL=$BATS_TEST_TMPDIR/vol
	mkdir -p "$VOL"
	chmod 0711 "$BATS_TEST_TMPDIR"
	chmod 0755 "$VOL"
	echo root >"$VOL/root-file"
	echo user >"$VOL/user-file"
	chown 1000:1000 "$VOL/user-file"
}

# teardown: remove every container, then nothing of ours may be left: no
# pool entry, no pin or staging mount, the host's /dev/null untouched.
teardown() {
	local leaks=""
	if [ -n "${NET_PID:-}" ]; then
		kill "$NET_PID" 2>/dev/null || true
		wait "$NET_PID" 2>/dev/null || true
	fi
	PD_DRIVER=overlay pd rm -a -f -t 0 >/dev/null 2>&1 || true
	PD_DRIVER=vfs pd rm -a -f -t 0 >/dev/null 2>&1 || true
	write_pd_config '{}'
	rm -f "$PD/conf.d/zz-conmon-env.conf"
	if [ -f "$PD/alt.json" ]; then
		[ "$(alt_pool | jq length)" = 0 ] || leaks+="entries left in the pool of $PD/alt.json: $(alt_pool); "
		[ -z "$(in_ns awk -v d="$PD/alt-state/" 'index($5, d) == 1' /proc/self/mountinfo)" ] || leaks+="mounts left under $PD/alt-state; "
		rm -f "$PD/alt.json"
	fi
	local n
	n=$(pd_pool | jq length)
	[ "$n" = 0 ] || leaks+="pool entries left: $(pd_pool); "
	local m
	m=$(in_ns awk -v d="$PD_STATE/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo)
	[ -z "$m" ] || leaks+="mounts left: $m; "
	m=$(in_ns ls /run/runc)
	[ -z "$m" ] || leaks+="runc containers left: $m; "
	# podman's own overlays (<graph>/overlay/<layer>/merged) went with
	# their containers.
	m=$(in_ns awk -v d="$PD/graph/overlay/" 'index($5, d) == 1 && $5 ~ /\/merged$/ {print $5}' /proc/self/mountinfo)
	[ -z "$m" ] || leaks+="podman overlays left: $m; "
	m=$(grep -F "$BATS_FILE_TMPDIR" /proc/self/mountinfo || true)
	[ -z "$m" ] || leaks+="mounts in the host's namespace: $m; "
	[ "$(stat -c '%u:%g %a' /dev/null)" = "0:0 666" ] || leaks+="/dev/null is $(stat -c '%u:%g %a' /dev/null); "
	[ -z "$leaks" ] || fail "teardown: $leaks"
}

# in_ns CMD...: CMD in the file's mount namespace.
in_ns() {
	nsenter -t "$NS_PID" -m -- "$@"
}

# pd ARGS...: the private podman, on its overlay store, or on its vfs one
# with PD_DRIVER=vfs (each store its own graph root, run root and tmp dir:
# podman's database and locks live there).
pd() {
	local drv=${PD_DRIVER:-overlay} root=$PD/graph run=$PD/run tmp=$PD/tmp
	[ "$drv" = overlay ] || root=$PD/gv run=$PD/rv tmp=$PD/tv
	in_ns podman --root "$root" --runroot "$run" --tmpdir "$tmp" --storage-driver "$drv" \
		--cgroup-manager cgroupfs --events-backend file "$@"
}

# prun RUNTIME ARGS...: `podman run` with RUNTIME (runc or runc-userns), no
# network, under the file's cgroup parent.
prun() {
	local rt=$1
	shift
	pd --runtime "$rt" run --network none --cgroup-parent "/$PD_CGROUP" "$@"
}

# write_pd_config JSON-OVERRIDES: the operator config the wrapper finds at
# /etc/runc-userns/config.json in the namespace (test pool, $REAL_RUNC).
write_pd_config() {
	jq -n --arg runtime "$REAL_RUNC" --arg state "$PD_STATE" \
		--argjson base "$POOL_BASE" --argjson size "$((POOL_SLOTS * 65536))" --argjson over "$1" \
		'{runtime: $runtime, stateDir: $state, userns: {ranges: [{hostID: $base, size: $size}]}} * $over' \
		>"$PD/etc-runc-userns/config.json"
}

# pd_pool: the pool's allocations as JSON, read by the wrapper with the
# config at its default path (no RUNC_USERNS_CONFIG).
pd_pool() {
	in_ns env -u RUNC_USERNS_CONFIG "$WRAPPER" pool ls --json
}

# alt_pool: the pool of the config at $PD/alt.json as JSON.
alt_pool() {
	in_ns env RUNC_USERNS_CONFIG="$PD/alt.json" "$WRAPPER" pool ls --json
}

# lifecycle RUNTIME: a detached container through RUNTIME taken through
# run -d, exec, stop, logs, inspect and rm; prints a transcript in which
# nothing depends on the runtime.
lifecycle() {
	local rt=$1 n=life-$1 i
	# Called by `run`, where set -e does not hold: a failed start fails it.
	prun "$rt" -d --name "$n" localhost/busybox \
		sh -c 'trap "echo got TERM; exit 7" TERM; echo started; while :; do sleep 0.1; done' >/dev/null || return 1
	for i in $(seq 50); do
		pd logs "$n" 2>/dev/null | grep -q started && break
		sleep 0.1
	done
	pd exec "$n" sh -c 'echo exec out; echo exec err >&2; id -u; exit 4' 2>"$BATS_TEST_TMPDIR/exec.err"
	echo "exec status $?"
	cat "$BATS_TEST_TMPDIR/exec.err"
	pd exec "$n" cat /proc/1/cmdline | tr '\0' ' '
	echo
	pd stop -t 10 "$n" >/dev/null
	echo "stop status $?"
	pd logs "$n"
	pd inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$n"
	pd rm "$n" >/dev/null
	echo "rm status $?"
	pd ps -a --format '{{.Names}}' | grep -c "^$n\$" || true
}

@test "plain containers: output and exit status are runc's" {
	run --separate-stderr prun runc --rm localhost/busybox sh -c 'echo out; echo err >&2; exit 3'
	[ "$status" = 3 ]
	local want_out=$output want_err=$stderr
	[ "$want_out" = out ]
	[ "$want_err" = err ]
	run --separate-stderr prun runc-userns --rm localhost/busybox sh -c 'echo out; echo err >&2; exit 3'
	[ "$status" = 3 ]
	[ "$output" = "$want_out" ]
	[ "$stderr" = "$want_err" ]
	run -0 prun runc-userns --rm localhost/busybox cat /proc/self/uid_map
	[ "$(echo $output)" = "0 0 4294967295" ]
}

@test "plain containers: run -d, exec, logs, stop, rm as with runc" {
	run -0 lifecycle runc
	want=$output
	echo "$want" | grep -qx 'exec status 4'
	echo "$want" | grep -qx 'got TERM'
	echo "$want" | grep -qx 'exited 7'
	run -0 lifecycle runc-userns
	[ "$output" = "$want" ] || {
		diff -u <(echo "$want") <(echo "$output")
		false
	}
}

@test "plain containers: runc's own errors reach podman as with runc" {
	run -127 prun runc --rm localhost/busybox /nonexistent
	want=${output/#Error: runc: /Error: runc-userns: }
	[[ "$want" == *'exec: "/nonexistent": stat /nonexistent: no such file or directory'* ]]
	run -127 prun runc-userns --rm localhost/busybox /nonexistent
	[ "$output" = "$want" ]
}

@test "podman info: the real runc's version lines, then ours" {
	run -0 pd --runtime runc-userns info --format '{{.Host.OCIRuntime.Name}}|{{.Host.OCIRuntime.Version}}'
	[ "${lines[0]}" = "runc-userns|$("$REAL_RUNC" --version | sed -n 1p)" ]
	[[ "${lines[-1]}" == "runc-userns: "*" (real runtime $REAL_RUNC)" ]]
}

@test "--pid container:NAME joins the other container's PID namespace" {
	prun runc-userns -d --name p1 localhost/busybox sleep 1000
	run -0 pd exec p1 readlink /proc/self/ns/pid
	want=$output
	run -0 prun runc-userns --rm --pid container:p1 localhost/busybox sh -c 'readlink /proc/self/ns/pid; ps -o args'
	[ "${lines[0]}" = "$want" ]
	[[ "$output" == *"sleep 1000"* ]]
}

# auto_basics: a pool container on pd's store: a pool range, root inside,
# / writable, a host-root volume root's, rm returns the range.
auto_basics() {
	prun runc-userns -d --name u1 --annotation runc-userns.io/userns=auto -v "$VOL:/v" localhost/busybox \
		sh -c 'echo ready; exec sleep 1000'
	run -0 pd exec u1 cat /proc/self/uid_map
	[ "$(echo $output)" = "0 $POOL_BASE 65536" ]
	run -0 pd exec u1 cat /proc/self/gid_map
	[ "$(echo $output)" = "0 $POOL_BASE 65536" ]
	run -0 pd exec u1 id -u
	[ "$output" = 0 ]
	run -0 pd exec u1 sh -c 'echo hi >/newfile && stat -c %u:%g /newfile'
	[ "$output" = 0:0 ]
	run -0 pd exec u1 stat -c '%n %u:%g' /v/root-file /v/user-file
	[ "${lines[0]}" = "/v/root-file 0:0" ]
	[ "${lines[1]}" = "/v/user-file 1000:1000" ]
	run -0 pd exec u1 sh -c 'echo new >/v/created'
	[ "$(stat -c %u:%g "$VOL/created")" = 0:0 ]
	# What a runtime prints on a successful create lands in podman logs:
	# only the container's own output is there.
	run -0 pd logs u1
	[ "$output" = ready ]
	# The host sees the container's init as the pool's first ID.
	pid=$(pd inspect --format '{{.State.Pid}}' u1)
	[ "$(stat -c %u "/proc/$pid")" = "$POOL_BASE" ]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 1 ]
	[ "$(echo "$output" | jq -r '.[0].hostID')" = "$POOL_BASE" ]
	id=$(pd inspect --format '{{.Id}}' u1)
	[ "$(echo "$output" | jq -r '.[0].owner')" = "$id" ]
	# podman passes runc no --root: runc's default root.
	[ "$(echo "$output" | jq -r '.[0].root')" = /run/runc ]
	# podman runs kill and delete with an empty environment: the wrapper
	# must still find the pool (its stamp on the spec) and give it back.
	pd stop -t 0 u1 >/dev/null
	pd rm u1 >/dev/null
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
	[ -z "$(in_ns awk -v d="$PD_STATE/" 'index($5, d) == 1' /proc/self/mountinfo)" ]
	# The range is free again: the next pod gets the same one.
	run -0 prun runc-userns --rm --annotation runc-userns.io/userns=auto localhost/busybox cat /proc/self/uid_map
	[ "$(echo $output)" = "0 $POOL_BASE 65536" ]
}

@test "userns=auto (overlay): a pool range, root inside, / writable, a host-root volume is root's, rm returns the range" {
	auto_basics
}

@test "userns=auto (vfs): a pool range, root inside, / writable, a host-root volume is root's, rm returns the range" {
	PD_DRIVER=vfs
	auto_basics
}

# LOOK: what a container sees of its rootfs and of the files podman puts
# in it, then writes in it (/etc as podman left it in the upper dir, a
# new directory at /).
LOOK='id -u; stat -c "%n %u:%g %a" / /etc /etc/hostname /etc/hosts /etc/passwd /bin/busybox /tmp; echo w >/etc/written; mkdir /newdir; stat -c "%n %u:%g" /etc/written /newdir'

@test "overlay, userns=auto: the rootfs as podman's own --userns auto shows it; the image and the container layer are not chowned" {
	# The reference: podman's own user namespace, on idmapped layers of
	# its own.
	run -0 prun runc-userns --rm --userns auto localhost/busybox sh -c "$LOOK"
	want=$output
	[ "${lines[0]}" = 0 ]
	[[ "${lines[1]}" == "/ 0:0 "* ]]
	[[ "$want" == *"/etc/hosts 0:0 "* ]]
	[[ "$want" == *"/etc/written 0:0"* ]]
	image=$(pd image inspect --format '{{.GraphDriver.Data.UpperDir}}' localhost/busybox)
	[ -d "$image" ]
	before=$(find "$image" -printf '%p %u:%g %m\n' | sha256sum)
	# podman cp before the start writes through podman's own mount of the
	# layer, as host root. (Into a running pool container it fails, on vfs
	# too: podman writes as host root in the container's mount namespace,
	# where the idmapped rootfs has no ID for host root.)
	pd --runtime runc-userns create --network none --cgroup-parent "/$PD_CGROUP" --name o1 \
		--annotation runc-userns.io/userns=auto localhost/busybox sleep 1000 >/dev/null
	pd cp "$VOL/root-file" o1:/copied
	pd start o1 >/dev/null
	run -0 pd exec o1 sh -c 'cat /copied; stat -c %u:%g /copied'
	[ "$output" = "$(printf 'root\n0:0')" ]
	run -0 pd exec o1 cat /proc/self/uid_map
	[ "$(echo $output)" = "0 $POOL_BASE 65536" ]
	run -0 pd exec o1 sh -c "$LOOK"
	[ "$output" = "$want" ] || {
		diff -u <(echo "$want") <(echo "$output")
		false
	}
	# On disk, what the pod wrote is host root's, as without a user
	# namespace: podman recorded no mapping for this layer, and its own
	# tools (commit, diff, cp) read it so.
	upper=$(pd inspect --format '{{.GraphDriver.Data.UpperDir}}' o1)
	[ "$(stat -c '%n %u:%g' "$upper" "$upper/etc/written" "$upper/newdir")" = "$(printf '%s 0:0\n' "$upper" "$upper/etc/written" "$upper/newdir")" ]
	[ "$(find "$image" -printf '%p %u:%g %m\n' | sha256sum)" = "$before" ]
	run -0 pd diff o1
	[[ "$output" == *"A /newdir"* ]]
	pd rm -f -t 0 o1 >/dev/null
	[ ! -e "$upper" ]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
}

@test "overlay, userns=auto in a network namespace of its own (--network ns:): /etc/resolv.conf, /etc/hosts, /etc/hostname are root's" {
	# With --network none podman writes no resolv.conf.
	unshare -n sleep infinity </dev/null >/dev/null 2>&1 3>&- &
	NET_PID=$!
	for i in $(seq 50); do
		[ "$(readlink "/proc/$NET_PID/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.1
	done
	run -0 pd --runtime runc-userns run --rm --network "ns:/proc/$NET_PID/ns/net" --cgroup-parent "/$PD_CGROUP" \
		--annotation runc-userns.io/userns=auto localhost/busybox \
		sh -c 'cat /proc/self/uid_map; stat -c "%n %u:%g %a" /etc/resolv.conf /etc/hosts /etc/hostname; echo x >>/etc/hosts'
	[ "$(echo ${lines[0]})" = "0 $POOL_BASE 65536" ]
	[ "${lines[1]}" = "/etc/resolv.conf 0:0 644" ]
	[ "${lines[2]}" = "/etc/hosts 0:0 644" ]
	[ "${lines[3]}" = "/etc/hostname 0:0 644" ]
	[ "$(pd_pool | jq length)" = 0 ]
}

@test "overlay, mode always: a container without the annotation runs in a pool range; rm -f, stop+start and --rm return it" {
	write_pd_config '{"userns": {"mode": "always"}}'
	run -0 prun runc-userns --rm -v "$VOL:/v" localhost/busybox \
		sh -c 'cat /proc/self/uid_map; stat -c "%n %u:%g" /etc/hostname /etc/hosts /v/root-file /v/user-file'
	[ "$(echo ${lines[0]})" = "0 $POOL_BASE 65536" ]
	[ "${lines[1]}" = "/etc/hostname 0:0" ]
	[ "${lines[2]}" = "/etc/hosts 0:0" ]
	[ "${lines[3]}" = "/v/root-file 0:0" ]
	[ "${lines[4]}" = "/v/user-file 1000:1000" ]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
	prun runc-userns -d --name a1 localhost/busybox sleep 1000
	[ "$(pd_pool | jq length)" = 1 ]
	pd stop -t 0 a1 >/dev/null
	for i in $(seq 100); do
		[ "$(pd_pool | jq length)" = 0 ] && break
		sleep 0.1
	done
	[ "$(pd_pool | jq length)" = 0 ]
	pd start a1 >/dev/null
	run -0 pd exec a1 sh -c 'cat /proc/self/uid_map; echo again >/etc/again'
	[ "$(echo $output)" = "0 $POOL_BASE 65536" ]
	pd rm -f -t 0 a1 >/dev/null
	[ "$(pd_pool | jq length)" = 0 ]
}

@test "overlay: after pool containers, podman rm, image rm and system reset work and leave nothing" {
	prun runc-userns -d --name s1 --annotation runc-userns.io/userns=auto localhost/busybox sh -c 'echo x >/etc/w; exec sleep 1000'
	prun runc-userns --name s2 --annotation runc-userns.io/userns=auto localhost/busybox sh -c 'echo y >/etc/w'
	layers=$(ls "$PD/graph/overlay" | wc -l)
	pd rm -f -t 0 s1 >/dev/null
	pd rm s2 >/dev/null
	[ "$(pd_pool | jq length)" = 0 ]
	[ "$(ls "$PD/graph/overlay" | wc -l)" = $((layers - 2)) ]
	pd image rm localhost/busybox >/dev/null
	# reset removes the graph root (the layers, runc-userns's work
	# directories among them) and unmounts what podman mounted there.
	pd system reset --force >/dev/null
	[ ! -e "$PD/graph/overlay" ]
	run -0 in_ns awk -v d="$PD/graph/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo
	[ -z "$output" ]
}

@test "overlay mounted with index=on (storage.conf mountopt): refused before runc, in one line saying what to use" {
	run pd --storage-opt overlay.mountopt=nodev,index=on --runtime runc-userns run --rm --network none \
		--cgroup-parent "/$PD_CGROUP" --annotation runc-userns.io/userns=auto localhost/busybox true
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" = 1 ]
	[[ "$output" == *"index=on"*"Mount the rootfs with index=off"* ]]
	[[ "$output" != *"permission denied"* ]]
	[[ "$output" != *'{"level"'* ]]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
	# podman's way round it: its own user namespace.
	run -0 pd --storage-opt overlay.mountopt=nodev,index=on --runtime runc-userns run --rm --network none \
		--cgroup-parent "/$PD_CGROUP" --userns auto localhost/busybox id -u
	[ "$output" = 0 ]
}

@test "userns=auto: podman rm -f of a running container returns the range" {
	prun runc-userns -d --name u2 --annotation runc-userns.io/userns=auto localhost/busybox sleep 1000
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 1 ]
	pd rm -f -t 0 u2 >/dev/null
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
}

@test "userns=auto: stop releases the range, start takes one again, rm -f releases it" {
	prun runc-userns -d --name u3 --annotation runc-userns.io/userns=auto localhost/busybox sleep 1000
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 1 ]
	# podman's cleanup runs delete once the container has exited.
	pd stop -t 0 u3 >/dev/null
	for i in $(seq 100); do
		[ "$(pd_pool | jq length)" = 0 ] && break
		sleep 0.1
	done
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
	pd start u3 >/dev/null
	run -0 pd exec u3 cat /proc/self/uid_map
	[ "$(echo $output)" = "0 $POOL_BASE 65536" ]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 1 ]
	pd rm -f -t 0 u3 >/dev/null
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
}

@test "userns=auto: a create that fails returns the range" {
	run -127 prun runc-userns --rm --annotation runc-userns.io/userns=auto localhost/busybox /nonexistent
	[[ "$output" == *'exec: "/nonexistent": stat /nonexistent: no such file or directory'* ]]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
}

@test "-v SRC:DST:idmap is idmapped with the caller's --uidmap; the caller's mappings win, nothing is allocated" {
	maps=(--uidmap "0:$CALLER_BASE:65536" --gidmap "0:$CALLER_BASE:65536")
	prun runc-userns -d --name m1 "${maps[@]}" --annotation runc-userns.io/userns=auto \
		-v "$VOL:/v:idmap" -v "$VOL:/plain" localhost/busybox sleep 1000
	run -0 pd exec m1 cat /proc/self/uid_map
	[ "$(echo $output)" = "0 $CALLER_BASE 65536" ]
	run -0 pd exec m1 stat -c '%n %u:%g' /v/root-file /v/user-file /plain/root-file
	[ "${lines[0]}" = "/v/root-file 0:0" ]
	[ "${lines[1]}" = "/v/user-file 1000:1000" ]
	# Not asked for, not idmapped: host root is the overflow ID inside.
	[ "${lines[2]}" = "/plain/root-file 65534:65534" ]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
}

@test "-v SRC:DST:idmap: runc-userns on this runc gives what runc >= 1.2 gives" {
	maps=(--uidmap "0:$CALLER_BASE:65536" --gidmap "0:$CALLER_BASE:65536")
	run -0 prun runc-userns --rm "${maps[@]}" -v "$VOL:/v:idmap" localhost/busybox stat -c '%n %u:%g' /v/root-file /v/user-file
	[ "${lines[0]}" = "/v/root-file 0:0" ]
	[ "${lines[1]}" = "/v/user-file 1000:1000" ]
	want=$output
	run -0 prun runc --rm "${maps[@]}" -v "$VOL:/v:idmap" localhost/busybox stat -c '%n %u:%g' /v/root-file /v/user-file
	if "$REAL_RUNC" features 2>/dev/null | jq -e '.linux.mountExtensions.idmap.enabled' >/dev/null; then
		[ "$output" = "$want" ]
	else
		# runc 1.1 ignores the option: that is what runc-userns fixes.
		[ "${lines[0]}" = "/v/root-file 65534:65534" ]
	fi
}

@test "--userns auto: podman's own range is kept, :idmap volumes use it, nothing is allocated" {
	run -0 prun runc-userns --rm --userns auto --annotation runc-userns.io/userns=auto -v "$VOL:/v:idmap" localhost/busybox \
		sh -c 'cat /proc/self/uid_map; stat -c "%n %u:%g" /v/root-file /v/user-file'
	read -r inside host size <<<"${lines[0]}"
	[ "$inside" = 0 ]
	[ "$host" -ge "$CALLER_BASE" ]
	[ "$((host + size))" -le "$((CALLER_BASE + 131072))" ]
	[ "${lines[1]}" = "/v/root-file 0:0" ]
	[ "${lines[2]}" = "/v/user-file 1000:1000" ]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 0 ]
}

@test "errors of ours reach the podman user readably: a bad annotation value" {
	run prun runc-userns --rm --annotation runc-userns.io/userns=bogus localhost/busybox true
	[ "$status" -ne 0 ]
	# One line: ours, with the key, the value and what is allowed; not a
	# raw JSON log line nor podman's complaint that it could not parse one.
	[ "${#lines[@]}" = 1 ]
	[[ "$output" == *'runc-userns.io/userns="bogus": want "auto"'* ]]
	[[ "$output" != *'{"level"'* ]]
	[[ "$output" != *unmarshal* ]]
}

@test "errors of ours reach the podman user readably: the pool is exhausted" {
	write_pd_config "$(jq -n --argjson base "$POOL_BASE" '{userns: {ranges: [{hostID: $base, size: 65536}]}}')"
	prun runc-userns -d --name e1 --annotation runc-userns.io/userns=auto localhost/busybox sleep 1000
	run prun runc-userns --rm --name e2 --annotation runc-userns.io/userns=auto localhost/busybox true
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" = 1 ]
	[[ "$output" == *"user namespace pool exhausted: 1 of 1 ranges in use"* ]]
	[[ "$output" != *'{"level"'* ]]
	[[ "$output" != *unmarshal* ]]
	run -0 pd_pool
	[ "$(echo "$output" | jq length)" = 1 ]
}

@test "a config passed only through conmon_env_vars (another stateDir than the default config's): restart with a volume and rm leave its pool empty" {
	# podman runs create with conmon's environment, delete with none: the
	# delete reads the config at the default path, whose stateDir is not
	# the one the container was created in. The same pool range: no pod
	# runs under the default config meanwhile.
	jq --arg state "$PD/alt-state" '.stateDir = $state' "$PD/etc-runc-userns/config.json" >"$PD/alt.json"
	cat >"$PD/conf.d/zz-conmon-env.conf" <<-EOF
		[engine]
		conmon_env_vars = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "RUNC_USERNS_CONFIG=$PD/alt.json"]
	EOF
	prun runc-userns -d --name cv -v "$VOL:/vol" --annotation runc-userns.io/userns=auto localhost/busybox sleep 1000 >/dev/null
	[ "$(alt_pool | jq length)" = 1 ]
	[ "$(pd_pool | jq length)" = 0 ]
	run -0 pd exec cv cat /proc/self/uid_map /vol/root-file
	[ "$(echo $output)" = "0 $POOL_BASE 65536 root" ]
	# restart: podman's cleanup deletes with no environment, then creates
	# the same ID again with conmon's; what the first create staged for
	# /etc/hostname and the volume must not be in the second's way.
	run -0 pd restart -t 0 cv
	run -0 pd exec cv cat /proc/self/uid_map /vol/root-file
	[ "$(echo $output)" = "0 $POOL_BASE 65536 root" ]
	[ "$(alt_pool | jq -c '[.[] | .members | length]')" = '[1]' ]
	[ "$(pd_pool | jq length)" = 0 ]
	pd rm -f -t 0 cv >/dev/null
	[ "$(alt_pool | jq length)" = 0 ]
	[ "$(pd_pool | jq length)" = 0 ]
	[ -z "$(in_ns awk -v d="$PD/alt-state/" 'index($5, d) == 1' /proc/self/mountinfo)" ]
	[ -z "$(find "$PD/alt-state/pods" "$PD/alt-state/containers" -mindepth 1 2>/dev/null)" ]
}
