#!/usr/bin/env bats
# Story 7: containerd and the kubelet restarted under running pool pods, and
# a drain; story 8: a full pool refused in words the operator can read in
# kubectl describe, and the pod started once a range is free.

load ../integration/helpers
load cluster

setup_file() {
	[ "$K8S_E2E_PODS" = pooled ] || fail "these stories are runc-userns's own: run them with K8S_E2E_PODS=pooled"
	ensure_installed
}

teardown() {
	kc uncordon "$NODE" >/dev/null 2>&1 || true
	teardown_pods
}

# container_ids POD: its containers' IDs and restart counts, one line.
container_ids() {
	kc get pod "$1" -o jsonpath='{range .status.containerStatuses[*]}{.containerID}/{.restartCount} {end}'
}

@test "story 7: containerd, then the kubelet, restarted under pool pods: they keep running, new pods start, nothing leaks" {
	pooled_pod fault-a
	pooled_pod fault-b
	a=$(container_ids fault-a) b=$(container_ids fault-b) map=$(uid_map fault-a)
	for daemon in containerd kubelet; do
		pid=$(node_pid "$daemon")
		kill "$pid"
		run -0 wait_for 60 "$daemon restarted" restarted "$daemon" "$pid"
		run -0 wait_for 60 "node Ready after the $daemon restart" node_ready
		# A restarted kubelet serves exec once it has synced its pods again.
		run -0 wait_for 60 "exec in fault-a after the $daemon restart" kc exec fault-a -- true
		[ "$(container_ids fault-a)" = "$a" ] || fail "fault-a changed after the $daemon restart: $a -> $(container_ids fault-a)"
		[ "$(container_ids fault-b)" = "$b" ] || fail "fault-b changed after the $daemon restart: $b -> $(container_ids fault-b)"
		[ "$(uid_map fault-a)" = "$map" ]
	done
	pooled_pod fault-c
	assert_pool_range "$(uid_map fault-c)"
	[ "$(pool_count)" = 3 ] || fail "pool: $(pool_ls)"
	delete_pods fault-a fault-b fault-c
	[ "$(pool_ls)" = "[]" ] || fail "pool: $(pool_ls)"
	run -0 node_mounts
	[ -z "$output" ] || fail "mounts left on the node: $output"
}

@test "story 7: kubectl drain returns every range and leaves no mount" {
	pooled_pod drain-a
	pooled_pod drain-b
	[ "$(pool_count)" = 2 ] || fail "pool: $(pool_ls)"
	run -0 kc drain "$NODE" --ignore-daemonsets --delete-emptydir-data --force --grace-period=1 --timeout=120s
	[ "$(pool_ls)" = "[]" ] || fail "pool after drain: $(pool_ls)"
	run -0 node_mounts
	[ -z "$output" ] || fail "mounts left on the node: $output"
	kc uncordon "$NODE"
}

@test "story 8: a full pool: kubectl describe shows runc-userns's message naming the pool; the pod starts once a range is free" {
	local base=3758096384
	reconfigure "$(node_config | jq -c --argjson b "$base" '.userns.ranges = [{hostID: $b, size: 131072}]')" \
		"$(node_dropin)"
	pooled_pod full-a
	pooled_pod full-b
	kc apply -f - <<-EOT
		apiVersion: v1
		kind: Pod
		metadata: {name: full-c, annotations: {runc-userns.io/userns: auto}}
		spec:
		  runtimeClassName: runc-userns
		  terminationGracePeriodSeconds: 1
		  containers: [{name: app, image: busybox:1.36, command: [sleep, '3600']}]
	EOT
	run -0 wait_for 60 "full-c's refusal in its events" describe_has full-c "pool exhausted"
	run -0 kc describe pod full-c
	echo "$output"
	grep -E "FailedCreatePodSandBox.*container [0-9a-f]{64}: user namespace pool exhausted: 2 of 2 ranges in use \(see runc-userns pool ls\) in the pool of host IDs $base\+131072 kept in /run/runc-userns" <<<"$output" ||
		fail "kubectl describe does not show runc-userns's message: $output"
	delete_pods full-a
	run -0 kc wait --for=condition=Ready pod/full-c --timeout=120s
	assert_pool_range "$(uid_map full-c)"
	delete_pods full-b full-c
	restore_config
}

describe_has() {
	kc describe pod "$1" | grep -F "$2"
}

# restarted NAME PID: the node's NAME runs again, with a pid other than PID.
restarted() {
	local now
	now=$(node_pid "$1") || return 1
	[ "$now" != "$2" ] || return 1
	node_exec kill -0 "$now"
}
