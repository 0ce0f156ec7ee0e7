#!/usr/bin/env bats
# runc-userns under a real containerd as the runc.v2 shim's BinaryName: ctr
# and CRI (crictl). The containerd, shim and ctr on PATH: Debian's 1.6, and
# in more passes 1.7 and 2 (make integration-containerd puts them first on
# PATH and sets CONTAINERD_VERSION, which the suite checks it runs). One private
# containerd for the file: its own config, root, state, socket and CNI
# config in a temp dir, started in setup_file and stopped and cleaned in
# teardown_file.

load helpers

CRICTL=${CRICTL:-$ROOT_DIR/.cache/crictl-v1.26.1/crictl} # make deps-crictl

setup_file() {
	[ -x "$CRICTL" ] || fail "crictl missing at $CRICTL: run ./hack/install-crictl.sh v1.26.1 .cache/crictl-v1.26.1 (make deps-crictl)"
	command -v containerd >/dev/null || fail "containerd missing: run ./hack/install-deps.sh"
	if [ -n "${CONTAINERD_VERSION:-}" ]; then
		local bin
		for bin in containerd ctr; do
			"$bin" --version | grep -E " v?${CONTAINERD_VERSION#v}( |\$)" >/dev/null ||
				fail "$bin on PATH ($(command -v "$bin")) is $("$bin" --version), not $CONTAINERD_VERSION"
		done
		# The shim containerd starts is found on PATH too.
		[ "$(dirname "$(command -v containerd-shim-runc-v2)")" = "$(dirname "$(command -v containerd)")" ] ||
			fail "containerd-shim-runc-v2 on PATH is $(command -v containerd-shim-runc-v2), not beside $(command -v containerd)"
	fi
	export D
	D=$(mktemp -d /tmp/runc-userns-ctrd.XXXXXX)
	# What containerd makes on the host when missing, removed in teardown
	# as far as it is empty:
	# - /run/containerd: containerd 1.6 puts shim sockets under
	#   /run/containerd/s whatever its state dir;
	# - /run/nri: containerd 2 starts NRI by default, with its socket there
	#   (the config below moves it into $D, and test 1 checks it did);
	# - /run/netns (/var/run/netns): the pods' network namespaces;
	# - /var/lib/cni: libcni's cache of each pod's result.
	note_missing "$D/made" /run/containerd /run/nri /run/netns /var/lib/cni
	chmod 0711 "$D"
	export CNI_NET=runc-userns-test-$(basename "$D" | tr -dc 'a-zA-Z0-9')
	# A cgroup parent of the suite's own for pods and ctr's containers:
	# containerd's defaults (/k8s.io/ID, /NAMESPACE/ID) would leave
	# /k8s.io and /test behind in every hierarchy.
	export CG_PARENT=/$CNI_NET
	mkdir -p "$D/cni" "$D/logs" "$D/vol"
	# The wrapper's operator config: REAL_RUNC, a 2-slot test pool.
	export RUNC_USERNS_CONFIG=$D/runc-userns.json
	jq -n --arg runtime "$REAL_RUNC" --arg state "$D/state" --argjson base "$POOL_BASE" \
		'{runtime: $runtime, stateDir: $state, userns: {ranges: [{hostID: $base, size: 131072}]}}' >"$RUNC_USERNS_CONFIG"
	# loopback plus a `static` entry: containerd 1.6 wants an IP in the
	# result ("failed to find network info for sandbox").
	jq -n --arg name "$CNI_NET" '{cniVersion: "1.0.0", name: $name, plugins: [{type: "loopback"},
		{type: "static", ipam: {type: "static", addresses: [{address: "127.0.0.1/8"}]}}]}' >"$D/cni/10-test.conflist"
	# contrib's drop-in, loaded as it ships (config version 2 for 1.x,
	# version 3 for containerd 2), with this build's binary and a runc
	# root of the test's.
	local cfgv=2 cri=io.containerd.grpc.v1.cri
	if [[ "$(containerd --version)" == *" v2."* ]]; then
		cfgv=3 cri=io.containerd.cri.v1.runtime
	fi
	sed -e "s|BinaryName = \"/usr/local/bin/runc-userns\"|BinaryName = \"$WRAPPER\"\n    Root = \"$D/runc\"|" \
		"$ROOT_DIR/contrib/containerd/runc-userns.v$cfgv.toml" >"$D/cri.toml"
	grep -q "BinaryName = \"$WRAPPER\"" "$D/cri.toml" || fail "contrib snippet: BinaryName not found"
	# containerd merges imports per plugin section: the CRI settings of the
	# test go into the same file as the drop-in.
	if [ $cfgv = 2 ]; then
		cat >>"$D/cri.toml" <<-EOT
			[plugins."$cri"]
			  sandbox_image = "localhost/pause:test"
		EOT
	else
		cat >>"$D/cri.toml" <<-EOT
			[plugins."io.containerd.cri.v1.images".pinned_images]
			  sandbox = "localhost/pause:test"
			[plugins."$cri"]
		EOT
	fi
	cat >>"$D/cri.toml" <<-EOT
		  restrict_oom_score_adj = true
		  disable_apparmor = true
		  [plugins."$cri".containerd]
		    default_runtime_name = "runc-userns"
		    [plugins."$cri".containerd.runtimes.plain]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."$cri".containerd.runtimes.plain.options]
		        BinaryName = "$REAL_RUNC"
		        Root = "$D/runc-plain"
		  [plugins."$cri".cni]
		    bin_dir$([ $cfgv = 2 ] && echo ' = "/usr/lib/cni"' || echo 's = ["/usr/lib/cni"]')
		    conf_dir = "$D/cni"
	EOT
	cat >"$D/config.toml" <<-EOT
		version = $cfgv
		root = "$D/root"
		state = "$D/state-ctrd"
		imports = ["$D/cri.toml"]
		[grpc]
		  address = "$D/containerd.sock"
		[ttrpc]
		  address = "$D/containerd.sock.ttrpc"
		[debug]
		  address = "$D/debug.sock"
		[plugins."io.containerd.internal.v1.opt"]
		  path = "$D/opt"
		[plugins."io.containerd.nri.v1.nri"]
		  socket_path = "$D/nri/nri.sock"
		  plugin_path = "$D/nri/plugins"
		  plugin_config_path = "$D/nri/conf.d"
	EOT
	cat >"$D/crictl.yaml" <<-EOT
		runtime-endpoint: unix://$D/containerd.sock
		image-endpoint: unix://$D/containerd.sock
		timeout: 30
	EOT
	containerd --config "$D/config.toml" >"$D/containerd.log" 2>&1 &
	echo $! >"$D/containerd.pid"
	local i
	for i in $(seq 100); do
		[ -S "$D/containerd.sock" ] && crictl info >/dev/null 2>&1 && break
		sleep 0.1
	done
	crictl info >/dev/null || fail "containerd did not come up: $(tail -20 "$D/containerd.log")"
	"$ROOT_DIR/hack/mkimage.sh" "$D/busybox.tar" localhost/busybox:test sh
	"$ROOT_DIR/hack/mkimage.sh" "$D/pause.tar" localhost/pause:test sleep infinity
	ctr -n k8s.io images import "$D/busybox.tar" >/dev/null
	ctr -n k8s.io images import "$D/pause.tar" >/dev/null
	ctr -n test images import "$D/busybox.tar" >/dev/null
}

teardown_file() {
	[ -n "${D:-}" ] || return 0
	local p pid
	# Pods and containers first, through containerd, so the shims exit.
	if [ -S "$D/containerd.sock" ]; then
		for p in $(crictl pods -q 2>/dev/null); do
			crictl stopp "$p" >/dev/null 2>&1 || true
			crictl rmp -f "$p" >/dev/null 2>&1 || true
		done
		for p in $(ctr -n test tasks ls -q 2>/dev/null); do ctr -n test tasks kill -s KILL "$p" >/dev/null 2>&1 || true; done
		for p in $(ctr -n test containers ls -q 2>/dev/null); do
			ctr -n test tasks rm -f "$p" >/dev/null 2>&1 || true
			ctr -n test containers rm "$p" >/dev/null 2>&1 || true
		done
	fi
	if [ -f "$D/containerd.pid" ]; then
		pid=$(cat "$D/containerd.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	# Shims of this containerd that outlived it (they name its socket).
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $D/containerd.sock" || true); do
		kill -9 "$pid" 2>/dev/null || true
	done
	# Netns of our pods still pinned, libcni's cached results, mounts.
	for p in $(cat "$D/netns.list" 2>/dev/null); do
		if [ -e "$p" ]; then umount "$p" 2>/dev/null || true; rm -f "$p"; fi
	done
	rm -f /var/lib/cni/results/"$CNI_NET"-*
	for p in $(cat "$D/pods.list" 2>/dev/null); do
		rm -f /var/lib/cni/results/cni-loopback-"$p"-lo
	done
	# The suite's cgroups, leaves first: a cgroup still holding a task
	# stays (rmdir fails with EBUSY) and shows up in the host checks.
	for p in /sys/fs/cgroup/*/"${CG_PARENT#/}" /sys/fs/cgroup/"${CG_PARENT#/}"; do
		if [ -d "$p" ]; then find "$p" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
	done
	for p in $(awk -v d="$D/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$p" 2>/dev/null || true
	done
	remove_noted "$D/made"
	rm -rf "$D"
}

crictl() { command "$CRICTL" -c "$D/crictl.yaml" "$@"; }
ctr() { command ctr --address "$D/containerd.sock" "$@"; }

# pod_config NAME [ANNOTATIONS-JSON]: a pod sandbox config (own netns).
pod_config() {
	jq -n --arg name "$1" --arg uid "$1-$BATS_TEST_NUMBER" --arg logs "$D/logs" --argjson ann "${2:-{\}}" \
		--arg cg "$CG_PARENT" '{metadata: {name: $name, namespace: "default", uid: $uid, attempt: 0},
		hostname: $name, log_directory: $logs, annotations: $ann, linux: {cgroup_parent: $cg}}' >"$D/$1.pod.json"
	echo "$D/$1.pod.json"
}

# ctr_config NAME ARGS-JSON [EXTRA-JQ]: a container config of busybox.
ctr_config() {
	jq -n --arg name "$1" --argjson args "$2" --arg vol "$D/vol" \
		'{metadata: {name: $name}, image: {image: "localhost/busybox:test"}, command: $args,
		log_path: ($name + ".log"), linux: {}} | '"${3:-.}" >"$D/$1.ctr.json"
	echo "$D/$1.ctr.json"
}

# runp NAME [ANNOTATIONS-JSON]: run a pod, print its ID, note its netns.
runp() {
	local cfg id
	cfg=$(pod_config "$@") || return
	id=$(crictl runp "$cfg") || return
	echo "$id" >>"$D/pods.list"
	crictl inspectp "$id" | jq -r '.info.runtimeSpec.linux.namespaces[] | select(.type == "network") | .path // empty' >>"$D/netns.list"
	echo "$id"
}

# run_ctr POD-ID POD-NAME NAME ARGS-JSON [EXTRA-JQ]: create and start a
# container in the pod, print its ID.
run_ctr() {
	local id
	id=$(crictl create "$1" "$(ctr_config "$3" "$4" "${5:-.}")" "$D/$2.pod.json") || return
	crictl start "$id" >/dev/null || return
	echo "$id"
}

# rmpod ID: stop and remove a pod.
rmpod() {
	crictl stopp "$1" >/dev/null
	crictl rmp "$1" >/dev/null
}

# uidmap CID: the container's /proc/self/uid_map, one line, spaces squeezed.
uidmap() { crictl exec "$1" cat /proc/self/uid_map | awk '{print $1, $2, $3}'; }

pool_count() { "$WRAPPER" pool ls --json | jq length; }

# in_cgroup PID PATH: the process is in cgroup PATH, in the v1 memory
# hierarchy or in v2's.
in_cgroup() { grep -Eqx "[0-9]+:(memory)?:$2" "/proc/$1/cgroup"; }

@test "containerd loaded contrib's runc-userns handler with BinaryName and pod_annotations" {
	if noted "$D/made" /run/nri && [ -e /run/nri ]; then
		fail "containerd made /run/nri on the host: its NRI socket must be in $D"
	fi
	run -0 crictl info
	echo "$output" | jq -e --arg w "$WRAPPER" '.config.containerd.runtimes["runc-userns"]
		| .runtimeType == "io.containerd.runc.v2" and .options.BinaryName == $w and .PodAnnotations == ["runc-userns.io/*"]'
}

@test "ctr run --runc-binary: output, exit status, exec, kill, delete" {
	local opts=(--runc-binary "$WRAPPER" --runc-root "$D/runc-ctr" --fifo-dir "$D/fifo")
	ctr -n test run --rm "${opts[@]}" --cgroup "$CG_PARENT/once" localhost/busybox:test once sh -c 'echo hello; exit 7' >"$D/once.out" || rc=$?
	[ "${rc:-0}" = 7 ]
	[ "$(cat "$D/once.out")" = hello ]
	ctr -n test run -d "${opts[@]}" --cgroup "$CG_PARENT/long" localhost/busybox:test long sleep 3600
	[ -d "$D/runc-ctr/test/long" ]
	in_cgroup "$(ctr -n test tasks ls | awk '$1 == "long" {print $2}')" "$CG_PARENT/long"
	[ "$(ctr -n test tasks exec --fifo-dir "$D/fifo" --exec-id e1 long sh -c 'echo in; id -u')" = "$(printf 'in\n0')" ]
	ctr -n test tasks kill -s KILL long
	for _ in $(seq 50); do ctr -n test tasks ls | grep -q 'long.*STOPPED' && break; sleep 0.1; done
	ctr -n test tasks rm long
	ctr -n test containers rm long
	[ -z "$(ctr -n test containers ls -q)" ]
}

# sandbox_uidmap POD: the pod sandbox's uid_map, read on the host.
sandbox_uidmap() {
	awk '{print $1, $2, $3}' "/proc/$(crictl inspectp "$1" | jq -r .info.pid)/uid_map"
}

# staged_mounts: staging mounts of the wrapper left on the host.
staged_mounts() { awk -v d="$D/state/containers/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo; }

@test "CRI: a pod with runc-userns.io/userns: auto and its own netns; sandbox and apps share a pool range; volume and rootfs owners" {
	pod=$(runp p1 '{"runc-userns.io/userns": "auto"}')
	chown 0:0 "$D/vol"
	chmod 0755 "$D/vol"
	a1=$(run_ctr "$pod" p1 app1 '["sleep", "3600"]' '.mounts = [{container_path: "/vol", host_path: $vol}]')
	a2=$(run_ctr "$pod" p1 app2 '["sleep", "3600"]')
	want=$(sandbox_uidmap "$pod")
	read -r inside host size <<<"$want"
	[ "$inside" = 0 ] && [ "$size" = 65536 ]
	[ "$host" -ge "$POOL_BASE" ] && [ "$host" -lt $((POOL_BASE + 131072)) ]
	[ "$(uidmap "$a1")" = "$want" ]
	[ "$(uidmap "$a2")" = "$want" ]
	[ "$(crictl exec "$a1" id -u):$(crictl exec "$a1" id -g)" = 0:0 ]
	# Its own network namespace, the one containerd made (exec included).
	netns=$(crictl inspectp "$pod" | jq -r '.info.runtimeSpec.linux.namespaces[] | select(.type == "network") | .path')
	[ "$(crictl exec "$a1" readlink /proc/self/ns/net)" = "net:[$(stat -L -c %i "$netns")]" ]
	[ "$(crictl exec "$a2" readlink /proc/self/ns/net)" = "net:[$(stat -L -c %i "$netns")]" ]
	# In the suite's cgroup parent, which teardown_file removes.
	[ "$(crictl inspectp "$pod" | jq -r .info.runtimeSpec.linux.cgroupsPath)" = "$CG_PARENT/$pod" ]
	in_cgroup "$(crictl inspect "$a1" | jq -r .info.pid)" "$CG_PARENT/$a1"
	# runc < 1.3 cannot join it after the pod's user namespace: the wrapper
	# entered it for runc (a record per container); current runc joins it.
	records=$(find "$D/state/containers" -name netns | wc -l)
	if [[ "$("$REAL_RUNC" --version | awk 'NR == 1 {print $3}')" == 1.[012].* ]]; then
		[ "$records" = 3 ]
	else
		[ "$records" = 0 ]
	fi
	# containerd 2 puts net.ipv4.ip_unprivileged_port_start=0 and
	# ping_group_range on every sandbox; the wrapper writes them into the
	# pod's network namespace (its user namespace cannot).
	sysctls=$(crictl inspectp "$pod" | jq -c '.info.runtimeSpec.linux.sysctl // {}')
	if [[ "$(containerd --version)" == *" v2."* ]]; then
		[ "$(jq -r '.["net.ipv4.ip_unprivileged_port_start"]' <<<"$sysctls")" = 0 ] || fail "containerd 2 set no sysctls: $sysctls"
	fi
	if [ "$(jq -r '.["net.ipv4.ip_unprivileged_port_start"]' <<<"$sysctls")" = 0 ]; then
		[ "$(crictl exec "$a1" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" = 0 ]
		[ "$(crictl exec "$a1" cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' ')" = "0 65535" ]
	fi
	# Writes: the rootfs upper dir gets the pod's host IDs, the idmapped
	# host-path volume the container's IDs (root stays root on the host).
	crictl exec "$a1" sh -c 'echo r >/written-by-app1 && echo v >/vol/written-by-app1'
	[ "$(stat -c %u:%g "$D/vol/written-by-app1")" = 0:0 ]
	upper=$(find "$D/root/io.containerd.snapshotter.v1.overlayfs/snapshots" -maxdepth 3 -name written-by-app1)
	[ "$(stat -c %u:%g "$upper")" = "$host:$host" ]
	rm -f "$D/vol/written-by-app1"
	rmpod "$pod"
	[ "$(pool_count)" = 0 ]
	[ -z "$(staged_mounts)" ]
	[ -z "$(find "$D/state/containers" -mindepth 1 2>/dev/null)" ]
}

@test "CRI: a second pod gets a disjoint range; an exhausted pool reaches crictl with our text; stopp/rmp return the range" {
	p1=$(runp q1 '{"runc-userns.io/userns": "auto"}')
	p2=$(runp q2 '{"runc-userns.io/userns": "auto"}')
	r1=$(sandbox_uidmap "$p1" | awk '{print $2}')
	r2=$(sandbox_uidmap "$p2" | awk '{print $2}')
	[ "$r1" != "$r2" ]
	[ $(((r1 > r2 ? r1 - r2 : r2 - r1))) -ge 65536 ]
	[ "$(pool_count)" = 2 ]
	run -1 crictl runp "$(pod_config q3 '{"runc-userns.io/userns": "auto"}')"
	[[ "$output" == *"user namespace pool exhausted: 2 of 2 ranges in use"* ]]
	rmpod "$p1"
	[ "$(pool_count)" = 1 ]
	rmpod "$p2"
	[ "$(pool_count)" = 0 ]
	[ -z "$(staged_mounts)" ]
	[ -z "$(ls "$D/state/pods")" ]
	# Nothing of any container left in the state dir (staging dirs, the
	# network namespace records of runc 1.1).
	[ -z "$(find "$D/state/containers" -mindepth 1 2>/dev/null)" ]
}

@test "CRI: a pod in CRI's own user namespace (kubelet's hostUsers: false) keeps containerd's mappings; nothing from the pool" {
	# Beside the suite's pool (131072 IDs from POOL_BASE).
	local base=$((POOL_BASE + 262144)) userns want host
	userns="{mode: 0, uids: [{host_id: $base, container_id: 0, length: 65536}], gids: [{host_id: $base, container_id: 0, length: 65536}]}"
	cfg=$(pod_config hu)
	jq ".linux.security_context.namespace_options.userns_options = $userns" "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
	pod=$(crictl runp "$cfg")
	a=$(run_ctr "$pod" hu app '["sleep", "3600"]' ".linux.security_context.namespace_options.userns_options = $userns")
	if [[ "$(containerd --version)" == *" 1.6."* ]]; then
		# containerd 1.6 ignores userns_options: the host's user namespace.
		want="0 0 4294967295" host=0
	else
		want="0 $base 65536" host=$base
	fi
	[ "$(sandbox_uidmap "$pod")" = "$want" ]
	[ "$(uidmap "$a")" = "$want" ]
	[ "$(pool_count)" = 0 ]
	# Root in the pod owns the image's files and writes as the pod's root.
	[ "$(crictl exec "$a" stat -c %u:%g /bin)" = 0:0 ]
	crictl exec "$a" sh -c 'echo x >/written-by-hu'
	upper=$(find "$D/root/io.containerd.snapshotter.v1.overlayfs/snapshots" -maxdepth 3 -name written-by-hu)
	[ "$(stat -c %u:%g "$upper")" = "$host:$host" ]
	rmpod "$pod"
	[ -z "$(staged_mounts)" ]
}

@test "CRI: a pod without the annotation runs the spec containerd wrote, untouched" {
	pod=$(runp plainpod)
	c=$(run_ctr "$pod" plainpod app '["sleep", "3600"]')
	bundle=$D/state-ctrd/io.containerd.runtime.v2.task/k8s.io/$c
	cmp <(jq -S . "$bundle/config.json") <(crictl inspect "$c" | jq -S .info.runtimeSpec)
	[ "$(jq -r '.config.labels // {} | keys[]' "$D/runc/k8s.io/$c/state.json" | grep -c runc-userns || true)" = 0 ]
	[ "$(uidmap "$c")" = "0 0 4294967295" ]
	[ "$(pool_count)" = 0 ]
	rmpod "$pod"
}

@test "CRI: a debug container with PID namespace TARGET in a userns pod sees the target's processes" {
	pod=$(runp dbg '{"runc-userns.io/userns": "auto"}')
	target=$(run_ctr "$pod" dbg target '["sleep", "3601"]')
	debug=$(run_ctr "$pod" dbg debug '["sleep", "3600"]' '.linux.security_context.namespace_options = {pid: 3, target_id: "'"$target"'"}')
	run -0 crictl exec "$debug" ps -o pid,args
	[[ "$output" == *"sleep 3601"* ]]
	[[ "$output" == *"sleep 3600"* ]]
	[ "$(uidmap "$debug")" = "$(uidmap "$target")" ]
	rmpod "$pod"
	[ "$(pool_count)" = 0 ]
}
