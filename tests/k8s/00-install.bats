#!/usr/bin/env bats
# The operator's install (contrib/kubernetes): the RuntimeClass and the
# installer DaemonSet on a node without systemd, then a new image rolled out
# under running pool pods.

load ../integration/helpers
load cluster

@test "the DaemonSet installs runc-userns: Ready, doctor passes, containerd serves the handler" {
	before=$(node_pid containerd)
	install_runc_userns 1
	pod=$(kc -n kube-system get pod -l app.kubernetes.io/name=runc-userns-installer -o jsonpath='{.items[0].metadata.name}')
	run -0 kc -n kube-system wait --for=condition=Ready "pod/$pod" --timeout=60s
	# The last run of the init container passed the doctor and succeeded.
	# It may be its second: a run whose exit falls into containerd's
	# restart is recorded as Unknown (255) by containerd 1.7 and run again,
	# and finds nothing left to do.
	run -0 kc -n kube-system get pod "$pod" -o jsonpath='{.status.initContainerStatuses[0].restartCount} {.status.initContainerStatuses[0].state.terminated.exitCode}'
	[[ "$output" == [01]" 0" ]] || fail "the installer's init container: restarts and exit code $output"
	run -0 kc -n kube-system logs "$pod" -c install
	echo "$output"
	# The doctor ran its checks (its kernel and runtime lines) and none failed.
	grep -E '^ok +kernel ' <<<"$output" || fail "the installer's doctor did not run: $output"
	grep -E '^ok +runtime ' <<<"$output" || fail "the installer's doctor did not find the runtime: $output"
	! grep -E '^FAIL' <<<"$output" || fail "the installer's doctor failed a check: $output"
	# containerd was restarted, and serves the handler with our binary.
	wait_for 30 "containerd back" crictl_node info
	[ "$(node_pid containerd)" != "$before" ] || fail "containerd's pid is still $before: not restarted"
	run -0 crictl_node info
	jq -e '.config.containerd.runtimes["runc-userns"].options.BinaryName == "/usr/local/bin/runc-userns"' <<<"$output"
	run -0 node_exec cmp "$WRAPPER" /usr/local/bin/runc-userns
}

@test "a second rollout with a new image tag replaces the binary under running pool pods, which still delete cleanly" {
	pooled_pod upgrade-a
	ids=$(kc get pod upgrade-a -o jsonpath='{.status.containerStatuses[0].containerID}/{.status.containerStatuses[0].restartCount}')
	map=$(uid_map upgrade-a)
	inode=$(node_exec stat -c %i /usr/local/bin/runc-userns)
	installer_image 2
	install_runc_userns 2
	run -0 kc -n kube-system get ds runc-userns-installer -o jsonpath='{.spec.template.spec.initContainers[0].image}'
	[ "$output" = "$INSTALLER:2" ]
	[ "$(node_exec stat -c %i /usr/local/bin/runc-userns)" != "$inode" ] || fail "/usr/local/bin/runc-userns was not replaced"
	[ "$(kc get pod upgrade-a -o jsonpath='{.status.containerStatuses[0].containerID}/{.status.containerStatuses[0].restartCount}')" = "$ids" ]
	[ "$(uid_map upgrade-a)" = "$map" ]
	run -0 kc delete pod upgrade-a --grace-period=1 --wait=true --timeout=90s
	[ "$(pool_ls)" = "[]" ] || fail "pool after delete: $(pool_ls)"
}
