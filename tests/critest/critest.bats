#!/usr/bin/env bats
# critest, the CRI's own conformance suite (cri-tools), through runc-userns
# as the runc.v2 shim's BinaryName, against plain runc in the same run:
# one private containerd (tests/integration/containerd.bash: its `plain`
# handler runs $REAL_RUNC, the default handler runc-userns), critest run
# three times, and the spec names that pass compared.
#
# - plain runc (handler plain) is the reference;
# - mode: annotation passes exactly what plain runc passes (critest's pods
#   ask for nothing: the wrapper only execs runc);
# - mode: always fails what plain runc fails plus exactly the specs
#   README.md lists between its critest-always markers, no more and no
#   fewer.
#
# Nothing is pulled from outside: every image critest names is a stand-in
# built by images.sh and served by registry/ on 127.0.0.1, to which
# containerd's registry hosts point registry.k8s.io and gcr.io.
#
# The pods have a network (containerd.bash's CONTAINERD_NETWORK=bridge):
# containerd runs in a network namespace of its own, where its pods sit on
# a bridge of the suite's own with host-local addresses and portmap's host
# ports, so that critest's port mapping, port-forward and multi-container
# network specs reach a pod by its IP and by a host port. critest and the
# registry run in that namespace too (ctrd_net), so that its 127.0.0.1 is
# theirs: every address and port of the run (pods, host ports, critest's
# own listeners, containerd's stream server, hostNetwork pods) is in it,
# none on the host's network, and all of it goes with containerd.
# Separate from tests/integration, which make runs under three runc and
# containerd combinations: critest runs once per make test (containerd 1.7
# and Debian's runc 1.1.5 by default, make test-critest).

load ../integration/helpers
load ../integration/containerd
CONTAINERD_NETWORK=bridge

CRITEST=${CRITEST:-$ROOT_DIR/.cache/critest-v1.34.0/critest} # make deps-critest
GO=${GO:-go}

# Specs no pass can run here, each for its reason. critest's own
# -ginkgo.skip=benchmark stays.
SKIP=(
	# The upstream manifest's digest: no image built here has it.
	'public image with digest should be pulled and removed'
)

# What plain runc fails here, because a stand-in is not the image critest
# means; the same specs must fail under runc-userns, which the comparisons
# below check.
PLAIN_FAILS=(
	# It masks /bin/ls and wants `sh -c ls` to fail with EACCES; Debian's
	# busybox-static shell runs its ls applet without exec'ing /bin/ls.
	'[k8s.io] Security Context bucket runtime should support MaskedPaths'
)

cri_config_extra() {
	local section='plugins."io.containerd.grpc.v1.cri".registry'
	[ "$1" = 2 ] || section='plugins."io.containerd.cri.v1.images".registry'
	printf '[%s]\n  config_path = "%s"\n' "$section" "$D/certs.d"
}

setup_file() {
	[ -x "$CRITEST" ] || fail "critest missing at $CRITEST: run ./hack/install-critest.sh v1.34.0 .cache/critest-v1.34.0 (make deps-critest)"
	start_containerd
	# critest's temp dirs (volumes, logs, seccomp profiles) in $D, which
	# teardown removes.
	mkdir -m 1777 "$D/tmp"
	# critest's cgroup parent when the runtime has no RuntimeConfig
	# (containerd 1.7): /test.slice, under cgroupfs a directory in each
	# hierarchy, which teardown_file removes if critest made it.
	note_missing "$D/made" /sys/fs/cgroup/*/test.slice /sys/fs/cgroup/test.slice
	# The HostIpc specs make a shared memory segment on the host with
	# ipcmk and leave it: teardown_file removes those made during the run.
	awk 'NR > 1 {print $2}' /proc/sysvipc/shm >"$D/shm.before"
	(cd "$ROOT_DIR" && "$GO" build -o "$D/registry" ./tests/critest/registry)
	"$ROOT_DIR/tests/critest/images.sh" "$D/images" "$GO"
	ctr -n k8s.io images import "$D/images/pause.tar" >/dev/null
	# In containerd's network namespace, on its 127.0.0.1 (nsenter execs:
	# the pid is the registry's).
	local ns
	ns=$(ctrd_netns)
	nsenter --net="$ns" -- "$D/registry" "$D/registry.addr" "$D"/images/*/ </dev/null >/dev/null 2>"$D/registry.log" 3>&- &
	echo $! >"$D/registry.pid"
	for _ in $(seq 100); do
		[ -s "$D/registry.addr" ] && break
		sleep 0.1
	done
	[ -s "$D/registry.addr" ] || fail "registry did not start: $(cat "$D/registry.log")"
	local addr host
	addr=$(cat "$D/registry.addr")
	for host in registry.k8s.io gcr.io; do
		mkdir -p "$D/certs.d/$host"
		cat >"$D/certs.d/$host/hosts.toml" <<-EOT
			server = "https://$host"
			[host."http://$addr"]
			  capabilities = ["pull", "resolve"]
		EOT
	done
}

teardown_file() {
	[ -n "${D:-}" ] || return 0
	# CRITEST_REPORTS=DIR keeps each run's report, output and results.
	if [ -n "${CRITEST_REPORTS:-}" ]; then
		mkdir -p "$CRITEST_REPORTS"
		cp "$D"/*.json "$D"/*.log "$D"/*.results "$CRITEST_REPORTS/" 2>/dev/null || true
	fi
	if [ -f "$D/registry.pid" ]; then
		kill "$(cat "$D/registry.pid")" 2>/dev/null || true
	fi
	remove_pods
	local p
	# critest's HostIpc segments: new since setup_file, root's, ipcmk's
	# 1 MiB, attached nowhere.
	for p in $(awk 'NR > 1 && $4 == 1048576 && $7 == 0 && $10 == 0 {print $2}' /proc/sysvipc/shm); do
		grep -qx "$p" "$D/shm.before" 2>/dev/null || ipcrm -m "$p" 2>/dev/null || true
	done
	for p in $(cat "$D/made" 2>/dev/null); do
		case $p in /sys/fs/cgroup/*)
			if [ -d "$p" ]; then find "$p" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
			;;
		esac
	done
	stop_containerd
}

teardown() {
	teardown_pods
}

# run_critest NAME [HANDLER]: critest against the file's containerd, its
# JSON report in $D/NAME.json, its output in $D/NAME.log, and one line per
# spec that ran, "passed<TAB>name" or "failed<TAB>name" (failed, panicked,
# timed out, interrupted...), sorted, in $D/NAME.results. Its exit status
# is not checked: the tests compare sets.
run_critest() {
	local name=$1 handler=${2:-} s skip=() start
	for s in "${SKIP[@]}"; do skip+=(-ginkgo.skip "$s"); done
	start=$(date +%s)
	TMPDIR=$D/tmp ctrd_net "$CRITEST" -config "$D/crictl.yaml" \
		-runtime-endpoint "unix://$D/containerd.sock" -image-endpoint "unix://$D/containerd.sock" \
		-runtime-handler "$handler" "${skip[@]}" -ginkgo.no-color \
		-ginkgo.json-report "$D/$name.json" >"$D/$name.log" 2>&1 || true
	echo "critest $name: $(($(date +%s) - start)) s" >&3
	[ -s "$D/$name.json" ] || fail "critest $name wrote no report: $(tail -30 "$D/$name.log")"
	jq -r '.[].SpecReports[] | select(.LeafNodeType == "It" and .State != "skipped" and .State != "pending")
		| "\(if .State == "passed" then "passed" else "failed" end)\t\(.ContainerHierarchyTexts + [.LeafNodeText] | join(" "))"' \
		"$D/$name.json" | sort >"$D/$name.results"
	echo "critest $name: $(grep -c '^passed' "$D/$name.results") passed, $(grep -c '^failed' "$D/$name.results") failed" >&3
}

# failed NAME: the specs that failed in that run.
failed() { awk -F'\t' '$1 == "failed" {print $2}' "$D/$1.results"; }

# by_design: the README's list of the specs that fail under mode: always
# by design, one name a line (the backquoted name that starts each item).
by_design() {
	awk '/^<!-- critest-always-begin -->/ {on = 1; next} /^<!-- critest-always-end -->/ {on = 0}
		on && /^- `/ {sub(/^- `/, ""); sub(/`.*/, ""); print}' "$ROOT_DIR/README.md" | sort
}

# set_mode MODE: the wrapper's config with userns.mode MODE and a pool of
# 16 ranges (critest runs one pod at a time, and a spec's pod may outlive
# it until its AfterEach).
set_mode() {
	jq --arg mode "$1" '.userns.mode = $mode | .userns.ranges[0].size = 16 * 65536' \
		"$RUNC_USERNS_CONFIG" >"$RUNC_USERNS_CONFIG.new"
	mv "$RUNC_USERNS_CONFIG.new" "$RUNC_USERNS_CONFIG"
}

@test "critest with plain runc: the reference" {
	run_critest plain plain
	# The pods' bridge is in containerd's network namespace, not the host's.
	ctrd_net ip link show "$CTRD_BRIDGE" >/dev/null || fail "no bridge $CTRD_BRIDGE in containerd's network namespace"
	if ip link show "$CTRD_BRIDGE" >/dev/null 2>&1; then fail "bridge $CTRD_BRIDGE is on the host's network"; fi
	# A run that passed little would make the comparisons below say little.
	[ "$(grep -c '^passed' "$D/plain.results")" -ge 60 ] || fail "plain runc passed only $(grep -c '^passed' "$D/plain.results") specs: $(failed plain)"
	diff -u --label "PLAIN_FAILS" --label "failed with plain runc" <(printf '%s\n' "${PLAIN_FAILS[@]}" | sort) <(failed plain | sort) ||
		fail "plain runc fails other specs than the stand-ins explain (PLAIN_FAILS)"
}

@test "critest under mode: annotation passes exactly what plain runc passes" {
	[ -s "$D/plain.results" ] || fail "no results of the plain run"
	set_mode annotation
	run_critest annotation
	diff -u --label plain --label annotation "$D/plain.results" "$D/annotation.results" ||
		fail "under mode: annotation critest does not pass what plain runc passes (above: - plain, + runc-userns)"
}

@test "critest under mode: always fails only the README's by-design specs" {
	[ -s "$D/plain.results" ] || fail "no results of the plain run"
	set_mode always
	# The mode is in force: a pod that asks for nothing gets a pool range.
	pod=$(runp always-check)
	read -r inside host size <<<"$(awk '{print $1, $2, $3}' "/proc/$(crictl inspectp "$pod" | jq -r .info.pid)/uid_map")"
	[ "$inside:$size" = 0:65536 ] && [ "$host" -ge "$POOL_BASE" ] || fail "mode: always gave the pod no pool range: $inside $host $size"
	rmpod "$pod"
	run_critest always
	by_design >"$D/by-design"
	[ -s "$D/by-design" ] || fail "README.md lists no by-design failures between its critest-always markers"
	# What fails under always and not with plain runc, and the list.
	comm -13 <(failed plain | sort) <(failed always | sort) >"$D/always.extra"
	diff -u --label "README: by design" --label "failed under mode: always, not with plain runc" "$D/by-design" "$D/always.extra" ||
		fail "critest under mode: always: the failures beyond plain runc's are not the README's list (+ fails and is not listed, - is listed and passes)"
	# And nothing that plain runc fails passes, or vanished from the run.
	[ -z "$(comm -23 <(failed plain | sort) <(failed always | sort))" ] ||
		fail "under mode: always these pass and fail with plain runc: $(comm -23 <(failed plain | sort) <(failed always | sort))"
	diff -u --label plain --label always <(cut -f2 "$D/plain.results" | sort) <(cut -f2 "$D/always.results" | sort) ||
		fail "critest ran other specs under mode: always than with plain runc"
}
