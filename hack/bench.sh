#!/usr/bin/env bash
# make bench: measures runc-userns against plain runc in the same run and
# writes bench/results/<time>.md (tables) and .jsonl (every measurement);
# section 6 runs bench/cri.bats under a private containerd, section 7
# bench/k8s.sh on a one-node Kubernetes cluster (BENCH_K8S_N=0: not).
# Performance is reported, never asserted: this never fails on a slow
# machine. BENCH_N rounds (default 40), interleaved, after 5 warm-up rounds;
# the lifecycle table 5 x BENCH_N (its rounds spread over 2-3x their
# median on a VM: 40 of them left a median uncertain by 1-2 ms).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_N:-40}
LN=$((N * 5))
UPSTREAM=${RUNC_UPSTREAM:-$PWD/.cache/runc-v1.5.2/runc}
W=$PWD/bin/runc-userns
mkdir -p bench/results
at=$(date -u +%Y%m%dT%H%M%SZ)
report=$PWD/bench/results/$at.md
raw=$PWD/bench/results/$at.jsonl
tmp=$(mktemp -d /tmp/runc-userns-bench.XXXXXX)
chmod 0711 "$tmp"
cleanup() {
	for r in "$tmp/root"; do
		[ -d "$r" ] || continue
		for id in $(ls "$r"); do /usr/sbin/runc --root "$r" delete --force "$id" >/dev/null 2>&1 || true; done
	done
	for m in $(awk -v d="$tmp" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do umount -l "$m" || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/lifecycle" ./bench/lifecycle
# The reference for every row: a Go program that only execs runc, what
# any Go wrapper pays for its own process start before doing anything.
CGO_ENABLED=0 go build -trimpath -ldflags "-X main.runtime=/usr/sbin/runc" -o "$tmp/execwrap" ./bench/execwrap
# A tmpfs, as /run is on a node (containerd's bundles and our default
# stateDir live there): fsync costs nothing on it.
mkdir -p "$tmp/tmpfs" && mount -t tmpfs -o mode=0711,size=256m runc-userns-bench "$tmp/tmpfs"
./hack/mkrootfs.sh "$tmp/rootfs" >/dev/null
mkbundle() { # NAME JQ
	mkdir -p "$tmp/$1"
	cp -a "$tmp/rootfs" "$tmp/$1/rootfs"
	(cd "$tmp/$1" && /usr/sbin/runc spec)
	jq ".process.terminal = false | .root.readonly = false | .process.args = [\"true\"] | $2" \
		"$tmp/$1/config.json" >"$tmp/$1/c" && mv "$tmp/$1/c" "$tmp/$1/config.json"
}
mkbundle plain '.'
binds='[]'
for i in $(seq 0 9); do
	mkdir -p "$tmp/vol/$i" && echo "$i" >"$tmp/vol/$i/file"
	binds=$(jq -c --arg s "$tmp/vol/$i" --arg d "/vol$i" '. + [{destination: $d, type: "bind", source: $s, options: ["rbind"]}]' <<<"$binds")
done
# The best runc 1.1 can do alone: a user namespace over a rootfs chowned
# to the range beforehand (outside the pool's ranges).
mkbundle chowned '.linux.namespaces += [{"type": "user"}]
	| .linux.uidMappings = [{"containerID": 0, "hostID": 3800000000, "size": 65536}]
	| .linux.gidMappings = [{"containerID": 0, "hostID": 3800000000, "size": 65536}]'
chown -R 3800000000:3800000000 "$tmp/chowned/rootfs"
# The same spec as runc-userns's below, done by runc alone: what runc itself
# spends on a user namespace and 10 bind mounts, so that the difference to
# runc-userns is the wrapper's own cost.
mkbundle chowned-binds ".linux.namespaces += [{\"type\": \"user\"}]
	| .linux.uidMappings = [{\"containerID\": 0, \"hostID\": 3800000000, \"size\": 65536}]
	| .linux.gidMappings = [{\"containerID\": 0, \"hostID\": 3800000000, \"size\": 65536}]
	| .mounts += $binds"
chown -R 3800000000:3800000000 "$tmp/chowned-binds/rootfs"
# The same for upstream runc, whose binds are idmapped by runc itself (what
# runc-userns asks of it on its native path): upstream runc's own cost.
mkbundle chowned-idmap-binds ".linux.namespaces += [{\"type\": \"user\"}]
	| .linux.uidMappings = [{\"containerID\": 0, \"hostID\": 3800000000, \"size\": 65536}]
	| .linux.gidMappings = [{\"containerID\": 0, \"hostID\": 3800000000, \"size\": 65536}]
	| .mounts += ($binds | map(. + {uidMappings: [{containerID: 0, hostID: 3800000000, size: 65536}],
		gidMappings: [{containerID: 0, hostID: 3800000000, size: 65536}]}))"
chown -R 3800000000:3800000000 "$tmp/chowned-idmap-binds/rootfs"
mkbundle userns ".annotations[\"runc-userns.io/userns\"] = \"auto\" | .mounts += $binds"
# The same with config.json and stateDir on the tmpfs (the rootfs stays on
# disk, named by an absolute root.path): what the wrapper writes costs what
# it costs under containerd, where bundles are under /run.
mkbundle userns-disk-rootfs '.'
mkdir -p "$tmp/tmpfs/userns"
jq --arg r "$tmp/userns-disk-rootfs/rootfs" '.root.path = $r' "$tmp/userns/config.json" >"$tmp/tmpfs/userns/config.json"
# The plain spec likewise, for section 2's unannotated create.
mkdir -p "$tmp/tmpfs/plain"
jq --arg r "$tmp/plain/rootfs" '.root.path = $r' "$tmp/plain/config.json" >"$tmp/tmpfs/plain/config.json"
for c in 11:/usr/sbin/runc:"$tmp" up:"$UPSTREAM":"$tmp" 11t:/usr/sbin/runc:"$tmp/tmpfs"; do
	IFS=: read -r name rt dir <<<"$c"
	jq -n --arg rt "$rt" --arg sd "$dir/state-$name" \
		'{runtime: $rt, stateDir: $sd, userns: {ranges: [{hostID: 3221225472, size: 16777216}]}}' >"$tmp/config-$name.json"
done

# The reference of every ratio: runc with its bundle on the tmpfs too, as
# the pooled tmpfs row's (a bundle on disk costs runc's create ~4 ms more
# here, which a disk reference would credit to the wrapper).
variants=(
	"runc=/usr/sbin/runc=$tmp/tmpfs/plain"
	"runc(bundle-on-disk)=/usr/sbin/runc=$tmp/plain"
	"runc+userns(pre-chowned)=/usr/sbin/runc=$tmp/chowned"
	"runc+userns+10binds(pre-chowned)=/usr/sbin/runc=$tmp/chowned-binds"
	"execwrap=$tmp/execwrap=$tmp/plain"
	"wrapper(exec-only)=$W=$tmp/plain=$tmp/config-11.json"
	"runc-userns(pool+idmap+10binds)=$W=$tmp/userns=$tmp/config-11.json"
	"runc-userns(same,bundle+stateDir-on-tmpfs)=$W=$tmp/tmpfs/userns=$tmp/config-11t.json"
)
if [ -x "$UPSTREAM" ]; then
	variants+=(
		"upstream-runc=$UPSTREAM=$tmp/plain"
		"upstream-runc+userns+10idmapped-binds(pre-chowned)=$UPSTREAM=$tmp/chowned-idmap-binds"
		"runc-userns(upstream,native-idmap)=$W=$tmp/userns=$tmp/config-up.json"
	)
fi

{
	echo "# runc-userns benchmark, $at"
	echo
	echo "Machine: $(nproc) cores, $(uname -r), $(/usr/sbin/runc --version | sed -n 1p)$( [ -x "$UPSTREAM" ] && echo ", upstream $("$UPSTREAM" --version | sed -n 1p)")."
	echo "Load while measuring: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)."
	echo "Medians of $LN interleaved rounds after 5 warm-up rounds; ratios against the first row, measured in the same run;"
	echo "\"paired Δ\": the median, over the rounds, of a variant's time minus plain runc's in the same round, with its 95% confidence interval."
	echo "\`execwrap\` is a Go program that only execs runc (bench/execwrap): what any Go wrapper pays to start."
	echo "Targets (bench/README.md): the pooled lifecycle on tmpfs at most 1.25x plain runc; an unannotated create and each"
	echo "pass-through verb at most +2 ms; rootfs preparation flat and >= 100x faster than chown -R at 60k entries;"
	echo "the pool >= 500 ops/s with 64 processes; a pooled pod through containerd within 5% of a plain one."
	echo
	echo "## 1. Lifecycle: create + start + wait + delete of a busybox \`true\`"
	echo
	"$tmp/lifecycle" -n "$LN" -root "$tmp/root" -raw "$raw" -ref execwrap "${variants[@]}"
	echo
	echo "## 2. Unannotated create and pass-through commands"
	echo
	echo "\`create\` of one plain bundle without annotation (config.json and stateDir on the tmpfs) by runc,"
	echo "execwrap and runc-userns, from lifecycles run in turn ($((N * 2)) rounds): what the wrapper adds to a"
	echo "create it leaves to runc."
	echo
	"$tmp/lifecycle" -n "$((N * 2))" -root "$tmp/root" -raw "$raw" -step create \
		"create:runc=/usr/sbin/runc=$tmp/tmpfs/plain" \
		"create:execwrap=$tmp/execwrap=$tmp/tmpfs/plain" \
		"create:runc-userns=$W=$tmp/tmpfs/plain=$tmp/config-11t.json"
	echo
} >"$report"

poolbench() { # one allocate+release (100 rounds, 3 times), then contention (3 times)
	{
		go test -run '^$' -bench 'BenchmarkAllocateRelease' -benchtime 100x -count 3 ./pool/
		go test -run '^$' -bench 'BenchmarkContention' -benchtime 1x -count 3 ./pool/
	} 2>&1 | "$tmp/lifecycle" -mode gobench
}

# A running container for state and kill.
mkdir -p "$tmp/pt" && cp -a "$tmp/rootfs" "$tmp/pt/rootfs"
jq '.process.args = ["sleep", "infinity"]' "$tmp/plain/config.json" >"$tmp/pt/config.json"
/usr/sbin/runc --root "$tmp/root" run -d --bundle "$tmp/pt" bench-pt </dev/null >/dev/null 2>&1
export RUNC_USERNS_CONFIG=$tmp/config-11.json
for cmd in "state bench-pt" "kill bench-pt CONT" "features"; do
	root=(--root "$tmp/root")
	[ "$cmd" = features ] && root=()
	{
		echo "\`$cmd\`:"
		echo
		"$tmp/lifecycle" -mode cmd -n "$((N * 5))" -raw "$raw" \
			"runc=/usr/sbin/runc ${root[*]} $cmd" "execwrap=$tmp/execwrap ${root[*]} $cmd" \
			"runc-userns=$W ${root[*]} $cmd"
		echo
	} >>"$report"
done
{
	echo "\`start\` (from the lifecycle rounds above):"
	echo
	echo "| variant | median ms | min ms | max ms | vs runc | n |"
	echo "|---|---:|---:|---:|---:|---:|"
	jq -rs '[.[] | select(.steps.start != null and (.variant | contains(":") | not))] | group_by(.variant)
		| (map(select(.[0].variant == "runc"))[0] | map(.steps.start) | sort | .[length/2|floor]) as $base
		| .[] | (map(.steps.start) | sort) as $s | ($s[length/2|floor]) as $m
		| (($m - $base) * 100 | round / 100) as $d
		| "| \(.[0].variant) | \($m) | \($s[0]) | \($s[-1]) | \($m / $base * 100 | round / 100)x (\(if $d >= 0 then "+" else "" end)\($d) ms) | \($s | length) |"' "$raw"
	echo
	echo "These compare different containers: runc's own start differs with the spec. What the wrapper"
	echo "adds to \`start\` is below, on one kind of container."
	echo
	echo "\`start\` of a pooled container (tmpfs row's spec), created and deleted by runc-userns, started by"
	echo "each variant in turn ($((N * 2)) rounds):"
	echo
} >>"$report"
"$tmp/lifecycle" -n "$((N * 2))" -root "$tmp/root" -raw "$raw" -step start \
	"start:runc=$W=$tmp/tmpfs/userns=$tmp/config-11t.json=/usr/sbin/runc" \
	"start:execwrap=$W=$tmp/tmpfs/userns=$tmp/config-11t.json=$tmp/execwrap" \
	"start:runc-userns=$W=$tmp/tmpfs/userns=$tmp/config-11t.json=$W" >>"$report"
{
	echo
	echo "## 3. Rootfs preparation vs size (idmapped clone incl. user namespace fd, vs chown of every entry)"
	echo
	go test -run '^$' -bench 'BenchmarkRootfsPrep' -benchtime 10x -count 3 ./idmap/ 2>&1 | "$tmp/lifecycle" -mode gobench -pair idmap=chown
	echo
	echo "## 4. Pool: one allocate + release; 8 and 64 contending processes"
	echo
	echo "Pool state on disk ($(stat -f -c %T "$tmp")):"
	echo
	poolbench
	echo
	echo "Pool state on tmpfs (a node's /run):"
	echo
	TMPDIR=$tmp/tmpfs poolbench
	echo
	echo "## 5. Pure parts and the user namespace fd (go test -bench)"
	echo
	go test -run '^$' -bench 'BenchmarkParse|BenchmarkLoad|BenchmarkBitmap|BenchmarkNewUserns' -benchtime 200x -count 3 \
		./internal/oci/ ./pool/ ./libuserns/ 2>&1 | "$tmp/lifecycle" -mode gobench
} >>"$report"
# Last, so that a containerd that does not come up costs no other section:
# a failed run puts the end of its output in the report instead of a table.
{
	echo
	echo "## 6. Pod start under containerd (CRI)"
	echo
} >>"$report"
# cri PASS FILTER ENV...: the cases of bench/cri.bats that match FILTER,
# under the containerd that ENV puts on PATH.
cri() {
	local pass=$1 filter=$2
	shift 2
	echo "### $pass" >>"$report"
	echo >>"$report"
	if env "$@" BENCH_N=$N BENCH_LIFECYCLE="$tmp/lifecycle" BENCH_CRI_OUT="$tmp/cri.md" REAL_RUNC=/usr/sbin/runc bats -f "$filter" bench/cri.bats >"$tmp/cri.log" 2>&1; then
		cat "$tmp/cri.md" >>"$report"
	else
		{
			echo "Not measured: \`bats bench/cri.bats\` failed. The end of its output:"
			echo
			echo '```'
			tail -n 30 "$tmp/cri.log"
			echo '```'
		} >>"$report"
	fi
	echo >>"$report"
}
# Debian's containerd 1.6 (pod start, teardown and density), then
# containerd 2 (pod start and teardown) when make deps-containerd built it.
cri "containerd $(containerd --version | awk '{print $3}')" .
if [ -x "${BENCH_CONTAINERD2:-}/containerd" ]; then
	v2=$("$BENCH_CONTAINERD2/containerd" --version | awk '{print $3}')
	cri "containerd $v2" "^pod start" PATH="$BENCH_CONTAINERD2:$PATH" CONTAINERD_VERSION="$v2"
fi

# 7: the kubelet's own pod-start figure on a one-node Kubernetes cluster,
# the node runc-userns is for and the native one (bench/k8s.sh). Last, as
# 6: two clusters come and go.
k8s_status=0
[ "${BENCH_K8S_N:-20}" = 0 ] || ./bench/k8s.sh "$report" "$tmp/lifecycle" || k8s_status=$?
cat "$report"
echo "bench: report in $report, raw measurements in $raw"
# Reported, then failed: a section 7 that left the host changed.
exit "$k8s_status"
