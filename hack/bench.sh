#!/usr/bin/env bash
# make bench: measures runc-userns against plain runc in the same run and
# writes bench/results/<time>.md (tables) and .jsonl (every measurement).
# Performance is reported, never asserted: this never fails on a slow
# machine. BENCH_N rounds (default 40), interleaved, after 5 warm-up rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_N:-40}
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
./hack/mkrootfs.sh "$tmp/rootfs" >/dev/null
mkbundle() { # NAME JQ
	mkdir -p "$tmp/$1"
	cp -a "$tmp/rootfs" "$tmp/$1/rootfs"
	(cd "$tmp/$1" && /usr/sbin/runc spec)
	jq ".process.terminal = false | .root.readonly = false | .process.args = [\"true\"] | $2" \
		"$tmp/$1/config.json" >"$tmp/$1/c" && mv "$tmp/$1/c" "$tmp/$1/config.json"
}
mkbundle plain '.'
# The best runc 1.1 can do alone: a user namespace over a rootfs chowned
# to the range beforehand (outside the pool's ranges).
mkbundle chowned '.linux.namespaces += [{"type": "user"}]
	| .linux.uidMappings = [{"containerID": 0, "hostID": 3800000000, "size": 65536}]
	| .linux.gidMappings = [{"containerID": 0, "hostID": 3800000000, "size": 65536}]'
chown -R 3800000000:3800000000 "$tmp/chowned/rootfs"
binds='[]'
for i in $(seq 0 9); do
	mkdir -p "$tmp/vol/$i" && echo "$i" >"$tmp/vol/$i/file"
	binds=$(jq -c --arg s "$tmp/vol/$i" --arg d "/vol$i" '. + [{destination: $d, type: "bind", source: $s, options: ["rbind"]}]' <<<"$binds")
done
mkbundle userns ".annotations[\"runc-userns.io/userns\"] = \"auto\" | .mounts += $binds"
for c in 11:/usr/sbin/runc up:"$UPSTREAM"; do
	jq -n --arg rt "${c#*:}" --arg sd "$tmp/state-${c%%:*}" \
		'{runtime: $rt, stateDir: $sd, userns: {ranges: [{hostID: 3221225472, size: 16777216}]}}' >"$tmp/config-${c%%:*}.json"
done

variants=(
	"runc=/usr/sbin/runc=$tmp/plain"
	"runc+userns(pre-chowned)=/usr/sbin/runc=$tmp/chowned"
	"wrapper(exec-only)=$W=$tmp/plain=$tmp/config-11.json"
	"runc-userns(pool+idmap+10binds)=$W=$tmp/userns=$tmp/config-11.json"
)
if [ -x "$UPSTREAM" ]; then
	variants+=(
		"upstream-runc=$UPSTREAM=$tmp/plain"
		"runc-userns(upstream,native-idmap)=$W=$tmp/userns=$tmp/config-up.json"
	)
fi

{
	echo "# runc-userns benchmark, $at"
	echo
	echo "Machine: $(nproc) cores, $(uname -r), $(/usr/sbin/runc --version | sed -n 1p)$( [ -x "$UPSTREAM" ] && echo ", upstream $("$UPSTREAM" --version | sed -n 1p)")."
	echo "Medians of $N interleaved rounds after 5 warm-up rounds; ratios against the first row, measured in the same run."
	echo
	echo "## 1. Lifecycle: create + start + wait + delete of a busybox \`true\`"
	echo
	"$tmp/lifecycle" -n "$N" -root "$tmp/root" -raw "$raw" "${variants[@]}"
	echo
	echo "## 2. Pass-through commands"
	echo
} >"$report"

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
			"runc=/usr/sbin/runc ${root[*]} $cmd" "runc-userns=$W ${root[*]} $cmd"
		echo
	} >>"$report"
done
{
	echo "\`start\` (from the lifecycle rounds above, median ms):"
	echo
	jq -rs '[.[] | select(.steps.start != null)] | group_by(.variant)[]
		| "- \(.[0].variant): \(map(.steps.start) | sort | .[length/2|floor])"' "$raw"
	echo
	echo "## 3. Rootfs preparation vs size (idmapped clone incl. user namespace fd, vs chown of every entry)"
	echo
	echo '```'
	go test -run '^$' -bench 'BenchmarkRootfsPrep' -benchtime 10x ./idmap/ 2>&1 | grep -E '^Benchmark|^ok|^PASS|skip' || true
	echo '```'
	echo
	echo "## 4 and 5. Pool and pure parts (go test -bench)"
	echo
	echo '```'
	go test -run '^$' -bench . -benchtime 200x ./internal/oci/ ./pool/ 2>&1 | grep -E '^Benchmark|^ok' || true
	echo '```'
} >>"$report"
cat "$report"
echo "bench: report in $report, raw measurements in $raw"
