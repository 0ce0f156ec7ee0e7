# The cluster suite's one cluster, for all its files (bats runs setup_suite
# once before the first file and teardown_suite once after the last, also
# after a failure). $D and $CG_ROOT reach the files through the environment.
# K8S_E2E_CLUSTER=DIR reuses a cluster made by `hack/k8s-cluster.sh up` and
# leaves it running: a developer's loop, never CI's.
setup_suite() {
	bats_require_minimum_version 1.5.0
	# shellcheck source=tests/integration/helpers.bash
	. "$BATS_TEST_DIRNAME/../integration/helpers.bash"
	# shellcheck source=tests/k8s/cluster.bash
	. "$BATS_TEST_DIRNAME/cluster.bash"
	if [ -n "${K8S_E2E_CLUSTER:-}" ]; then
		export D=$K8S_E2E_CLUSTER CG_ROOT
		CG_ROOT=$(cat "$D/cgroot")
		return 0
	fi
	cluster_up
}

teardown_suite() {
	[ -z "${K8S_E2E_CLUSTER:-}" ] || return 0
	. "$BATS_TEST_DIRNAME/../integration/helpers.bash"
	. "$BATS_TEST_DIRNAME/cluster.bash"
	cluster_down
}
