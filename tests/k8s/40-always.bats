#!/usr/bin/env bats
# Story 6: mode always on the default handler: every eligible pod gets a
# range of its own without asking; hostNetwork, hostPID and privileged pods
# still run, as host root; scaling to 0 empties the pool.

load ../integration/helpers
load cluster

setup_file() {
	[ "$K8S_E2E_PODS" = pooled ] || fail "these stories are runc-userns's own: run them with K8S_E2E_PODS=pooled"
	ensure_installed
	# The operator's switch: mode always, and runc-userns as containerd's
	# default handler (in the same drop-in, which replaces the CRI table).
	reconfigure "$(node_config | jq -c '.userns.mode = "always"')" \
		"$(node_dropin '[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc-userns"')"
}

teardown() {
	kc delete deployment many --wait=true --timeout=120s >/dev/null 2>&1 || true
	teardown_pods
}

teardown_file() {
	restore_config
	[ "$(pool_ls)" = "[]" ] || fail "pool after story 6: $(pool_ls)"
}

@test "story 6: mode always: 20 replicas without the annotation get 20 distinct ranges; scaling to 0 empties the pool" {
	kc apply -f - <<-EOT
		apiVersion: apps/v1
		kind: Deployment
		metadata: {name: many}
		spec:
		  replicas: 20
		  selector: {matchLabels: {app: many}}
		  template:
		    metadata: {labels: {app: many}}
		    spec:
		      terminationGracePeriodSeconds: 1
		      containers: [{name: app, image: busybox:1.36, command: [sleep, '3600']}]
	EOT
	run -0 kc rollout status deployment/many --timeout=300s
	maps=()
	for p in $(kc get pods -l app=many -o name); do
		maps+=("$(uid_map "${p#pod/}")")
		assert_pool_range "${maps[-1]}"
	done
	[ "${#maps[@]}" = 20 ] || fail "${#maps[@]} pods, not 20"
	[ "$(printf '%s\n' "${maps[@]}" | sort -u | wc -l)" = 20 ] || fail "uid_maps not distinct: $(printf '%s\n' "${maps[@]}" | sort | uniq -c)"
	[ "$(pool_count)" = 20 ] || fail "pool: $(pool_ls)"
	kc scale deployment many --replicas=0
	run -0 wait_for 120 "the replicas gone" no_pods app=many
	[ "$(pool_ls)" = "[]" ] || fail "pool after scaling to 0: $(pool_ls)"
}

@test "story 6: under mode always, hostNetwork, hostPID and privileged pods run as host root" {
	for kind in hostNetwork hostPID privileged; do
		case $kind in
		privileged) spec="containers: [{name: app, image: busybox:1.36, command: [sleep, '3600'], securityContext: {privileged: true}}]" ;;
		*) spec="$kind: true
containers: [{name: app, image: busybox:1.36, command: [sleep, '3600']}]" ;;
		esac
		kc apply -f - <<-EOT
			apiVersion: v1
			kind: Pod
			metadata: {name: $(tr A-Z a-z <<<"$kind")}
			spec:
			  terminationGracePeriodSeconds: 1
			$(sed 's/^/  /' <<<"$spec")
		EOT
	done
	for kind in hostnetwork hostpid privileged; do
		run -0 kc wait --for=condition=Ready "pod/$kind" --timeout=90s
		[ "$(uid_map "$kind")" = "0 0 4294967295" ] || fail "$kind: uid_map $(uid_map "$kind")"
	done
	# The one range: the privileged pod's sandbox's. containerd writes the
	# same sandbox spec for a privileged pod as for any other, so its pause
	# keeps a pool namespace while the privileged container is host root
	# (README, "Privileged containers").
	sandbox=$(crictl_node pods --name privileged -q)
	[ "$(pool_ls | jq -r '[.[].owner] | join(" ")')" = "$sandbox" ] || fail "pool: $(pool_ls), the privileged pod's sandbox: $sandbox"
}

no_pods() {
	[ -z "$(kc get pods -l "$1" -o name)" ]
}
