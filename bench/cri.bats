#!/usr/bin/env bats
# make bench, section 6: what a whole pod start through containerd's CRI
# costs with runc-userns against plain runc, measured in the same run,
# interleaved: the number an operator pays per pod. The containerd suite's
# private containerd (tests/integration/containerd.bash): its handler
# `plain` runs $REAL_RUNC, its default handler runc-userns (contrib's
# drop-in). Writes a Markdown section to $BENCH_CRI_OUT (to fd 3, the
# terminal, without it). BENCH_N measured rounds (default 40) after 3
# warm-up rounds. A time is reported, never asserted: the test fails only
# if a pod does not start or stop, a variant is not what it claims, or a
# pod or pool entry is left behind.

load ../tests/integration/helpers
load ../tests/integration/containerd

# The variants, in the order each round runs them: table label, pod name
# prefix, runtime handler (empty: the default, runc-userns), pod
# annotations, the handler's runc root under $D, pool ranges a pod holds.
labels=("runc" "runc-userns (exec-only)" "runc-userns (pool userns + idmap)")
keys=(runc exec pool)
handlers=(plain "" "")
annotations=('{}' '{}' '{"runc-userns.io/userns": "auto"}')
roots=(runc-plain runc runc)
ranges=(0 0 1)

# pod_round I ROUND OUT: one pod of variant I; appends "LABEL<tab>pod start
# us<tab>pod teardown us" to OUT. Pod start: crictl runp, create and start
# of a busybox `true`; then, untimed, the checks and the wait for it to
# exit; pod teardown: crictl stopp and rmp.
pod_round() {
	local i=$1 cfg id c state t0 t1 t2 t3 n rt=()
	cfg=$(pod_config "${keys[i]}-$2" "${annotations[i]}")
	[ -z "${handlers[i]}" ] || rt=(--runtime "${handlers[i]}")
	t0=${EPOCHREALTIME/[.,]/}
	id=$(crictl runp "${rt[@]}" "$cfg")
	c=$(crictl create "$id" "$D/true.ctr.json" "$cfg")
	crictl start "$c" >/dev/null
	t1=${EPOCHREALTIME/[.,]/}
	note_pod "$id"
	[ -d "$D/${roots[i]}/k8s.io/$id" ] || fail "${labels[i]}: pod $id is not under $D/${roots[i]}: another handler ran it"
	[ "$(pool_count)" = "${ranges[i]}" ] || fail "${labels[i]}: the pool holds $(pool_count) ranges, not ${ranges[i]}"
	for n in $(seq 600); do
		state=$(crictl inspect "$c" | jq -r .status.state)
		[ "$state" != CONTAINER_EXITED ] || break
		sleep 0.05
	done
	[ "$state" = CONTAINER_EXITED ] || fail "${labels[i]}: container $c is $state, not exited, after $n polls"
	t2=${EPOCHREALTIME/[.,]/}
	rmpod "$id"
	t3=${EPOCHREALTIME/[.,]/}
	printf '%s\t%d\t%d\n' "${labels[i]}" $((t1 - t0)) $((t3 - t2)) >>"$3"
}

# table COLUMN FILE: a Markdown table of column COLUMN (2: pod start, 3: pod
# teardown; microseconds) of FILE, a row a variant in their order in FILE:
# median, min, max, ratio and difference of medians against the first, and
# the paired difference (the median, over the rounds, of a pod's time minus
# the first variant's pod of the same round: the round-to-round drift of
# this VM, tens of ms, cancels out of it) with its 95% interval. The
# arithmetic is bench/lifecycle's (-mode tsv), the same as sections 1-2's:
# $BENCH_LIFECYCLE, which hack/bench.sh has built, else built here.
table() {
	local bin=${BENCH_LIFECYCLE:-$D/lifecycle}
	[ -x "$bin" ] || (cd "$BATS_TEST_DIRNAME/.." && go build -o "$bin" ./bench/lifecycle)
	"$bin" -mode tsv -col "$1" <"$2"
}

@test "pod start and teardown under containerd's CRI: runc, runc-userns exec-only, runc-userns with a pool user namespace" {
	local n=${BENCH_N:-40} r i t
	ctr_config true '["true"]' >/dev/null
	for r in $(seq -2 "$n"); do
		for i in "${!labels[@]}"; do
			if [ "$r" -le 0 ]; then
				pod_round "$i" "w$((-r))" /dev/null
			else
				pod_round "$i" "$r" "$D/rounds.tsv"
			fi
		done
	done
	[ -z "$(crictl pods -q)" ] || fail "pods left: $(crictl pods)"
	[ "$(pool_count)" = 0 ] || fail "pool entries left: $("$WRAPPER" pool ls)"
	# What one crictl call costs alone: a Go program's start and exit.
	for r in $(seq 11); do
		t=${EPOCHREALTIME/[.,]/}
		"$CRICTL" --version >/dev/null
		echo $((${EPOCHREALTIME/[.,]/} - t))
	done | sort -n | awk 'NR == 6 {printf "%.0f\n", $1 / 1000}' >"$D/crictl.ms"
	{
		echo "containerd $(containerd --version | awk '{print $3}') (a private one: tests/integration/containerd.bash),"
		echo "crictl $("$CRICTL" --version | awk '{print $3}'), $("$REAL_RUNC" --version | sed -n 1p); runc-userns is the"
		echo "default runtime handler as contrib's drop-in installs it, runc a second handler \`plain\`"
		echo "(\`crictl runp --runtime plain\`)."
		echo "Load while measuring: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)."
		echo "Medians of $n interleaved rounds (runc, exec-only, pool in turn) after 3 warm-up rounds; ratios against runc;"
		echo "\"paired Δ\": the median, over the rounds, of a pod's time minus the runc pod's of the same round, with its"
		echo "distribution-free 95% interval (bench/lifecycle, stats.go)."
		echo
		echo "Pod start: \`crictl runp\` (pause sandbox, its own network namespace through CNI) + \`crictl create\` +"
		echo "\`crictl start\` of a busybox \`true\`, wall time in the shell; the wait for it to exit is not timed."
		echo "Each crictl call starts a Go program (\`crictl --version\` alone: $(cat "$D/crictl.ms") ms here, median of 11):"
		echo "three in every pod start, two in every teardown, paid alike by every variant, so the differences"
		echo "are containerd's, the shim's and the runtime's. \`exec-only\`: a pod without annotation, which the"
		echo "wrapper passes to runc; \`pool\`: the pod annotation \`runc-userns.io/userns: auto\`, a user namespace"
		echo "from the pool for sandbox and container, each rootfs an overlay over idmapped clones of its lower"
		echo "layers."
		echo
		echo "Pod start:"
		echo
		table 2 "$D/rounds.tsv"
		echo
		echo "Pod teardown (\`crictl stopp\` + \`crictl rmp\`):"
		echo
		table 3 "$D/rounds.tsv"
	} >"$D/report.md"
	if [ -n "${BENCH_CRI_OUT:-}" ]; then
		cat "$D/report.md" >"$BENCH_CRI_OUT"
	else
		cat "$D/report.md" >&3
	fi
}

# density_pod VARIANT K: one pod of variant VARIANT (index into labels)
# with a `sleep` container, created and started; appends "ID SANDBOX-PID"
# to $D/density.ids.
density_pod() {
	local i=$1 cfg id c rt=()
	cfg=$(pod_config "d${keys[i]}-$2" "${annotations[i]}") || return
	[ -z "${handlers[i]}" ] || rt=(--runtime "${handlers[i]}")
	id=$(crictl runp "${rt[@]}" "$cfg") || return
	c=$(crictl create "$id" "$D/sleep.ctr.json" "$cfg") || return
	crictl start "$c" >/dev/null || return
	echo "$id $(crictl inspectp "$id" | jq -r .info.pid)" >>"$D/density.ids"
}

# in_batches P FUNC ARGS... : FUNC ARGS... K for K in 1..$BENCH_DENSITY,
# P at a time (wait_pids fails on any that failed).
in_batches() {
	local p=$1 k pids=()
	shift
	for k in $(seq "$BENCH_DENSITY"); do
		"$@" "$k" &
		pids+=($!)
		if [ "${#pids[@]}" -ge "$p" ]; then
			wait_pids "${pids[@]}"
			pids=()
		fi
	done
	wait_pids "${pids[@]}"
}

teardown_one() { # teardown_one K: stop and remove the pod on line K of $D/density.ids
	local id
	id=$(sed -n "$1p" "$D/density.ids" | cut -d' ' -f1)
	rmpod "$id"
}

@test "pod density: BENCH_DENSITY pods at once (default 100), plain runc, unannotated and pooled; each pooled pod its own range, all back after rmp" {
	local v t0 t1 t2 host hosts report=$D/density.md
	export BENCH_DENSITY=${BENCH_DENSITY:-100}
	# As many 65536-ID slots as pods, and crictl's timeout well above a
	# call queued behind BENCH_DENSITY others.
	cp "$RUNC_USERNS_CONFIG" "$RUNC_USERNS_CONFIG.orig"
	jq --argjson base "$POOL_BASE" --argjson n "$BENCH_DENSITY" '.userns.ranges = [{hostID: $base, size: (65536 * $n)}]' \
		"$RUNC_USERNS_CONFIG.orig" >"$RUNC_USERNS_CONFIG"
	sed -i 's/^timeout: .*/timeout: 300/' "$D/crictl.yaml"
	ctr_config sleep '["sleep", "3600"]' >/dev/null
	{
		echo "$BENCH_DENSITY pods started as fast as 16 \`crictl\` pipelines at a time go (waves of 16, each \`runp\` + \`create\` +"
		echo "\`start\` of a busybox \`sleep\`), then all stopped and removed the same way; wall time to the last"
		echo "started container and to the last removed pod. One run per variant, in this order; the unannotated row"
		echo "is the wrapper passing every call to runc: what its own process start costs under that load."
		echo
		echo "| variant | pods | start, s | teardown, s | distinct host ranges |"
		echo "|---|---:|---:|---:|---:|"
	} >"$report"
	for v in 0 1 2; do
		: >"$D/density.ids"
		t0=${EPOCHREALTIME/[.,]/}
		in_batches 16 density_pod "$v"
		t1=${EPOCHREALTIME/[.,]/}
		[ "$(wc -l <"$D/density.ids")" = "$BENCH_DENSITY" ]
		hosts=-
		if [ "${ranges[v]}" = 1 ]; then
			# Every pod a range of its own: the pool's records and the
			# kernel's, each sandbox's uid_map.
			[ "$(pool_count)" = "$BENCH_DENSITY" ]
			[ "$("$WRAPPER" pool ls --json | jq '[.[].hostID] | unique | length')" = "$BENCH_DENSITY" ]
			hosts=$(while read -r _ pid; do awk '{print $2}' "/proc/$pid/uid_map"; done <"$D/density.ids" | sort -u | wc -l)
			[ "$hosts" = "$BENCH_DENSITY" ]
			while read -r _ pid; do
				read -r _ host _ <"/proc/$pid/uid_map"
				if [ "$host" -lt "$POOL_BASE" ] || [ $(((host - POOL_BASE) % 65536)) != 0 ]; then
					fail "sandbox $pid maps to host ID $host, not a pool slot"
				fi
			done <"$D/density.ids"
		else
			[ "$(pool_count)" = 0 ]
		fi
		in_batches 16 teardown_one
		t2=${EPOCHREALTIME/[.,]/}
		[ -z "$(crictl pods -q)" ]
		[ "$(pool_count)" = 0 ]
		awk -v l="${labels[v]}" -v n="$BENCH_DENSITY" -v s=$((t1 - t0)) -v t=$((t2 - t1)) -v h="$hosts" \
			'BEGIN {printf "| %s | %d | %.1f | %.1f | %s |\n", l, n, s / 1e6, t / 1e6, h}' >>"$report"
	done
	mv -f "$RUNC_USERNS_CONFIG.orig" "$RUNC_USERNS_CONFIG"
	if [ -n "${BENCH_CRI_OUT:-}" ]; then
		{ echo; echo "Pod density:"; echo; cat "$report"; } >>"$BENCH_CRI_OUT"
	else
		cat "$report" >&3
	fi
}
