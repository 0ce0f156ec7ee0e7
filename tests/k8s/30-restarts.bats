#!/usr/bin/env bats
# Story 5: a container that exits comes back in the pod's user namespace;
# an exec liveness probe runs, and restarts the container when it fails.

load ../integration/helpers
load cluster

setup_file() {
	ensure_installed
}

teardown() {
	teardown_pods
}

@test "story 5: a container restarted under restartPolicy Always keeps the pod's uid_map and range" {
	# The first run exits at once (restartPolicy Always, the default, starts
	# it again); the second stays. Each prints its uid_map and user namespace.
	pooled_pod restarts "containers:
- name: app
  image: busybox:1.36
  command: [sh, -c, 'cat /proc/self/uid_map; readlink /proc/self/ns/user; [ -e /v/ran ] || { touch /v/ran; exit 1; }; exec sleep 3600']
  volumeMounts: [{name: v, mountPath: /v}]
volumes: [{name: v, emptyDir: {}}]"
	run -0 wait_for 90 "a restart of the app" restarted_ready restarts 1
	run -0 kc logs restarts --previous
	before=$output
	run -0 kc logs restarts
	[ "$output" = "$before" ] || fail "uid_map and userns before the restart: $before; after: $output"
	assert_pool_range "$(head -1 <<<"$output" | tr -s ' ' | sed 's/^ //')"
	assert_pool 1
}

@test "story 5: an exec liveness probe runs in a pool pod, and restarts the container when it fails" {
	pooled_pod probed "containers:
- name: app
  image: busybox:1.36
  command: [sh, -c, 'touch /tmp/alive; exec sleep 3600']
  livenessProbe:
    exec: {command: [sh, -c, 'echo probed >> /tmp/probes; test -e /tmp/alive']}
    periodSeconds: 1
    failureThreshold: 1"
	run -0 wait_for 30 "two probes" probed_twice
	[ "$(kc get pod probed -o jsonpath='{.status.containerStatuses[0].restartCount}')" = 0 ]
	kc exec probed -- rm /tmp/alive
	run -0 wait_for 60 "the failed probe's restart" restarted_ready probed 1
	run -0 kc get events --field-selector involvedObject.name=probed -o jsonpath='{.items[*].message}'
	[[ "$output" == *"Liveness probe failed"* ]] || fail "events: $output"
	assert_pool 1
}

probed_twice() {
	[ "$(kc exec probed -- cat /tmp/probes | wc -l)" -ge 2 ]
}
