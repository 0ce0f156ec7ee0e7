# A private containerd for a bats file, as the runc.v2 shim's BinaryName
# runs runc-userns: setup_file starts it with its own config, root, state,
# socket and CNI config in a temp dir $D (contrib's drop-in as the default
# handler runc-userns, a handler `plain` with BinaryName=$REAL_RUNC, a
# 2-slot pool, busybox and pause images imported); teardown_file stops it
# and removes what it and its pods left; teardown_pods, for a file's
# teardown, removes a test's pods and fails on what they left in the pool.
# A file that needs more around them calls start_containerd and
# stop_containerd from its own setup_file and teardown_file, and may define
# cri_config_extra (below). Load after helpers. Users:
# tests/integration/containerd.bats, bench/cri.bats, tests/critest.
#
# The pods' network, CONTAINERD_NETWORK (set before start_containerd):
# - loopback (the default): each pod's own network namespace with its
#   loopback up and nothing else (loopback plus `static` 127.0.0.1/8),
#   containerd in the host's network namespace;
# - bridge: containerd, with its shims and its CNI plugins, in a network
#   namespace of its own (unshare --net, its loopback up), and pods on a
#   bridge there: bridge (CTRD_BRIDGE), host-local IPAM (CTRD_SUBNET, its
#   leases in $D) and portmap (hostPort through iptables). The bridge, the
#   pods' veths, portmap's rules and every port a pod or a hostNetwork pod
#   opens are in that namespace, which the kernel removes with its last
#   process (containerd, the shims, hostNetwork pods): nothing of it is
#   ever on the host's network, and nothing of it stays, even when they
#   are killed with SIGKILL. ctrd_net CMD... runs CMD there (critest),
#   ctrd_netns names it (a registry containerd pulls from). The mount
#   namespace stays the host's: the suite sees containerd's and the
#   wrapper's mounts, and the pods' netns pins are in /run/netns as with
#   loopback.

CRICTL=${CRICTL:-$ROOT_DIR/.cache/crictl-v1.26.1/crictl} # make deps-crictl
CONTAINERD_NETWORK=${CONTAINERD_NETWORK:-loopback}
# The bridge network's: a name and a subnet of the suite's own (they exist
# only in containerd's network namespace, so they collide with nothing).
CTRD_BRIDGE=ctrd-e2e0
CTRD_SUBNET=10.244.88.0/24

setup_file() { start_containerd; }
teardown_file() { stop_containerd; }

start_containerd() {
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
	# No "runc-userns" in $D, the network's or the cgroup parent's name:
	# they reach every spec containerd writes (log directory, mounts,
	# cgroupsPath), as a node's do not.
	D=$(mktemp -d /tmp/ctrd-e2e.XXXXXX)
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
	export CNI_NET=ctrd-e2e-$(basename "$D" | tr -dc 'a-zA-Z0-9')
	# A cgroup parent of the suite's own for pods and ctr's containers:
	# containerd's defaults (/k8s.io/ID, /NAMESPACE/ID) would leave
	# /k8s.io and /test behind in every hierarchy.
	export CG_PARENT=/$CNI_NET
	mkdir -p "$D/cni" "$D/logs" "$D/vol"
	# What a node keeps under /run, a tmpfs, gets a tmpfs here too (this
	# host's /run is on disk): containerd's state (bundles, config.json),
	# each handler's runc root and the wrapper's stateDir. Its root (images,
	# snapshots, /etc/hosts and friends) stays on disk, as under /var/lib.
	local t
	for t in state state-ctrd runc runc-plain; do
		mkdir "$D/$t"
		mount -t tmpfs -o mode=0711 tmpfs "$D/$t"
	done
	# The wrapper's operator config: REAL_RUNC, a 2-slot test pool.
	export RUNC_USERNS_CONFIG=$D/runc-userns.json
	jq -n --arg runtime "$REAL_RUNC" --arg state "$D/state" --argjson base "$POOL_BASE" \
		'{runtime: $runtime, stateDir: $state, userns: {ranges: [{hostID: $base, size: 131072}]}}' >"$RUNC_USERNS_CONFIG"
	case $CONTAINERD_NETWORK in
	loopback)
		# loopback plus a `static` entry: containerd 1.6 wants an IP in the
		# result ("failed to find network info for sandbox").
		jq -n --arg name "$CNI_NET" '{cniVersion: "1.0.0", name: $name, plugins: [{type: "loopback"},
			{type: "static", ipam: {type: "static", addresses: [{address: "127.0.0.1/8"}]}}]}' >"$D/cni/10-test.conflist"
		;;
	bridge)
		# No default route and no masquerade: the pods reach the bridge's
		# namespace and each other, nothing beyond. portmap's snat (its
		# default) lets a hostPort answer on that namespace's 127.0.0.1.
		jq -n --arg name "$CNI_NET" --arg br "$CTRD_BRIDGE" --arg subnet "$CTRD_SUBNET" --arg ipam "$D/cni-ipam" \
			'{cniVersion: "1.0.0", name: $name, plugins: [
			{type: "bridge", bridge: $br, isGateway: true, ipMasq: false,
			 ipam: {type: "host-local", ranges: [[{subnet: $subnet}]], dataDir: $ipam}},
			{type: "portmap", capabilities: {portMappings: true}}]}' >"$D/cni/10-test.conflist"
		;;
	*) fail "CONTAINERD_NETWORK=$CONTAINERD_NETWORK: want loopback or bridge" ;;
	esac
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
	# A file's own CRI settings, in the same file: cri_config_extra
	# CONFIG-VERSION prints them (tests/critest: registry hosts).
	if declare -F cri_config_extra >/dev/null; then
		cri_config_extra $cfgv >>"$D/cri.toml"
	fi
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
	if [ "$CONTAINERD_NETWORK" = bridge ]; then
		# unshare and sh exec: the pid is containerd's.
		unshare --net -- sh -c 'ip link set lo up && exec "$@"' sh \
			containerd --config "$D/config.toml" >"$D/containerd.log" 2>&1 &
	else
		containerd --config "$D/config.toml" >"$D/containerd.log" 2>&1 &
	fi
	echo $! >"$D/containerd.pid"
	local i
	for i in $(seq 100); do
		[ -S "$D/containerd.sock" ] && crictl info >/dev/null 2>&1 && break
		sleep 0.1
	done
	crictl info >/dev/null || fail "containerd did not come up: $(tail -20 "$D/containerd.log")"
	if [ "$CONTAINERD_NETWORK" = bridge ]; then
		# What the pods' network relies on: containerd is not in the
		# host's network namespace.
		[ "$(readlink "/proc/$(cat "$D/containerd.pid")/ns/net")" != "$(readlink /proc/self/ns/net)" ] ||
			fail "containerd ($(cat "$D/containerd.pid")) runs in the host's network namespace, not one of its own"
	fi
	"$ROOT_DIR/hack/mkimage.sh" "$D/busybox.tar" localhost/busybox:test sh
	"$ROOT_DIR/hack/mkimage.sh" "$D/pause.tar" localhost/pause:test sleep infinity
	ctr -n k8s.io images import "$D/busybox.tar" >/dev/null
	ctr -n k8s.io images import "$D/pause.tar" >/dev/null
	ctr -n test images import "$D/busybox.tar" >/dev/null
}

stop_containerd() {
	[ -n "${D:-}" ] || return 0
	local p pid
	# Pods and containers first, through containerd, so the shims exit.
	remove_pods
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

# remove_pods: every pod (CRI) and every container of ctr's namespace
# test, through containerd; never fails.
remove_pods() {
	local p
	[ -S "$D/containerd.sock" ] || return 0
	for p in $(crictl pods -q 2>/dev/null); do
		crictl stopp "$p" >/dev/null 2>&1 || true
		crictl rmp -f "$p" >/dev/null 2>&1 || true
	done
	for p in $(ctr -n test tasks ls -q 2>/dev/null); do ctr -n test tasks kill -s KILL "$p" >/dev/null 2>&1 || true; done
	for p in $(ctr -n test containers ls -q 2>/dev/null); do
		ctr -n test tasks rm -f "$p" >/dev/null 2>&1 || true
		ctr -n test containers rm "$p" >/dev/null 2>&1 || true
	done
}

# teardown_pods: after each test, its pods and containers go (remove_pods);
# then the pool must be empty, and nothing of a container left in the
# wrapper's state dir or mounted from it. What is left fails this test and
# is removed, so that the next test starts from an empty pool (the file
# shares one containerd and a 2-slot pool).
teardown_pods() {
	[ -n "${D:-}" ] || return 0
	local leaks="" owner m
	remove_pods
	[ -z "$(crictl pods -q 2>/dev/null)" ] || leaks+="pods left: $(crictl pods -q | xargs); "
	[ -z "$(ctr -n test containers ls -q 2>/dev/null)" ] || leaks+="ctr containers left: $(ctr -n test containers ls -q | xargs); "
	if [ "$("$WRAPPER" pool ls --json | jq length)" != 0 ]; then
		leaks+="pool not empty: $("$WRAPPER" pool ls --json); "
		for owner in $("$WRAPPER" pool ls --json | jq -r '.[].owner'); do
			"$WRAPPER" pool release --force "$owner" >/dev/null 2>&1 || true
		done
	fi
	m=$(awk -v d="$D/state/containers/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo)
	if [ -n "$m" ]; then
		leaks+="staging mounts left: $m; "
		for m in $(echo "$m" | sort -r); do umount -l "$m" 2>/dev/null || true; done
	fi
	m=$(find "$D/state/containers" "$D/state/pods" -mindepth 1 -maxdepth 2 2>/dev/null | head -5)
	[ -z "$m" ] || leaks+="state dir entries left: $m; "
	[ -z "$leaks" ] || fail "teardown: $leaks"
}

crictl() { command "$CRICTL" -c "$D/crictl.yaml" "$@"; }
ctr() { command ctr --address "$D/containerd.sock" "$@"; }

# ctrd_netns: the path of containerd's network namespace (the host's,
# unless CONTAINERD_NETWORK is bridge), for nsenter --net.
ctrd_netns() {
	local pid
	pid=$(cat "$D/containerd.pid") || return 1
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = containerd ] ||
		fail "containerd (pid $pid) is not running: $(tail -5 "$D/containerd.log")" || return 1
	echo "/proc/$pid/ns/net"
}

# ctrd_net CMD...: CMD in containerd's network namespace, where its pods'
# IPs and host ports are.
ctrd_net() {
	local ns
	ns=$(ctrd_netns) || return 1
	nsenter --net="$ns" -- "$@"
}

# pod_config NAME [ANNOTATIONS-JSON]: a pod sandbox config (own netns).
pod_config() {
	jq -n --arg name "$1" --arg uid "$1-$BATS_TEST_NUMBER" --arg logs "$D/logs" --argjson ann "${2:-{\}}" \
		--arg cg "$CG_PARENT" '{metadata: {name: $name, namespace: "default", uid: $uid, attempt: 0},
		hostname: $name, log_directory: $logs, annotations: $ann, linux: {cgroup_parent: $cg}}' >"$D/$1.pod.json" || return 1
	echo "$D/$1.pod.json"
}

# ctr_config NAME ARGS-JSON [EXTRA-JQ]: a container config of busybox.
ctr_config() {
	jq -n --arg name "$1" --argjson args "$2" --arg vol "$D/vol" \
		'{metadata: {name: $name}, image: {image: "localhost/busybox:test"}, command: $args,
		log_path: ($name + ".log"), linux: {}} | '"${3:-.}" >"$D/$1.ctr.json" || return 1
	echo "$D/$1.ctr.json"
}

# runp NAME [ANNOTATIONS-JSON] [EXTRA-JQ]: run a pod (its config edited by
# EXTRA-JQ), print its ID, note its netns.
runp() {
	local cfg id
	cfg=$(pod_config "$1" "${2:-{\}}") || return
	if [ -n "${3:-}" ]; then
		jq "$3" "$cfg" >"$cfg.new" || return
		mv "$cfg.new" "$cfg" || return
	fi
	id=$(crictl runp "$cfg") || return
	note_pod "$id" || return
	echo "$id"
}

# note_pod ID: note a pod's ID and network namespace for teardown_file,
# which removes what containerd leaves of them.
note_pod() {
	echo "$1" >>"$D/pods.list" || return 1
	crictl inspectp "$1" | jq -r '.info.runtimeSpec.linux.namespaces[] | select(.type == "network") | .path // empty' >>"$D/netns.list"
}

# run_ctr POD-ID POD-NAME NAME ARGS-JSON [EXTRA-JQ]: create and start a
# container in the pod, print its ID.
run_ctr() {
	local id cfg
	cfg=$(ctr_config "$3" "$4" "${5:-.}") || return
	id=$(crictl create "$1" "$cfg" "$D/$2.pod.json") || return
	crictl start "$id" >/dev/null || return
	echo "$id"
}

# rmpod ID: stop and remove a pod.
rmpod() {
	crictl stopp "$1" >/dev/null
	crictl rmp "$1" >/dev/null
}

pool_count() { "$WRAPPER" pool ls --json | jq length; }
