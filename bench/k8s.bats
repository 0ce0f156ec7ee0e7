#!/usr/bin/env bats
# make bench, section 7: the kubelet's own pod-start figure, the value
# behind kubelet_pod_start_sli_duration_seconds, for pods of each kind on
# the cluster suite's one-node cluster (tests/k8s/cluster.bash), one node
# per run of this file: K8S_E2E_NODE=ours (containerd 1.7, runc 1.1.5,
# runc-userns installed by contrib/kubernetes's DaemonSet) runs a plain
# pod, a pod on the runc-userns RuntimeClass without annotation and a
# pooled one; K8S_E2E_NODE=native (containerd 2, upstream runc) a plain
# pod and a hostUsers: false one (KEP-127). BENCH_N rounds (default 20)
# after one warm-up round, a pod of each kind a round, in turn (the first
# kind rotating from round to round), each deleted at the round's end.
# Writes "KIND<tab>SLI<tab>CRI<tab>LAG" (us) a pod to $BENCH_K8S_OUT
# (bench/k8s.sh tabulates it); without it, the tables go to
# fd 3. A time is reported, never asserted: the test fails only if a pod
# does not start or is not the kind it claims, or the kubelet did not log
# its figure.
#
# What the kubelet's figure is (pkg/kubelet/util/pod_startup_latency_tracker.go):
# the first time the kubelet's pod watch shows every container running
# after its status manager has written that status, minus the pod's
# creationTimestamp. Three things make it coarse, and this file bounds two:
#  - creationTimestamp has whole seconds. Each pod's POST to the API
#    server leaves 20 ms after a second begins, so that the truncation adds
#    to every pod the same tens of ms (20 ms, curl's start, the request)
#    rather than 0-1 s at random.
#  - The kubelet sees a container running at its next PLEG relist (every
#    second): 0-1 s, which nothing here changes; rounds spread it.
#  - The tracker marks the pod running when the status PATCH returns, and
#    logs it on the next watch event of any pod on the node. The PATCH's
#    own event often arrives first, and on a quiet node the next one may
#    come seconds later: the figure then measures that. A ticker patches
#    a condition of a pod of its own every BENCH_K8S_TICK ms (default 100;
#    0: none), as other pods' updates would on a busy node.
# Hence a second column from the same pods that none of these touch: the
# app container's start as containerd recorded it (CRI startedAt, ns),
# minus the same creationTimestamp. LAG, the third, is the tracker's wait
# for a watch event (its watchObservedRunningTime - observedRunningTime).

load ../tests/integration/helpers
load ../tests/k8s/cluster

# The kinds of pod of each node, in the order a round creates them.
if [ "$K8S_E2E_NODE" = native ]; then
	kinds=(plain-native native)
else
	kinds=(plain unannotated pooled)
fi

setup_file() {
	cluster_up
	if [ "$K8S_E2E_NODE" != native ]; then
		install_runc_userns 1 >/dev/null
		wait_for 60 "containerd's runc-userns handler" handler_served
	fi
	[ "${BENCH_K8S_TICK:-100}" = 0 ] || ticker_start
}

teardown_file() {
	if [ -f "${D:-}/ticker.pid" ]; then kill "$(cat "$D/ticker.pid")" 2>/dev/null || true; fi
	cluster_down
}

# api ARGS...: curl against the API server as the cluster's admin (a
# process a tenth of kubectl's).
api() {
	node_exec curl -sS --fail-with-body --cacert "$D/pki/ca.crt" --cert "$D/pki/admin.crt" --key "$D/pki/admin.key" "$@"
}

PODS=https://127.0.0.1:6443/api/v1/namespaces/default/pods

# pod_json KIND NAME: the pod of that kind: busybox's sh, which exits on
# SIGTERM (a deletion waits for no grace period), and what KIND asks for.
pod_json() {
	local rc="" ann='{}' users=true
	case $1 in
	plain | plain-native) ;;
	unannotated) rc=runc-userns ;;
	pooled) rc=runc-userns ann='{"runc-userns.io/userns": "auto"}' ;;
	native) users=false ;;
	*) fail "pod_json: unknown kind $1" ;;
	esac
	jq -nc --arg n "$2" --arg rc "$rc" --argjson ann "$ann" --argjson users "$users" '{apiVersion: "v1", kind: "Pod",
		metadata: {name: $n, annotations: $ann},
		spec: ({terminationGracePeriodSeconds: 1, containers: [{name: "app", image: "busybox:1.36",
			command: ["sh", "-c", "trap \"exit 0\" TERM; sleep 3600 & wait"]}]}
			+ (if $rc == "" then {} else {runtimeClassName: $rc} end)
			+ (if $users then {} else {hostUsers: false} end))}'
}

# ticker_start: a plain pod bench-ticker, then a process on the node that
# sets a condition of its status every BENCH_K8S_TICK ms over one
# connection: a watch event for the kubelet at that rate (a status change
# only: the kubelet reconciles, it does not sync the pod).
ticker_start() {
	api -X POST -H 'Content-Type: application/json' --data-binary "$(pod_json plain bench-ticker)" "$PODS" >/dev/null
	wait_for 90 "pod bench-ticker Ready" pod_ready bench-ticker
	node_exec python3 -c '
import http.client, json, ssl, sys, time
d, period = sys.argv[1], int(sys.argv[2]) / 1000
ctx = ssl.create_default_context(cafile=d + "/pki/ca.crt")
ctx.load_cert_chain(d + "/pki/admin.crt", d + "/pki/admin.key")
c = http.client.HTTPSConnection("127.0.0.1", 6443, context=ctx)
i = 0
while True:
    i += 1
    body = {"status": {"conditions": [{"type": "bench.runc-userns.io/tick", "status": "True", "message": str(i)}]}}
    c.request("PATCH", "/api/v1/namespaces/default/pods/bench-ticker/status", json.dumps(body),
              {"Content-Type": "application/strategic-merge-patch+json"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit("ticker: PATCH: %d" % r.status)
    time.sleep(period)
' "$D" "${BENCH_K8S_TICK:-100}" </dev/null >"$D/ticker.log" 2>&1 3>&- &
	echo $! >"$D/ticker.pid"
}

# pod_ready NAME: the pod's Ready condition is True.
pod_ready() {
	api "$PODS/$1" | jq -e '.status.conditions[]? | select(.type == "Ready" and .status == "True")' >/dev/null
}

# pod_gone NAME: the API server has no pod NAME.
pod_gone() {
	[ "$(node_exec curl -s -o /dev/null -w '%{http_code}' --cacert "$D/pki/ca.crt" --cert "$D/pki/admin.crt" \
		--key "$D/pki/admin.key" "$PODS/$1")" = 404 ]
}

# sli_line NAME: the kubelet's "Observed pod startup duration" line of pod default/NAME.
sli_line() {
	grep -F "\"Observed pod startup duration\" pod=\"default/$1\"" "$D/logs/kubelet.log"
}

# pod_start KIND NAME: creates pod NAME of KIND 20 ms into a second, waits
# until it is Ready, checks it is what KIND says; writes "CREATED-EPOCH
# STARTED-US" (the app's CRI startedAt, microseconds since the epoch) to
# $D/NAME.start.
pod_start() {
	local kind=$1 name=$2 json frac wait created started cid info pid sandbox map handler want pool
	json=$(pod_json "$kind" "$name")
	frac=${EPOCHREALTIME#*.}
	wait=$((1020000 - 10#$frac))
	sleep "$((wait / 1000000)).$(printf %06d $((wait % 1000000)))"
	created=$(api -X POST -H 'Content-Type: application/json' --data-binary "$json" "$PODS" | jq -r .metadata.creationTimestamp)
	wait_for 120 "pod $name Ready" pod_ready "$name"
	cid=$(api "$PODS/$name" | jq -r '.status.containerStatuses[0].containerID')
	info=$(crictl_node inspect "${cid#containerd://}")
	started=$(date -d "$(jq -r .status.startedAt <<<"$info")" +%s%6N)
	pid=$(jq -r .info.pid <<<"$info")
	sandbox=$(jq -r .info.sandboxID <<<"$info")
	handler=$(crictl_node inspectp "$sandbox" | jq -r '.status.runtimeHandler // ""')
	read -r _ map _ <"/proc/$pid/uid_map"
	# The pod is the kind it claims: its handler, and where its root is.
	case $kind in
	plain | plain-native) want="handler '' host 0" ;;
	unannotated) want="handler 'runc-userns' host 0" ;;
	pooled) want="handler 'runc-userns' host pool" ;;
	native) want="handler '' host kubelet" ;; # a range of the kubelet's, not the pool's
	esac
	pool='[]'
	[ "$K8S_E2E_NODE" = native ] || pool=$(pool_ls)
	case $map in
	0) ;;
	*) if jq -e --argjson h "$map" 'any(.[]; .hostID == $h)' <<<"$pool" >/dev/null; then map=pool; else map=kubelet; fi ;;
	esac
	[ "handler '$handler' host $map" = "$want" ] || fail "$kind pod $name: handler '$handler' host $map, want $want"
	echo "$(date -d "$created" +%s) $started" >"$D/$name.start"
}

# round R: a pod of each kind in turn, round R starting with kind R mod
# the number of kinds, then all deleted; appends a line a pod to
# $D/rounds.tsv (R > 0), in the order of kinds, once the kubelet has
# logged its figures. The kubelet's relist drifts against the second the
# pods are created in, by some ms a second (its figure climbs over the
# rounds, then drops by a second): the rotation spreads that drift within
# a round over every kind, rather than adding it to the last one's.
round() {
	local r=$1 i k name line n sli created started running watched
	for i in "${!kinds[@]}"; do
		k=${kinds[(i + r) % ${#kinds[@]}]}
		pod_start "$k" "$k-$r"
	done
	for k in "${kinds[@]}"; do
		api -X DELETE "$PODS/$k-$r" >/dev/null
	done
	for k in "${kinds[@]}"; do
		wait_for 120 "pod $k-$r gone" pod_gone "$k-$r"
	done
	for k in "${kinds[@]}"; do
		name=$k-$r
		# Logged at a watch event after the status PATCH: the deletions
		# above made some, if the ticker is off.
		for n in $(seq 100); do
			line=$(sli_line "$name") && break
			sleep 0.1
		done
		[ -n "$line" ] || fail "the kubelet logged no pod startup duration for $name"
		[ "$r" -gt 0 ] || continue
		sli=$(sed -E 's/.* podStartSLOduration=([0-9.]+) .*/\1/' <<<"$line")
		read -r created started <"$D/$name.start"
		# The kubelet measures from the same whole second.
		[[ "$line" == *"podCreationTimestamp=\"$(date -u -d "@$created" '+%Y-%m-%d %H:%M:%S') +0000 UTC\""* ]] ||
			fail "$name: the kubelet's creationTimestamp is not $created: $line"
		# How long after marking the pod running the kubelet logged it:
		# the watch event its tracker waited for.
		running=$(sed -E 's/.* observedRunningTime="([^"]+) \+0000 UTC.*/\1/' <<<"$line")
		watched=$(sed -E 's/.* watchObservedRunningTime="([^"]+) \+0000 UTC.*/\1/' <<<"$line")
		printf '%s\t%.0f\t%d\t%d\n' "$k" "$(awk -v s="$sli" 'BEGIN {print s * 1e6}')" $((started - created * 1000000)) \
			$(($(date -u -d "$watched" +%s%6N) - $(date -u -d "$running" +%s%6N))) >>"$D/rounds.tsv"
	done
}

@test "pod start as the kubelet reports it (kubelet_pod_start_sli_duration_seconds), ${kinds[*]}" {
	local r n=${BENCH_N:-20}
	: >"$D/rounds.tsv"
	for r in $(seq 0 "$n"); do
		round "$r"
	done
	if [ "$K8S_E2E_NODE" != native ]; then
		wait_for 60 "the pool empty" pool_empty_node
	fi
	if [ -n "${BENCH_K8S_OUT:-}" ]; then
		cp "$D/rounds.tsv" "$BENCH_K8S_OUT"
	else
		local bin=$D/lifecycle
		(cd "$BATS_TEST_DIRNAME/.." && go build -o "$bin" ./bench/lifecycle)
		{
			echo "kubelet's podStartSLOduration:"
			"$bin" -mode tsv -col 2 <"$D/rounds.tsv"
			echo "creationTimestamp to the app container's CRI startedAt:"
			"$bin" -mode tsv -col 3 <"$D/rounds.tsv"
			echo "the kubelet's wait for a watch event before logging its figure:"
			"$bin" -mode tsv -col 4 <"$D/rounds.tsv"
		} >&3
	fi
}

# pool_empty_node: the node's pool holds no range.
pool_empty_node() {
	[ "$(pool_count)" = 0 ]
}
