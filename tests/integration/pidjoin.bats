#!/usr/bin/env bats
# Joining another container's PID namespace by "container:<ID>" (issue:
# pid-namespace container:<ID>), and containerd's own TARGET mode.

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

# target_bundle NAME: a bundle whose init is a shell that keeps a child
# `sleep 4242` and exits on SIGUSR1, with a marker file in its rootfs.
target_bundle() {
	local b
	b=$(setup_bundle "$1") || return 1
	update_config "$b" '.process.args = ["sh", "-c", "trap \"exit 0\" USR1; sleep 4242 & wait; wait"]' || return 1
	echo "root of $1" >"$b/rootfs/marker" || return 1
	echo "$b"
}

# set_pid_path BUNDLE PATH: the bundle's pid namespace joins PATH.
set_pid_path() {
	update_config "$1" '.linux.namespaces |= map(if .type == "pid" then .path = "'"$2"'" else . end)'
}

# pid_path BUNDLE: the pid namespace path written in the bundle's spec.
pid_path() {
	jq -r '.linux.namespaces[] | select(.type == "pid") | .path // ""' "$1/config.json"
}

# check_joined DEBUG TARGET: DEBUG runs in TARGET's PID namespace: it sees
# TARGET's processes, reads TARGET's root through /proc/1/root, and its own
# init is not PID 1.
check_joined() {
	local d=$1 t=$2 own
	[ "$(cexec "$d" readlink /proc/self/ns/pid)" = "$(cexec "$t" readlink /proc/self/ns/pid)" ]
	run -0 cexec "$d" ps -o pid,args
	[[ "$output" == *"sleep 4242"* ]]
	# Its own init (sleep infinity) is not PID 1: the target's shell is.
	own=$(echo "$output" | awk '$2 == "sleep" && $3 == "infinity" {print $1}')
	[ -n "$own" ] || fail "no init (sleep infinity) of $d in: $output"
	[ "$own" != 1 ] || fail "the init of $d is PID 1: $output"
	[ "$(echo "$output" | awk '$1 == 1 {print $2}')" = sh ]
	[ "$(cexec "$d" cat /proc/1/root/marker)" = "root of $t" ]
}

# check_signals DEBUG TARGET: DEBUG can signal TARGET's init, which exits.
# The kernel then kills every process of the PID namespace, the `kill`
# itself among them if it has not exited yet (status 137).
check_signals() {
	run cexec "$1" kill -USR1 1
	[ "$status" = 0 ] || [ "$status" = 137 ] || fail "kill -USR1 1 in $1: status $status: $output"
	wait_status "$2" stopped
	# DEBUG's processes died with the namespace's init.
	wait_status "$1" stopped
}

@test "container:<ID> in config.json: the debug container sees the target's processes, its root, can signal it, and is not PID 1" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	set_pid_path "$d" container:target
	start_container "$t" target
	start_container "$d" debug
	check_joined debug target
	# The written spec holds a real path: the pin of the target's
	# namespace that runc joined, dropped once create returned (nothing of
	# the container stays mounted on the host); the annotation records the
	# reference.
	pin=$(pid_path "$d")
	[[ "$pin" == "$STATE_DIR/containers/"*"/debug/pidns" ]]
	[ ! -e "$pin" ]
	[ -z "$(staging_mounts)" ]
	[ "$(jq -r '.annotations["runc-userns.io/pid-namespace"]' "$d/config.json")" = container:target ]
	# Nothing taken from the pool.
	pool_empty
	check_signals debug target
	wrapper delete --force debug
	[ ! -e "$pin" ]
}

@test "the pid-namespace annotation: same join; no pin outlives the create" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	annotate "$d" runc-userns.io/pid-namespace container:target
	start_container "$t" target
	start_container "$d" debug
	check_joined debug target
	pin=$(pid_path "$d")
	[[ "$pin" == "$STATE_DIR/containers/"*"/debug/pidns" ]]
	[ -z "$(staging_mounts)" ]
	# exec enters through the init's namespaces, not the dropped pin.
	[ "$(cexec debug readlink /proc/self/ns/pid)" = "$(cexec target readlink /proc/self/ns/pid)" ]
	wrapper delete --force debug
	[ ! -e "$pin" ]
	[ -z "$(test_mounts)" ]
	# The target is untouched.
	[ "$(plain_runc state target | jq -r .status)" = running ]
}

@test "a container claiming the target's pod by its annotations but in another pod's cgroup is refused" {
	t=$(target_bundle app)
	d=$(setup_bundle debug)
	as_pod "$t" sandbox container
	as_pod "$d" sandbox container
	set_pid_path "$d" container:app
	update_config "$d" '.linux.cgroupsPath = "/'"$(basename "$TESTDIR")"'-otherpod/debug"'
	start_container "$t" app
	create_to_file debug "$d"
	[ "$status" = 1 ]
	[[ "$output" == *"cannot join the PID namespace of container app: its annotations say both are in one pod, but container debug's cgroup parent \"/$(basename "$TESTDIR")-otherpod\" is not container app's (\"/\")"* ]]
	[ ! -e "$RUNC_ROOT/debug" ]
	[ -z "$(staging_mounts)" ]
	[ -z "$(find "$STATE_DIR" -name pidns)" ]
	# Both CRIs' keys: refused before anything is pinned.
	update_config "$d" '.linux.cgroupsPath = "/'"$(basename "$TESTDIR")"'-debug" | .annotations["io.kubernetes.cri-o.SandboxID"] = "sandbox"'
	create_to_file debug "$d"
	[ "$status" = 1 ]
	[[ "$output" == *"cannot join the PID namespace of container app: "*"container debug carries both containerd's pod annotations"* ]]
	# In the pod's cgroup parent, with one CRI's keys: it joins.
	update_config "$d" 'del(.annotations["io.kubernetes.cri-o.SandboxID"])'
	start_container "$d" debug
	check_joined debug app
	wrapper delete --force debug
	wrapper delete --force app
}

@test "pod in a pool user namespace: a debug container joins the target's user namespace and takes nothing from the pool" {
	sb=$(target_bundle sandbox)
	d=$(setup_bundle debug)
	annotate "$sb" runc-userns.io/userns auto
	as_pod "$sb" sandbox sandbox
	as_pod "$d" sandbox container
	set_pid_path "$d" container:sandbox
	start_container "$sb" sandbox
	start_container "$d" debug
	check_joined debug sandbox
	[ "$(cexec debug readlink /proc/self/ns/user)" = "$(cexec sandbox readlink /proc/self/ns/user)" ]
	[ "$(cexec debug cat /proc/self/uid_map | awk '{print $1, $2, $3}')" = "0 $POOL_BASE 65536" ]
	[ "$(cexec debug cat /proc/self/gid_map | awk '{print $1, $2, $3}')" = "0 $POOL_BASE 65536" ]
	# It joined the pod's own pin; the pool has only the sandbox.
	[ "$(jq -r '.linux.namespaces[] | select(.type == "user") | .path' "$d/config.json")" = "$STATE_DIR/pods/sandbox/userns" ]
	[ "$(pool_json | jq -c '[.[] | {owner, members}]')" = '[{"owner":"sandbox","members":["sandbox"]}]' ]
	check_signals debug sandbox
	wrapper delete --force debug
	wrapper delete --force sandbox
	[ "$(pool_json | jq length)" = 0 ]
}

@test "pod in a pool user namespace: an app container asking for auto joins an app container of its pod, in the pod's range" {
	sb=$(setup_bundle sandbox)
	t=$(target_bundle app)
	d=$(setup_bundle debug)
	for b in "$sb" "$t" "$d"; do annotate "$b" runc-userns.io/userns auto; done
	as_pod "$sb" sandbox sandbox
	as_pod "$t" sandbox container
	as_pod "$d" sandbox container
	annotate "$d" runc-userns.io/pid-namespace container:app
	start_container "$sb" sandbox
	start_container "$t" app
	start_container "$d" debug
	check_joined debug app
	[ "$(cexec debug readlink /proc/self/ns/user)" = "$(cexec app readlink /proc/self/ns/user)" ]
	# A member of the pod's range like any app container, with its rootfs
	# idmapped: its root can write there.
	[ "$(pool_json | jq -c '[.[] | .members | sort]')" = '[["app","debug","sandbox"]]' ]
	cexec debug touch /written-by-debug
	[ "$(stat -c %u "$d/rootfs/written-by-debug")" = 0 ]
	check_signals debug app
}

@test "two standalone containers: the joiner takes the target's pool user namespace, not a range of its own" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	annotate "$t" runc-userns.io/userns auto
	annotate "$d" runc-userns.io/userns auto
	set_pid_path "$d" container:target
	start_container "$t" target
	start_container "$d" debug
	check_joined debug target
	[ "$(cexec debug readlink /proc/self/ns/user)" = "$(cexec target readlink /proc/self/ns/user)" ]
	[ "$(pool_json | jq -r '[.[].owner] | join(",")')" = target ]
}

@test "containerd's TARGET mode (/proc/<pid>/ns/pid) passes through, also for a pod in a pool user namespace" {
	sb=$(setup_bundle sandbox)
	t=$(target_bundle app)
	d=$(setup_bundle debug)
	for b in "$sb" "$t" "$d"; do annotate "$b" runc-userns.io/userns auto; done
	as_pod "$sb" sandbox sandbox
	as_pod "$t" sandbox container
	as_pod "$d" sandbox container
	start_container "$sb" sandbox
	start_container "$t" app
	pid=$(wrapper state app | jq .pid)
	set_pid_path "$d" "/proc/$pid/ns/pid"
	start_container "$d" debug
	check_joined debug app
	[ "$(cexec debug readlink /proc/self/ns/user)" = "$(cexec app readlink /proc/self/ns/user)" ]
	[ "$(pid_path "$d")" = "/proc/$pid/ns/pid" ]
	[ ! -e "$STATE_DIR/containers/"*/debug/pidns ]
}

@test "containerd's TARGET mode without a user namespace: config.json untouched" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	start_container "$t" target
	set_pid_path "$d" "/proc/$(wrapper state target | jq .pid)/ns/pid"
	sum=$(sha256sum <"$d/config.json")
	start_container "$d" debug
	check_joined debug target
	[ "$(sha256sum <"$d/config.json")" = "$sum" ]
}

@test "run in the foreground, twice from the same bundle: each run resolves the reference again; nothing left behind" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	set_pid_path "$d" container:target
	update_config "$d" '.process.args = ["ps", "-o", "pid,args"]'
	start_container "$t" target
	run -0 wrapper run --bundle "$d" debug </dev/null
	[[ "$output" == *"sleep 4242"* ]]
	[ -z "$(staging_mounts)" ]
	run -0 wrapper run --bundle "$d" debug </dev/null
	[[ "$output" == *"sleep 4242"* ]]
	[ -z "$(staging_mounts)" ]
	# The spec now names the first runs' (gone) pin; another ID from the
	# same bundle resolves the recorded reference again.
	run -0 wrapper run --bundle "$d" debug2 </dev/null
	[[ "$output" == *"sleep 4242"* ]]
	[[ "$(pid_path "$d")" == "$STATE_DIR/containers/"*"/debug2/pidns" ]]
	[ -z "$(staging_mounts)" ]
	[ ! -e "$RUNC_ROOT/debug" ]
	[ ! -e "$RUNC_ROOT/debug2" ]
}

# refused DEBUG-BUNDLE MESSAGE...: creating container "debug" fails with
# every MESSAGE in the error; nothing of it is left.
refused() {
	local b=$1
	shift
	run -1 wrapper create --bundle "$b" debug </dev/null
	local m
	for m in "$@"; do
		[[ "$output" == *"$m"* ]] || fail "error does not say \"$m\": $output"
	done
	[ ! -e "$RUNC_ROOT/debug" ]
	[ -z "$(staging_mounts)" ]
	[ -z "$(ls "$STATE_DIR/containers/"*/debug 2>/dev/null)" ]
}

@test "refused: target not found" {
	d=$(setup_bundle debug)
	set_pid_path "$d" container:nosuch
	refused "$d" "container debug: cannot join the PID namespace of container nosuch: container nosuch does not exist"
}

@test "refused: target created but not started, and target stopped" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	set_pid_path "$d" container:target
	wrapper create --bundle "$t" target </dev/null >/dev/null
	refused "$d" "container debug: cannot join the PID namespace of container target: container target is created but not running"
	wrapper start target
	wrapper kill target KILL
	wait_status target stopped
	refused "$d" "container debug: cannot join the PID namespace of container target: container target is not running"
}

@test "refused: target in another pod, or one in a pod and the other not (containerd and CRI-O)" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	set_pid_path "$d" container:target
	as_pod "$t" pod-a container
	start_container "$t" target
	as_pod "$d" pod-b container
	refused "$d" "cannot join the PID namespace of container target" "container debug is in pod pod-b and container target in pod pod-a"
	update_config "$d" 'del(.annotations["io.kubernetes.cri.sandbox-id"], .annotations["io.kubernetes.cri.container-type"])'
	refused "$d" "container debug belongs to no pod but container target is in pod pod-a"
	update_config "$d" '.annotations["io.kubernetes.cri-o.SandboxID"] = "pod-c" | .annotations["io.kubernetes.cri-o.ContainerType"] = "container"'
	refused "$d" "container debug is in pod pod-c and container target in pod pod-a"
	# A standalone target and a debug container in a pod.
	t2=$(target_bundle standalone)
	start_container "$t2" standalone
	set_pid_path "$d" container:standalone
	refused "$d" "container debug is in pod pod-c but container standalone belongs to no pod"
}

@test "allowed: the sandbox itself is a member of its pod (dockershim's container:<sandbox>)" {
	sb=$(target_bundle sandbox)
	d=$(setup_bundle debug)
	as_pod "$sb" sandbox sandbox
	update_config "$d" '.annotations["io.kubernetes.cri-o.SandboxID"] = "sandbox" | .annotations["io.kubernetes.cri-o.ContainerType"] = "container"'
	set_pid_path "$d" container:sandbox
	start_container "$sb" sandbox
	start_container "$d" debug
	check_joined debug sandbox
}

@test "refused: target in the host's PID namespace" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	update_config "$t" '.linux.namespaces |= map(select(.type != "pid"))'
	start_container "$t" target
	set_pid_path "$d" container:target
	refused "$d" "container debug: cannot join the PID namespace of container target: container target runs in the host's PID namespace"
	# The same for a target that joined the host's by path.
	t2=$(target_bundle target2)
	set_pid_path "$t2" "/proc/$$/ns/pid"
	start_container "$t2" target2
	set_pid_path "$d" container:target2
	refused "$d" "cannot join the PID namespace of container target2: container target2 runs in the host's PID namespace"
}

@test "refused: malformed references and a reference to itself" {
	d=$(setup_bundle debug)
	set_pid_path "$d" "container:../x"
	refused "$d" "container debug: linux.namespaces pid path: invalid PID namespace reference" '"container:../x"'
	set_pid_path "$d" "container:"
	refused "$d" "container debug: linux.namespaces pid path: invalid PID namespace reference" "must not be empty"
	set_pid_path "$d" "Container:x"
	refused "$d" "invalid PID namespace reference" "in lower case"
	set_pid_path "$d" "container:$(printf 'a%.0s' $(seq 1025))"
	refused "$d" "longer than 1024 bytes"
	set_pid_path "$d" ""
	annotate "$d" runc-userns.io/pid-namespace "pid:1"
	refused "$d" "container debug: runc-userns.io/pid-namespace: invalid PID namespace reference" "want container:<ID>"
	annotate "$d" runc-userns.io/pid-namespace "container:debug"
	refused "$d" "container debug refers to its own PID namespace"
	update_config "$d" 'del(.annotations["runc-userns.io/pid-namespace"])'
	set_pid_path "$d" container:debug
	refused "$d" "container debug refers to its own PID namespace"
}

@test "refused: the annotation and the spec name different targets" {
	t=$(target_bundle target)
	start_container "$t" target
	d=$(setup_bundle debug)
	annotate "$d" runc-userns.io/pid-namespace container:target
	set_pid_path "$d" container:other
	refused "$d" "container debug: runc-userns.io/pid-namespace=container:target but the spec's pid namespace path is \"container:other\""
	set_pid_path "$d" /proc/1/ns/pid
	refused "$d" "but the spec already joins the PID namespace at \"/proc/1/ns/pid\""
}

@test "refused: auto for a container joining a target in the host's user namespace" {
	t=$(target_bundle target)
	d=$(pooled_bundle debug)
	set_pid_path "$d" container:target
	start_container "$t" target
	refused "$d" "container debug: cannot join the PID namespace of container target: it asks for runc-userns.io/userns=auto, but container target runs in the host's user namespace"
	pool_empty
}

@test "PID reuse: the PID recorded for the target belongs to another process; the join fails and never lands in its namespace" {
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	set_pid_path "$d" container:target
	start_container "$t" target
	# Another process, in a PID namespace of its own, takes the place of
	# the target's init in the target's state (as if the PID were reused).
	unshare --pid --fork sleep 600 </dev/null >/dev/null 2>&1 3>&- &
	holder=$!
	for i in $(seq 50); do
		other=$(pgrep -P "$holder" sleep) && break
		sleep 0.1
	done
	[ -n "$other" ]
	state=$RUNC_ROOT/target/state.json
	cp "$state" "$TESTDIR/state.json.orig"
	jq --argjson pid "$other" '.init_process_pid = $pid' "$TESTDIR/state.json.orig" >"$state"
	refused "$d" "container debug: cannot join the PID namespace of container target: container target is not running: PID $other recorded in its runc state now belongs to another process"
	# A recorded PID that nothing holds any more.
	kill -KILL "$other" "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	jq --argjson pid "$other" '.init_process_pid = $pid' "$TESTDIR/state.json.orig" >"$state"
	refused "$d" "container target is not running"
	cp "$TESTDIR/state.json.orig" "$state"
	# With the true state back, the join works.
	start_container "$d" debug
	check_joined debug target
}

@test "a joiner of a pool target that joins a network namespace made elsewhere: sysfs becomes a read-only bind (runc >= 1.3; refused before)" {
	netns_elsewhere
	t=$(target_bundle target)
	d=$(setup_bundle debug)
	annotate "$t" runc-userns.io/userns auto
	set_pid_path "$d" container:target
	join_netns "$TESTDIR/netns" "$d"
	start_container "$t" target
	version=$("$REAL_RUNC" --version | awk 'NR == 1 {print $3}')
	if [[ "$version" == 1.[012].* ]]; then
		refused "$d" "container debug: cannot join the PID namespace of container target: its user namespace" "runc $version cannot enter" "upgrade runc"
		umount "$TESTDIR/netns"
		return
	fi
	start_container "$d" debug
	check_joined debug target
	[ "$(cexec debug readlink /proc/self/ns/net)" = "$(nsenter --net="$TESTDIR/netns" readlink /proc/self/ns/net)" ]
	run -0 cexec debug grep " /sys " /proc/self/mountinfo
	[[ "$output" == *" ro,"* ]]
	[ "$(jq -r '.mounts[] | select(.destination == "/sys") | .type' "$d/config.json")" = bind ]
	wrapper delete --force debug
	umount "$TESTDIR/netns"
}
