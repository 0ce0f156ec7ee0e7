#!/usr/bin/env bash
# k8s.sh [REPORT [LIFECYCLE]]: make bench, section 7, appended to REPORT
# (default: a new bench/results/<time>.md, printed at the end). The
# kubelet's own pod-start figure (kubelet_pod_start_sli_duration_seconds)
# for plain, unannotated and pooled pods on the node runc-userns is for
# (containerd 1.7, runc 1.1.5: K8S_E2E_NODE=ours), then for plain and
# hostUsers: false pods on the native node (containerd 2, upstream runc),
# each node the cluster suite's one-node cluster brought up and down by
# bench/k8s.bats. BENCH_K8S_N rounds (default 20); each node's rounds in
# REPORT's name with -k8s-NODE.tsv for .md. LIFECYCLE is bench/lifecycle
# built (the statistics: medians, paired differences, intervals); built
# here without it. Reports, and never fails because the machine is slow:
# status 1 only if the host is not as hack/hostcheck.sh found it before.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_K8S_N:-20}
mkdir -p bench/results
report=${1:-$PWD/bench/results/$(date -u +%Y%m%dT%H%M%SZ).md}
tmp=$(mktemp -d /tmp/runc-userns-bench-k8s.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
lifecycle=${2:-}
if [ -z "$lifecycle" ]; then
	lifecycle=$tmp/lifecycle
	go build -o "$lifecycle" ./bench/lifecycle
fi
start=$SECONDS
./hack/hostcheck.sh save "$tmp/hostcheck"

# on_node NODE DESCRIPTION: bench/k8s.bats on that node; its rounds in
# ${report%.md}-k8s-NODE.tsv and its tables in the report, or the end of
# bats' output if it failed.
on_node() {
	local t0=$SECONDS tsv=${report%.md}-k8s-$1.tsv
	{
		echo "### Node \`$1\`: $2"
		echo
		echo "Load at the start: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)."
	} >>"$report"
	if K8S_E2E_NODE=$1 BENCH_N=$N BENCH_K8S_OUT=$tsv bats bench/k8s.bats >"$tmp/$1.log" 2>&1; then
		{
			echo "Load at the end: $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - t0)) s with the cluster's start and stop."
			echo
			echo "The kubelet's \`podStartSLOduration\`:"
			echo
			"$lifecycle" -mode tsv -col 2 <"$tsv"
			echo
			echo "creationTimestamp to the app container's CRI \`startedAt\`:"
			echo
			"$lifecycle" -mode tsv -col 3 <"$tsv"
			echo
			echo "Of the kubelet's figure, its wait for a watch event after it marked the pod running"
			echo "(\`watchObservedRunningTime\` - \`observedRunningTime\`; the ticker bounds it):"
			echo
			"$lifecycle" -mode tsv -col 4 <"$tsv"
			echo
		} >>"$report"
	else
		rm -f "$tsv"
		{
			echo
			echo "Not measured: \`bats bench/k8s.bats\` failed. The end of its output:"
			echo
			echo '```'
			tail -n 30 "$tmp/$1.log"
			echo '```'
			echo
		} >>"$report"
	fi
}

# median NODE KIND COLUMN: the median of that kind's row in the node's table.
median() {
	"$lifecycle" -mode tsv -col "$3" <"${report%.md}-k8s-$1.tsv" | awk -F'|' -v k="$2" '$2 == " " k " " {print $3 + 0}'
}

# ratio NODE-A KIND-A NODE-B KIND-B: a list item, the ratio of the two
# medians, the kubelet's figure's and CRI startedAt's.
ratio() {
	awk -v l="$2 ($1) ÷ $4 ($3)" -v a2="$(median "$1" "$2" 2)" -v b2="$(median "$3" "$4" 2)" \
		-v a3="$(median "$1" "$2" 3)" -v b3="$(median "$3" "$4" 3)" \
		'BEGIN {printf "- %s: %.2fx (%.0f ÷ %.0f ms); CRI startedAt %.2fx (%.0f ÷ %.0f ms)\n", l, a2 / b2, a2, b2, a3 / b3, a3, b3}'
}

{
	echo
	echo "## 7. Pod start as the kubelet reports it"
	echo
	echo "Kubernetes $(.cache/kubernetes-"${K8S_VERSION:-v1.34.4}"/kubelet --version 2>/dev/null | awk '{print $2}'), the cluster"
	echo "suite's one-node cluster (tests/k8s/cluster.bash), brought up for each node in turn. The kubelet's"
	echo "\`podStartSLOduration\` (the value behind \`kubelet_pod_start_sli_duration_seconds\`), read off its"
	echo "log line for each pod; \`bench/k8s.bats\` says what the figure is made of. $N rounds after one warm-up"
	echo "round, a pod of each kind a round, in turn (the first kind rotating): created (a POST 20 ms into a second: creationTimestamp has"
	echo "whole seconds), waited Ready, checked (its handler, where its root is), and deleted at the round's end;"
	echo "a ticker pod's status patched every ${BENCH_K8S_TICK:-100} ms, so that the kubelet logs a pod's figure at"
	echo "once, as on a busy node. Then the app container's start as containerd recorded it (CRI \`startedAt\`),"
	echo "from the same creationTimestamp: the kubelet's figure less its PLEG relist (every 1 s) and status round"
	echo "trips. Paired Δ: the median, over the rounds, of a pod's time minus the plain pod's of the same round,"
	echo "with its 95% interval (bench/lifecycle)."
	echo
} >>"$report"
on_node ours "containerd ${CONTAINERD17_VERSION:-v1.7.35}, $(/usr/sbin/runc --version | sed -n 1p), runc-userns installed by contrib/kubernetes's DaemonSet"
if [ -f "${report%.md}-k8s-ours.tsv" ]; then
	{
		echo "The pooled pod against the unannotated one (both through runc-userns), paired the same way:"
		echo
		grep -v '^plain	' "${report%.md}-k8s-ours.tsv" | "$lifecycle" -mode tsv -col 2
		echo
		grep -v '^plain	' "${report%.md}-k8s-ours.tsv" | "$lifecycle" -mode tsv -col 3
		echo
	} >>"$report"
fi
on_node native "containerd ${CONTAINERD2_VERSION:-v2.2.9}, upstream runc ${RUNC_UPSTREAM_VERSION:-v1.5.2}; \`native\`: \`hostUsers: false\` on the default handler"
if [ -f "${report%.md}-k8s-ours.tsv" ] && [ -f "${report%.md}-k8s-native.tsv" ]; then
	{
		echo "Across the two nodes, **not paired** (two clusters, minutes apart): ratios of medians."
		echo
		ratio native plain-native ours plain
		ratio native native ours plain
		ratio native native ours unannotated
		ratio native native ours pooled
		echo
	} >>"$report"
fi
status=0
if ./hack/hostcheck.sh check "$tmp/hostcheck" >"$tmp/hostcheck.log" 2>&1; then
	echo "Host as before the section (hack/hostcheck.sh). The section took $((SECONDS - start)) s." >>"$report"
else
	status=1
	{
		echo "**The host changed during the section** (hack/hostcheck.sh; another job on the machine can do that too):"
		echo
		echo '```'
		cat "$tmp/hostcheck.log"
		echo '```'
	} >>"$report"
fi
[ -n "${1:-}" ] || cat "$report"
exit "$status"
