#!/usr/bin/env bats
# CRI-O, reproduced (issue 52): CRI-O is not packaged here, so this suite
# does what CRI-O v1.31.13 with conmon 2.1.6 was seen to do to a runtime
# configured as runtime_path, on a node of this kind (tests/integration/crio/
# holds the specs it wrote there, sandbox.json and app.json, with its temp
# dir /run/crio-node):
#   - each pod's network, IPC and UTS namespaces are made beforehand and
#     pinned as pinns pins them (nsfs bind mounts under a namespaces_dir of
#     the suite's own: netns/, ipcns/, utsns/), in the host's user namespace,
#     and every container of the pod gets their paths;
#   - a TARGET PID namespace arrives as a pinned pidns/ path;
#   - pod annotations are copied into every app container;
#   - create comes through conmon as `RUNTIME --root=DIR create --bundle B
#     --pid-file F ID`, with no --log and an environment that is only the
#     handler's monitor_env (here: RUNC_USERNS_CONFIG, no PATH); start,
#     state and kill come from CRI-O with its own environment; a container
#     goes with one `delete --force`;
#   - with drop_infra_ctr = true (CRI-O's default) a pod has no sandbox
#     container: its app containers name a SandboxID that runc never had.
# Every test ends with the pod gone: no range, pin or mount left.

load helpers

CRIO_SPECS=$ROOT_DIR/tests/integration/crio

setup() {
	requires root
	setup_env
	NSDIR=$TESTDIR/crio-ns
	CG=$(basename "$TESTDIR")-crio
	mkdir -p "$NSDIR"/{netns,ipcns,utsns,pidns}
}

teardown() {
	crio_teardown
	teardown_env
}

# crio_teardown: what CRI-O removes with a pod, after its containers: the
# pinned namespaces, the shm tmpfs, the pod's cgroup parent.
crio_teardown() {
	[ -n "${TESTDIR:-}" ] || return 0
	local id f d
	if [ -d "$RUNC_ROOT" ]; then
		for id in $(ls "$RUNC_ROOT"); do
			"$WRAPPER" --root "$RUNC_ROOT" delete --force "$id" >/dev/null 2>&1 || true
		done
	fi
	for f in "$NSDIR"/*/* "$TESTDIR"/crio-userdata/*/shm; do
		[ -e "$f" ] || continue
		umount -l "$f" 2>/dev/null || true
	done
	for d in /sys/fs/cgroup/*/"$CG"-* /sys/fs/cgroup/"$CG"-*; do
		[ -d "$d" ] || continue
		rmdir "$d" 2>/dev/null || true
	done
}

# crio_pod POD: the pod's namespaces as pinns makes them (unshare, then a
# bind mount of each nsfs file under the namespaces dir), and its userdata
# (resolv.conf, hostname, .containerenv, an shm tmpfs), as CRI-O makes them
# before its first container.
crio_pod() {
	local pod=$1 ud=$TESTDIR/crio-userdata/$1 t
	for t in netns ipcns utsns; do
		touch "$NSDIR/$t/$pod" || return 1
	done
	unshare --net="$NSDIR/netns/$pod" --ipc="$NSDIR/ipcns/$pod" --uts="$NSDIR/utsns/$pod" true || return 1
	mkdir -p "$ud/shm" || return 1
	mount -t tmpfs -o rw,nosuid,nodev,noexec,mode=1777,size=65536k shm "$ud/shm" || return 1
	echo "nameserver 127.0.0.1" >"$ud/resolv.conf" || return 1
	echo "$pod" >"$ud/hostname" || return 1
	: >"$ud/.containerenv"
}

# crio_bundle KIND POD ID [HOSTNET]: a bundle for container ID of pod POD
# from CRI-O's spec of KIND (sandbox: the infra container, ContainerType
# sandbox; app: ContainerType container, the pod's annotations copied in).
# Pointed at the suite's rootfs, namespaces, userdata and a cgroup parent
# per pod; the init is `sleep infinity` (no /pause in busybox). With
# HOSTNET the pod shares the host's network (no network namespace entry),
# as CRI-O writes a hostNetwork pod.
crio_bundle() {
	local kind=$1 pod=$2 id=$3 hostnet=${4:-} b=$TESTDIR/$3 rootfs
	mkdir -p "$b" || return 1
	rootfs=$(rootfs_template) || return 1
	cp -a "$rootfs" "$b/rootfs" || return 1
	jq --arg root "$b/rootfs" --arg pod "$pod" --arg id "$id" --arg nsdir "$NSDIR" \
		--arg ud "$TESTDIR/crio-userdata/$pod" --arg cg "/$CG-$pod/crio-$id" --arg hostnet "$hostnet" '
		.root.path = $root
		| .process.args = ["sleep", "infinity"]
		| del(.process.oomScoreAdj)
		| .hostname = $pod
		| .mounts |= map(if (.source | startswith("/run/crio-node/")) then .source = ($ud + "/" + (.source | split("/") | last)) else . end)
		| .linux.cgroupsPath = $cg
		| .linux.namespaces |= map(
			if .type == "network" then .path = ($nsdir + "/netns/" + $pod)
			elif .type == "ipc" then .path = ($nsdir + "/ipcns/" + $pod)
			elif .type == "uts" then .path = ($nsdir + "/utsns/" + $pod)
			else . end)
		| if $hostnet != "" then .linux.namespaces |= map(select(.type != "network"))
			| .annotations["io.kubernetes.cri-o.HostNetwork"] = "true" else . end
		| .annotations["io.kubernetes.cri-o.SandboxID"] = $pod
		| .annotations["io.kubernetes.cri-o.ContainerID"] = $id
		| .annotations["io.kubernetes.cri-o.HostName"] = $pod
		' "$CRIO_SPECS/$kind.json" >"$b/config.json" || return 1
	echo "$b"
}

# crio_create ID BUNDLE: create as conmon runs it: --root=DIR, no --log,
# only monitor_env (the operator's config path; no PATH), stdio not a
# terminal. Sets status and output (stderr) as run does.
crio_create() {
	status=0
	env -i RUNC_USERNS_CONFIG="$RUNC_USERNS_CONFIG" "$WRAPPER" --root="$RUNC_ROOT" create --bundle "$2" --pid-file "$2/pidfile" "$1" \
		</dev/null >"$TESTDIR/$1.out" 2>"$TESTDIR/$1.err" || status=$?
	output=$(cat "$TESTDIR/$1.err")
}

# crio_run ID BUNDLE: crio_create that must succeed, then CRI-O's start.
crio_run() {
	crio_create "$1" "$2"
	[ "$status" = 0 ] || fail "create $1 (status $status): $output" || return 1
	"$WRAPPER" --root "$RUNC_ROOT" start "$1"
}

# crio_stop ID: CRI-O's stop and removal: kill 15, then KILL, then one
# delete --force (no plain delete first).
crio_stop() {
	"$WRAPPER" --root "$RUNC_ROOT" kill "$1" 15 2>/dev/null || true
	"$WRAPPER" --root "$RUNC_ROOT" kill "$1" KILL 2>/dev/null || true
	"$WRAPPER" --root "$RUNC_ROOT" delete --force "$1"
}

# crio_unpod POD: CRI-O's pod removal after its containers: the pinned
# namespaces and the shm tmpfs go; then nothing of the pod may be left in
# runc-userns's state dir.
crio_unpod() {
	local f
	for f in "$NSDIR"/*/"$1" "$TESTDIR/crio-userdata/$1/shm"; do
		umount "$f" || return 1
		rm -rf "$f" || return 1
	done
	[ ! -e "$STATE_DIR/pods/$1" ] || fail "pod $1: $STATE_DIR/pods/$1 left: $(ls -A "$STATE_DIR/pods/$1")"
}

# ns_of ID TYPE: the namespace of type TYPE of container ID ("ipc:[N]").
ns_of() {
	cexec "$1" readlink "/proc/self/ns/$2"
}

# pinned_ns FILE TYPE: the namespace pinned at FILE, as ns_of prints it.
pinned_ns() {
	echo "$2:[$(stat -L -c %i "$1")]"
}

# check_pod POD ID...: the containers of pod POD share one user
# namespace that maps the pod's pool range, one IPC namespace (System V
# shared memory made in the first is listed in each other one, and so is a
# POSIX message queue) and one UTS namespace with the pod's hostname; the
# IPC and UTS namespaces are the pod's own, not the ones CRI-O pinned in
# the host's user namespace. Prints nothing.
check_pod() {
	local pod=$1 first=$2 id user ipc uts range pid q shmid
	shift
	range=$(pool_json | jq -r --arg o "$pod" '.[] | select(.owner == $o) | "\(.hostID) \(.size)"')
	[ -n "$range" ] || fail "pod $pod holds no range: $(pool_json)" || return 1
	user=$(ns_of "$first" user) || return 1
	ipc=$(ns_of "$first" ipc) || return 1
	uts=$(ns_of "$first" uts) || return 1
	[ "$ipc" != "$(pinned_ns "$NSDIR/ipcns/$pod" ipc)" ] || fail "pod $pod: $first runs in the IPC namespace CRI-O pinned" || return 1
	[ "$uts" != "$(pinned_ns "$NSDIR/utsns/$pod" uts)" ] || fail "pod $pod: $first runs in the UTS namespace CRI-O pinned" || return 1
	pid=$("$WRAPPER" --root "$RUNC_ROOT" state "$first" | jq -r .pid) || return 1
	shmid=$(nsenter --ipc="/proc/$pid/ns/ipc" ipcmk -M 4096 | awk '{print $NF}') || return 1
	q=q-$first
	cexec "$first" touch "/dev/mqueue/$q" || return 1
	for id in "$@"; do
		[ "$(ns_of "$id" user)" = "$user" ] || fail "$id is not in $first's user namespace" || return 1
		[ "$(ns_of "$id" ipc)" = "$ipc" ] || fail "$id is not in $first's IPC namespace" || return 1
		[ "$(ns_of "$id" uts)" = "$uts" ] || fail "$id is not in $first's UTS namespace" || return 1
		[ "$(cexec "$id" cat /proc/self/uid_map | awk '{print $2, $3}')" = "$range" ] || fail "$id: uid_map is not the pod's range $range" || return 1
		[ "$(cexec "$id" hostname)" = "$pod" ] || fail "$id: hostname $(cexec "$id" hostname), not $pod" || return 1
		cexec "$id" awk -v id="$shmid" '$2 == id {found = 1} END {exit !found}' /proc/sysvipc/shm || fail "$id does not see shared memory segment $shmid made in $first" || return 1
		cexec "$id" ls "/dev/mqueue/$q" >/dev/null || fail "$id does not see message queue $q made in $first" || return 1
	done
	cexec "$first" rm "/dev/mqueue/$q"
}

# members POD: the pool members of pod POD, sorted, one line.
members() {
	pool_json | jq -r --arg o "$1" '[.[] | select(.owner == $o) | .members[]] | sort | join(" ")'
}

@test "crio infra container: sandbox and two app containers share the pod's user, IPC and UTS namespaces; teardown sandbox first" {
	crio_pod pod1
	sb=$(crio_bundle sandbox pod1 pod1)
	a1=$(crio_bundle app pod1 a1)
	a2=$(crio_bundle app pod1 a2)
	crio_run pod1 "$sb"
	crio_run a1 "$a1"
	crio_run a2 "$a2"
	check_pod pod1 pod1 a1 a2
	[ "$(members pod1)" = "a1 a2 pod1" ]
	# CRI-O removes the sandbox with the pod, but any order must do.
	crio_stop pod1
	[ "$(members pod1)" = "a1 a2" ]
	check_pod pod1 a1 a2
	crio_stop a2
	crio_stop a1
	pool_empty
	crio_unpod pod1
}

@test "crio drop_infra_ctr: pods of 1, 2 and 3 containers without a sandbox container, each one range, torn down in any order" {
	for n in 1 2 3; do
		crio_pod "p$n"
		ids=()
		for i in $(seq "$n"); do
			b=$(crio_bundle app "p$n" "p$n-c$i")
			crio_run "p$n-c$i" "$b"
			ids+=("p$n-c$i")
		done
		check_pod "p$n" "${ids[@]}"
		[ "$(members "p$n")" = "${ids[*]}" ]
	done
	# Three pods, three ranges.
	[ "$(pool_json | jq -r '[.[].hostID] | unique | length')" = 3 ]
	# Teardown: p1 alone, p2 first-made first, p3 last-made first.
	crio_stop p1-c1
	crio_unpod p1
	crio_stop p2-c1
	check_pod p2 p2-c2
	crio_stop p2-c2
	crio_unpod p2
	crio_stop p3-c3
	crio_stop p3-c1
	check_pod p3 p3-c2
	crio_stop p3-c2
	crio_unpod p3
	pool_empty
}

@test "crio drop_infra_ctr: creates and deletes of two pods' containers race; one range per pod, nothing left" {
	crio_pod ra
	crio_pod rb
	for p in ra rb; do
		for i in 1 2 3 4; do
			crio_bundle app "$p" "$p-c$i" >/dev/null
		done
	done
	for round in 1 2 3 4 5; do
		# Three containers of each pod created at once: one takes the
		# pod's range and pins it, the others join.
		pids=()
		for p in ra rb; do
			for i in 1 2 3; do
				crio_run "$p-c$i" "$TESTDIR/$p-c$i" >/dev/null 2>&1 &
				pids+=($!)
			done
		done
		wait_pids "${pids[@]}"
		check_pod ra ra-c1 ra-c2 ra-c3
		check_pod rb rb-c1 rb-c2 rb-c3
		[ "$(pool_json | jq -r '[.[].hostID] | unique | length')" = 2 ]
		# The three deleted while a fourth is created: the fourth either
		# joins the range, or takes a new one after the last delete
		# returned it; either way it runs in a user namespace that maps
		# the range the pool holds for its pod (check_pod), no pin is lost
		# under it, and the pods never share a range.
		pids=()
		for p in ra rb; do
			crio_run "$p-c4" "$TESTDIR/$p-c4" >/dev/null 2>&1 &
			pids+=($!)
			for i in 1 2 3; do
				crio_stop "$p-c$i" >/dev/null 2>&1 &
				pids+=($!)
			done
		done
		wait_pids "${pids[@]}"
		[ "$(members ra)" = ra-c4 ] || fail "round $round: pod ra has members $(members ra)"
		[ "$(members rb)" = rb-c4 ] || fail "round $round: pod rb has members $(members rb)"
		[ "$(pool_json | jq -r '[.[].hostID] | unique | length')" = 2 ]
		check_pod ra ra-c4
		check_pod rb rb-c4
		crio_stop ra-c4
		crio_stop rb-c4
		pool_empty || fail "round $round: ranges left: $(pool_json)"
		[ -z "$(ls -A "$STATE_DIR/pods" 2>/dev/null)" ] || fail "round $round: pods left: $(ls -A "$STATE_DIR/pods")"
	done
	crio_unpod ra
	crio_unpod rb
}

@test "crio drop_infra_ctr: a container created while the pod's last one is between returning the range and unpinning waits, then gets a pod of its own" {
	requires faults
	crio_pod w
	crio_run w-c1 "$(crio_bundle app w w-c1)"
	b2=$(crio_bundle app w w-c2)
	b3=$(crio_bundle app w w-c3)
	# The pod's last container deleted, stopped after the range went back
	# to the pool and before the pod's namespaces are unpinned.
	"$WRAPPER" --root "$RUNC_ROOT" kill w-c1 KILL
	wait_status w-c1 stopped
	env RUNC_USERNS_TEST_STOP_AT=released "$FAULTS_WRAPPER" --root "$RUNC_ROOT" delete --force w-c1 \
		</dev/null >"$TESTDIR/del.out" 2>&1 &
	del=$!
	for _ in $(seq 100); do
		[ "$(awk '{print $3}' "/proc/$del/stat" 2>/dev/null)" = T ] && break
		sleep 0.1
	done
	[ "$(awk '{print $3}' "/proc/$del/stat")" = T ] || fail "delete did not stop at released: $(cat "$TESTDIR/del.out")"
	pool_empty
	# A new container of the pod meanwhile: it must neither reuse the
	# namespaces about to be unpinned nor have them unpinned under it.
	crio_run w-c2 "$b2" &
	create=$!
	sleep 1
	kill -CONT "$del"
	wait_pids "$del" "$create"
	# The pod's namespaces are pinned and map its range: a third container
	# joins them.
	crio_run w-c3 "$b3"
	check_pod w w-c2 w-c3
	[ "$(members w)" = "w-c2 w-c3" ]
	crio_stop w-c2
	crio_stop w-c3
	pool_empty
	crio_unpod w
}

@test "crio: a restarted container keeps its pod's range and namespaces, with and without an infra container" {
	for mode in infra noinfra; do
		pod=r-$mode
		crio_pod "$pod"
		first=$pod-app
		if [ "$mode" = infra ]; then
			crio_run "$pod" "$(crio_bundle sandbox "$pod" "$pod")"
		fi
		crio_run "$first" "$(crio_bundle app "$pod" "$first")"
		range=$(pool_json | jq -r --arg o "$pod" '.[] | select(.owner == $o) | .hostID')
		user=$(ns_of "$first" user)
		# The kubelet's restart: the old container stops, a new one is
		# created beside it, then the old one is removed.
		"$WRAPPER" --root "$RUNC_ROOT" kill "$first" KILL
		wait_status "$first" stopped
		crio_run "$first-1" "$(crio_bundle app "$pod" "$first-1")"
		"$WRAPPER" --root "$RUNC_ROOT" delete --force "$first"
		[ "$(pool_json | jq -r --arg o "$pod" '.[] | select(.owner == $o) | .hostID')" = "$range" ]
		[ "$(ns_of "$first-1" user)" = "$user" ]
		if [ "$mode" = infra ]; then
			check_pod "$pod" "$pod" "$first-1"
			crio_stop "$pod"
		else
			check_pod "$pod" "$first-1"
		fi
		crio_stop "$first-1"
		crio_unpod "$pod"
	done
	pool_empty
}

@test "crio: a TARGET debug container joins its target's PID namespace, pinned under pidns/, in both infra modes" {
	for mode in infra noinfra; do
		pod=d-$mode
		crio_pod "$pod"
		if [ "$mode" = infra ]; then
			crio_run "$pod" "$(crio_bundle sandbox "$pod" "$pod")"
		fi
		t=$(crio_bundle app "$pod" "$pod-target")
		update_config "$t" '.process.args = ["sh", "-c", "sleep 4242 & wait"]'
		crio_run "$pod-target" "$t"
		# CRI-O pins the target's PID namespace and hands the debug
		# container that path.
		pid=$("$WRAPPER" --root "$RUNC_ROOT" state "$pod-target" | jq -r .pid)
		touch "$NSDIR/pidns/$pod"
		mount --bind "/proc/$pid/ns/pid" "$NSDIR/pidns/$pod"
		d=$(crio_bundle app "$pod" "$pod-debug")
		update_config "$d" '.linux.namespaces |= map(if .type == "pid" then .path = "'"$NSDIR/pidns/$pod"'" else . end)'
		crio_run "$pod-debug" "$d"
		[ "$(ns_of "$pod-debug" pid)" = "$(ns_of "$pod-target" pid)" ]
		run -0 cexec "$pod-debug" ps -o args
		[[ "$output" == *"sleep 4242"* ]]
		check_pod "$pod" "$pod-target" "$pod-debug"
		# Any order: the target first.
		crio_stop "$pod-target"
		crio_stop "$pod-debug"
		if [ "$mode" = infra ]; then
			crio_stop "$pod"
		fi
		crio_unpod "$pod"
	done
	pool_empty
}

@test "crio: a host-network pool pod is refused, with and without an infra container, the reason once on stderr" {
	crio_pod hn
	for kind in sandbox app; do
		b=$(crio_bundle "$kind" hn "hn-$kind" hostnet)
		crio_create "hn-$kind" "$b"
		[ "$status" = 1 ] || fail "$kind: create status $status: $output"
		[ "$(grep -c "shares the host's \[network\] namespace" "$TESTDIR/hn-$kind.err")" = 1 ] || fail "$kind: the reason is not on stderr once: $output"
		[ "$(wc -l <"$TESTDIR/hn-$kind.err")" = 1 ] || fail "$kind: stderr has more than the reason: $output"
		[ ! -e "$RUNC_ROOT/hn-$kind" ]
	done
	pool_empty
	crio_unpod hn
}
