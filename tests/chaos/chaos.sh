#!/usr/bin/env bash
# chaos.sh: pods at density through runc-userns under a private containerd
# (tests/integration/containerd.bash) while things break (issue 51).
#
# CHAOS_PODS pods (default 100) start in waves of CHAOS_WAVE concurrent
# pipelines (16), each a pod sandbox and one app container; the first half
# of the waves under userns.mode annotation (the pods ask for auto), the
# rest under mode always (they do not ask). Meanwhile:
#  - tests/chaos/killer SIGKILLs a random tenth of the wrapper processes
#    this containerd's shims start, after a random delay (a process-tree
#    watcher: the binary is the production one);
#  - containerd is restarted CHAOS_RESTARTS times (2), each in the middle
#    of a wave;
#  - in one wave the stateDir's tmpfs is filled for a few seconds (ENOSPC),
#    then freed.
# Like a kubelet, a pipeline that failed is cleaned up and retried, until
# its pod runs or has failed 5 times. Every pod stays up until the end,
# so no two of them may ever share host IDs: each sandbox's and app's
# uid_map is read from /proc while it runs.
#
# At the end: rmp of every pod (retried, the killer still at work), then,
# the killer stopped, one `runc-userns pool gc`; nothing may be left: no
# range held, no two pods' ranges overlapping, no mount under the
# stateDir or containerd's dirs, no live wrapper process (a user namespace
# holder), pin, in-flight marker or container directory; hack/hostcheck.sh shows nothing of this run. Every
# pod ran in its own range of the pool (never as host root), or its last
# failure names a cause the run made (a kill, a containerd restart, a full
# stateDir).
#
# SEED replays a run (the same picks, waves and event times; which call a
# kill lands in depends on timing). The last line sums it up; the exit
# status is 0 only when all of the above holds. Environment: REAL_RUNC,
# PATH with containerd first (make chaos sets both), CHAOS_PODS,
# CHAOS_WAVE, CHAOS_RESTARTS, SEED.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SEED=${SEED:-$((RANDOM * 32768 + RANDOM))}
PODS=${CHAOS_PODS:-100}
WAVE=${CHAOS_WAVE:-16}
RESTARTS=${CHAOS_RESTARTS:-2}
SLOTS=128 # pool slots: more than the pods, which all stay up
echo "chaos: seed $SEED (replay: make chaos SEED=$SEED), $PODS pods in waves of $WAVE, $RESTARTS containerd restarts"
RANDOM=$SEED

# helpers.bash and containerd.bash are bats files' helpers; outside bats,
# only this needs a stand-in.
bats_require_minimum_version() { :; }
# shellcheck source=../integration/helpers.bash
source "$ROOT/tests/integration/helpers.bash"
# shellcheck source=../integration/containerd.bash
source "$ROOT/tests/integration/containerd.bash"

[ "$(id -u)" = 0 ] || { echo "chaos: needs root" >&2; exit 2; }
[ -x "$WRAPPER" ] || { echo "chaos: $WRAPPER missing: make build" >&2; exit 2; }
START=$(date +%s)
HC=$(mktemp /tmp/chaos-hostcheck.XXXXXX)
KILLER=$(mktemp /tmp/chaos-killer.XXXXXX)
"$ROOT/hack/hostcheck.sh" save "$HC"
(cd "$ROOT" && go build -o "$KILLER" ./tests/chaos/killer)
KILLER_PID=
cleanup() {
	local rc=$?
	[ -z "$KILLER_PID" ] || kill "$KILLER_PID" 2>/dev/null || true
	[ -z "${D:-}" ] || rm -f "$D/state/chaos-fill"
	if [ -n "${D:-}" ] && [ -n "${KEEP:-}" ]; then
		cp -r "$D/out" "$KEEP" 2>/dev/null || true
	fi
	stop_containerd || true
	rm -f "$KILLER" "$HC"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# containerd.bash's ctr and crictl name $D, which start_containerd sets
# after their first use.
D=
start_containerd
mkdir -p "$D/out"
OUT=$D/out
# The pool: SLOTS slots. The stateDir's tmpfs gets a size, which the full
# wave fills.
write_chaos_config() {
	jq -n --arg runtime "$REAL_RUNC" --arg state "$D/state" --argjson base "$POOL_BASE" \
		--argjson size "$((SLOTS * 65536))" --arg mode "$1" \
		'{runtime: $runtime, stateDir: $state, userns: {mode: $mode, ranges: [{hostID: $base, size: $size}]}}' \
		>"$RUNC_USERNS_CONFIG.new"
	mv "$RUNC_USERNS_CONFIG.new" "$RUNC_USERNS_CONFIG"
}
write_chaos_config annotation
mount -o remount,size=16m "$D/state"

restart_containerd() {
	local pid i
	pid=$(cat "$D/containerd.pid")
	kill "$pid"
	for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	containerd --config "$D/config.toml" >>"$D/containerd.log" 2>&1 &
	echo $! >"$D/containerd.pid"
	# Up to 3 minutes: containerd reconnects to every shim of the run
	# before it serves, slow on a loaded node.
	for i in $(seq 900); do
		[ -S "$D/containerd.sock" ] && crictl info >/dev/null 2>&1 && break
		sleep 0.2
	done
	crictl info >/dev/null 2>&1 || { echo "chaos: containerd did not come back in 3 minutes: $(tail -5 "$D/containerd.log")" >&2; return 1; }
	echo "$(date +%T.%3N) containerd restarted" >>"$OUT/events"
}

# fill_state SECONDS: the stateDir's tmpfs full for SECONDS, then freed.
fill_state() {
	dd if=/dev/zero of="$D/state/chaos-fill" bs=64k >/dev/null 2>&1 || true
	echo "$(date +%T.%3N) stateDir full ($(df --output=avail -k "$D/state" | tail -1) KiB free)" >>"$OUT/events"
	sleep "$1"
	rm -f "$D/state/chaos-fill"
	echo "$(date +%T.%3N) stateDir freed" >>"$OUT/events"
}

# oneline: stdin on one line, for the logs; crictl's log prefix and the
# gRPC wrapping go.
oneline() {
	tr '\n' ' ' | sed -E 's/  */ /g; s/ $//; s/E[0-9]{4} [0-9:.]+ +[0-9]+ [a-z_]+\.go:[0-9]+\] "[^"]*" err="rpc error: code = ([A-Za-z]+) desc = /\1: /'
}

# remove_named NAME: every sandbox of pod NAME goes (a failed attempt's),
# with its containers; as a kubelet would, until containerd lists none
# (a listing that fails, containerd restarting, is no answer).
remove_named() {
	local p i left
	for i in $(seq 10); do
		left=$(crictl pods --name "^$1\$" -q 2>/dev/null) || { sleep 1; continue; }
		[ -n "$left" ] || return 0
		for p in $left; do
			crictl stopp "$p" >/dev/null 2>&1 || true
			crictl rmp -f "$p" >/dev/null 2>&1 || true
		done
		sleep 1
	done
}

# attempt NAME N ANNOTATIONS: one try at pod NAME; prints the sandbox and
# app uid_maps on success, the failed step's error on failure.
attempt() {
	local name=$1 n=$2 ann=$3 cfg ctr pod cid spid cpid out
	cfg=$OUT/$name.$n.pod.json
	jq -n --arg name "$name" --argjson n "$n" --arg logs "$D/logs" --argjson ann "$ann" --arg cg "$CG_PARENT" \
		'{metadata: {name: $name, namespace: "default", uid: $name, attempt: $n}, hostname: $name,
		log_directory: $logs, annotations: $ann, linux: {cgroup_parent: $cg}}' >"$cfg"
	ctr=$OUT/$name.ctr.json
	jq -n --arg name "app" --argjson n "$n" '{metadata: {name: $name, attempt: $n}, image: {image: "localhost/busybox:test"},
		command: ["sleep", "3600"], log_path: "app.log", linux: {}}' >"$ctr"
	out=$(crictl runp "$cfg" 2>&1) || { echo "runp: $out" | oneline; return 1; }
	pod=$out
	note_pod "$pod" 2>/dev/null || true
	out=$(crictl create "$pod" "$ctr" "$cfg" 2>&1) || { echo "create: $out" | oneline; return 1; }
	cid=$out
	out=$(crictl start "$cid" 2>&1) || { echo "start: $out" | oneline; return 1; }
	spid=$(crictl inspectp "$pod" 2>&1 | jq -r .info.pid) || { echo "inspectp: no pid" | oneline; return 1; }
	cpid=$(crictl inspect "$cid" 2>&1 | jq -r .info.pid) || { echo "inspect: no pid" | oneline; return 1; }
	# Read while both run: the ranges they hold.
	echo "$pod $(awk '{print $1, $2, $3}' "/proc/$spid/uid_map" | oneline) / $(awk '{print $1, $2, $3}' "/proc/$cpid/uid_map" | oneline)"
}

# pipeline I: pod chaos-I until it runs or failed 5 times (a kubelet's
# backoff between tries: 1, 2, 4, 8 s).
pipeline() {
	local i=$1 name=chaos-$1 ann=$2 n res
	for n in 0 1 2 3 4; do
		if res=$(attempt "$name" "$n" "$ann"); then
			echo "ran $name $n $res" >>"$OUT/results"
			return 0
		fi
		echo "$(date +%T.%3N) fail $name $n $res" >>"$OUT/failures"
		remove_named "$name"
		[ "$n" = 4 ] || sleep $((1 << n))
	done
	echo "gaveup $name $res" >>"$OUT/results"
}

"$KILLER" -wrapper "$WRAPPER" -marker "$D/containerd.sock" -seed "$SEED" -fraction 0.1 -max-delay 100ms \
	-log "$OUT/kills" -count "$OUT/kills.count" &
KILLER_PID=$!
: >"$OUT/results"
: >"$OUT/failures"
: >"$OUT/kills"
: >"$OUT/events"

waves=$(((PODS + WAVE - 1) / WAVE))
# The waves of the events, from the seed: restarts spread over the run,
# the full stateDir in another wave.
declare -A restart_in=()
for r in $(seq "$RESTARTS"); do
	restart_in[$((r * waves / (RESTARTS + 1)))]=1
done
full_in=$((RANDOM % waves))
while [ -n "${restart_in[$full_in]:-}" ] && [ "$waves" -gt "$RESTARTS" ]; do full_in=$(((full_in + 1) % waves)); done
restarts=0
for w in $(seq 0 $((waves - 1))); do
	mode=annotation
	ann='{"runc-userns.io/userns": "auto"}'
	if [ $((w * 2)) -ge "$waves" ]; then
		mode=always
		ann='{}'
	fi
	write_chaos_config "$mode"
	echo "$(date +%T.%3N) wave $w: mode $mode" >>"$OUT/events"
	pids=()
	for i in $(seq $((w * WAVE)) $(((w + 1) * WAVE - 1))); do
		[ "$i" -lt "$PODS" ] || break
		pipeline "$i" "$ann" &
		pids+=($!)
	done
	# The events, at a seeded moment inside the wave.
	delay=$((2 + RANDOM % 6))
	if [ -n "${restart_in[$w]:-}" ]; then
		sleep "$delay"
		restart_containerd
		restarts=$((restarts + 1))
	elif [ "$w" = "$full_in" ]; then
		sleep "$((delay / 2))"
		fill_state 4
	fi
	wait_pids "${pids[@]}"
done
# The end: every pod goes, the killer still at work (a kubelet retries a
# removal that failed); then the killer stops and one pool gc runs.
for i in $(seq 10); do
	left=$(crictl pods -q 2>/dev/null) || continue
	[ -n "$left" ] || break
	# Not a bare wait: containerd and the killer are jobs of this shell.
	rms=()
	for p in $left; do
		(
			crictl stopp "$p" >/dev/null 2>&1 || echo "$(date +%T.%3N) stopp $p failed (try $i)" >>"$OUT/events"
			crictl rmp -f "$p" >/dev/null 2>&1 || echo "$(date +%T.%3N) rmp $p failed (try $i)" >>"$OUT/events"
		) &
		rms+=($!)
		if [ ${#rms[@]} = "$WAVE" ]; then
			wait_pids "${rms[@]}"
			rms=()
		fi
	done
	[ ${#rms[@]} = 0 ] || wait_pids "${rms[@]}"
done
kill "$KILLER_PID"
wait "$KILLER_PID" || true
KILLER_PID=
read -r kills picked seen <"$OUT/kills.count"
"$WRAPPER" pool gc >>"$OUT/events" 2>&1 || echo "pool gc failed" >>"$OUT/events"

bad=()
leaked=$("$WRAPPER" pool ls --json | jq length)
[ "$leaked" = 0 ] || bad+=("ranges held: $("$WRAPPER" pool ls --json | jq -c '[.[] | {owner, hostID, members}]')")
[ -z "$(crictl pods -q)" ] || bad+=("pods left: $(crictl pods -q | oneline)")
# Overlaps, from the uid_maps read while the pods ran (all of them ran
# until the end): sorted by host ID, each must end before the next starts.
overlapping=$(awk '$1 == "ran" {print $6, $7}' "$OUT/results" | sort -n |
	awk 'NR > 1 && $1 < end {n++} {if ($1 + $2 > end) end = $1 + $2} END {print n + 0}')
[ "$overlapping" = 0 ] || bad+=("$overlapping overlapping ranges")
# Each pod: ran in its own pool range, sandbox and app alike, root inside
# mapped to a pool ID; or gave up on a failure that names a cause.
ran=0
while read -r what name n pod s0 sh ss slash a0 ah as; do
	if [ "$what" = gaveup ]; then
		msg="$n $pod $s0 $sh $ss $slash $a0 $ah $as"
		grep -Eqi 'no space left on device|killed|signal|connection refused|unavailable|closing|deadline|exit status 137|not initialized' <<<"$msg" ||
			bad+=("$name failed 5 times, the last without a cause: $msg")
		continue
	fi
	ran=$((ran + 1))
	if [ "$s0" != 0 ] || [ "$ss" != 65536 ] || [ "$sh" -lt "$POOL_BASE" ] || [ "$sh" -ge $((POOL_BASE + SLOTS * 65536)) ]; then
		bad+=("$name ran outside the pool: sandbox uid_map $s0 $sh $ss")
	fi
	[ "$a0 $ah $as" = "$s0 $sh $ss" ] || bad+=("$name: app uid_map $a0 $ah $as, sandbox's $s0 $sh $ss")
done <"$OUT/results"
[ "$(wc -l <"$OUT/results")" = "$PODS" ] || bad+=("$(wc -l <"$OUT/results") results for $PODS pods")
gaveup=$(grep -c '^gaveup' "$OUT/results" || true)
retries=$(($(wc -l <"$OUT/failures") - gaveup))
m=$(awk -v s="$D/state/" -v r="$D/root/" -v c="$D/state-ctrd/" -v n="$D/runc/" \
	'index($5, s) == 1 || index($5, r) == 1 || index($5, c) == 1 || index($5, n) == 1 {print $5}' /proc/self/mountinfo)
[ -z "$m" ] || bad+=("mounts left: $(echo "$m" | oneline)")
m=$(find "$D/state/pods" "$D/state/inflight" "$D/state/containers" -mindepth 1 2>/dev/null | head -5 | oneline)
[ -z "$m" ] || bad+=("state dir entries left (pins, in-flight markers, container dirs): $m")
holders=()
wid=$(stat -L -c %d:%i "$WRAPPER")
for p in /proc/[0-9]*; do
	# This run's: its command line names $D (other suites run the same
	# binary beside it).
	[ "$(stat -L -c %d:%i "$p/exe" 2>/dev/null)" = "$wid" ] && grep -qF "$D/" "$p/cmdline" 2>/dev/null &&
		holders+=("${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline")")
done
[ ${#holders[@]} = 0 ] || bad+=("wrapper processes left: ${holders[*]}")

DUR=$(($(date +%s) - START))
echo "chaos: events:"
sed 's/^/  /' "$OUT/events"
verbs=$(awk '{for (i = 7; i <= NF; i++) if ($i ~ /^(create|start|delete|kill|state|exec|run|update|pause|resume|ps|features)$/) {print $i; break}}' "$OUT/kills" | sort | uniq -c | oneline)
echo "chaos: $kills kills of $picked picked among $seen wrapper processes (the calls they hit: $verbs), $retries retries, $gaveup pods gave up, $ran ran; took ${DUR}s"
if [ "$retries" -gt 0 ]; then
	echo "chaos: failures (the first 20):"
	head -20 "$OUT/failures" | cut -c1-400 | sed 's/^/  /'
fi
# What this run left on the host: stop containerd (which cleans up $D),
# then hostcheck, judging only lines of this run (others may run beside).
trap - EXIT
[ -z "${KEEP:-}" ] || cp -r "$OUT" "$KEEP"
gaveups=$(grep '^gaveup' "$OUT/results" || true)
netns=$(xargs -n1 basename <"$D/netns.list" 2>/dev/null | sort -u || true)
stop_containerd
rm -f "$KILLER"
hc=$("$ROOT/hack/hostcheck.sh" check "$HC" 2>&1 | grep -E '^[+-][^+-]' | grep -F -e "$D" -e "$CNI_NET" $(printf -- '-e %s ' $netns) || true)
rm -f "$HC"
[ -z "$hc" ] || bad+=("hostcheck: $(echo "$hc" | oneline)")
[ -z "$gaveups" ] || echo "$gaveups" | sed 's/^/chaos: gave up: /'
for b in "${bad[@]}"; do echo "chaos: FAIL: $b"; done
echo "chaos: seed $SEED, $PODS pods, $kills kills, $retries retries, $restarts containerd restarts, $leaked leaked, $overlapping overlapping"
[ ${#bad[@]} = 0 ]
