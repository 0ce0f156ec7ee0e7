#!/usr/bin/env bats
# The pod stories through kubectl: contrib's example pod, kubectl debug
# (KEP-277 ephemeral containers) and a shared PID namespace, each in a pool
# user namespace.

load ../integration/helpers
load cluster

setup_file() {
	ensure_installed
}

teardown() {
	teardown_pods
}

@test "story 1: contrib's example pod runs in a pool range, logs, and returns it when deleted" {
	userns_pod <"$ROOT_DIR/contrib/kubernetes/example-pod.yaml" | kc apply -f -
	run -0 kc wait --for=condition=Ready pod/userns-demo --timeout=90s
	map=$(uid_map userns-demo)
	assert_pool_range "$map"
	assert_pool 1
	# Its command printed its uid_map and id: kubectl logs has both.
	run -0 kc logs userns-demo
	[[ "$(tr -s ' ' <<<"$output" | sed 's/^ //')" == *"$map"* ]] || fail "logs: $output"
	[[ "$output" == *"uid=0(root)"* ]] || fail "logs: $output"
	run -0 kc delete pod userns-demo --grace-period=1 --wait=true --timeout=90s
	[ "$(pool_ls)" = "[]" ] || fail "pool after delete: $(pool_ls)"
}

@test "story 2: kubectl debug --target sees the app's processes in the pod's user namespace" {
	pooled_pod dbg-target
	map=$(uid_map dbg-target)
	kc debug dbg-target --image=busybox --image-pull-policy=IfNotPresent --target=app -c dbg -- ps -o pid,args
	run -0 wait_for 60 "the ephemeral container dbg to finish" ephemeral_done dbg-target dbg
	run -0 kc logs dbg-target -c dbg
	[[ "$output" == *"sleep 3600"* ]] || fail "ps in the ephemeral container with --target: $output"
	kc debug dbg-target --image=busybox --image-pull-policy=IfNotPresent --target=app -c dbgmap -- cat /proc/self/uid_map
	run -0 wait_for 60 "the ephemeral container dbgmap to finish" ephemeral_done dbg-target dbgmap
	run -0 kc logs dbg-target -c dbgmap
	[ "$(tr -s ' ' <<<"$output" | sed 's/^ //')" = "$map" ] || fail "ephemeral uid_map '$output', the pod's '$map'"
	# Without --target, its own PID namespace: the app is not there.
	kc debug dbg-target --image=busybox --image-pull-policy=IfNotPresent -c dbgown -- ps -o pid,args
	run -0 wait_for 60 "the ephemeral container dbgown to finish" ephemeral_done dbg-target dbgown
	run -0 kc logs dbg-target -c dbgown
	[[ "$output" == *"ps -o pid,args"* ]] || fail "ps without --target: $output"
	[[ "$output" != *"sleep 3600"* ]] || fail "ps without --target sees the app: $output"
}

@test "story 3: shareProcessNamespace: every container sees the others, PID 1 is pause, one user namespace" {
	pooled_pod shared "shareProcessNamespace: true
containers:
- {name: app, image: busybox:1.36, command: [sleep, '3600']}
- {name: side, image: busybox:1.36, command: [sleep, '3601']}"
	run -0 kc exec shared -c app -- ps -o pid,args
	[[ "$output" == *"sleep 3601"* ]] || fail "app does not see side: $output"
	run -0 kc exec shared -c side -- ps -o pid,args
	[[ "$output" == *"sleep 3600"* ]] || fail "side does not see app: $output"
	grep -E '^ +1 +/pause$' <<<"$output" || fail "PID 1 is not pause: $output"
	assert_pool_range "$(uid_map shared app)"
	[ "$(uid_map shared app)" = "$(uid_map shared side)" ] || fail "app and side have different uid_maps"
	# One user namespace: the app's, the side's and pause's (PID 1) are the same.
	app=$(kc exec shared -c app -- readlink /proc/self/ns/user)
	side=$(kc exec shared -c side -- readlink /proc/self/ns/user)
	pause=$(kc exec shared -c app -- readlink /proc/1/ns/user)
	[ "$app" = "$side" ] && [ "$app" = "$pause" ] || fail "user namespaces: app $app, side $side, pause $pause"
	assert_pool 1
}
