#!/usr/bin/env bash
# k8s-cluster.sh up | down DIR | kubectl DIR ARGS...: the cluster suite's
# one-node cluster (tests/k8s/cluster.bash) by hand, for a developer's loop:
#   D=$(hack/k8s-cluster.sh up)       # prints the cluster's dir
#   K8S_E2E_CLUSTER=$D bats tests/k8s/10-pods.bats
#   hack/k8s-cluster.sh kubectl "$D" get pods -A
#   hack/k8s-cluster.sh down "$D"     # leaves the host as it was
set -euo pipefail
ROOT_DIR=$(cd "$(dirname "$0")/.." && pwd)
bats_require_minimum_version() { :; }
# shellcheck source=tests/integration/helpers.bash
. "$ROOT_DIR/tests/integration/helpers.bash"
# shellcheck source=tests/k8s/cluster.bash
. "$ROOT_DIR/tests/k8s/cluster.bash"
case "${1:-}" in
up)
	cluster_up >&2
	echo "$D"
	;;
down)
	D=$2
	cluster_down
	;;
kubectl)
	D=$2
	shift 2
	kc "$@"
	;;
*)
	echo "usage: $0 up | down DIR | kubectl DIR ARGS..." >&2
	exit 2
	;;
esac
