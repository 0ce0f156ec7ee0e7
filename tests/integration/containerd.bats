#!/usr/bin/env bats
# runc-userns under a real containerd (Debian's 1.6) as the runc.v2 shim's
# BinaryName: ctr and CRI (crictl). One private containerd for the file:
# its own config, root, state, socket and CNI config in a temp dir, started
# in setup_file and stopped and cleaned in teardown_file.

load helpers

CRICTL=${CRICTL:-$ROOT_DIR/.cache/crictl-v1.26.1/crictl} # make deps-crictl

setup_file() {
	[ -x "$CRICTL" ] || fail "crictl missing at $CRICTL: run ./hack/install-crictl.sh v1.26.1 .cache/crictl-v1.26.1 (make deps-crictl)"
	command -v containerd >/dev/null || fail "containerd missing: run ./hack/install-deps.sh"
	export D
	D=$(mktemp -d /tmp/runc-userns-ctrd.XXXXXX)
	chmod 0711 "$D"
	export CNI_NET=runc-userns-test-$(basename "$D" | tr -dc 'a-zA-Z0-9')
	mkdir -p "$D/cni" "$D/logs" "$D/vol"
	# The wrapper's operator config: REAL_RUNC, a 2-slot test pool.
	export RUNC_USERNS_CONFIG=$D/runc-userns.json
	jq -n --arg runtime "$REAL_RUNC" --arg state "$D/state" --argjson base "$POOL_BASE" \
		'{runtime: $runtime, stateDir: $state, userns: {ranges: [{hostID: $base, size: 131072}]}}' >"$RUNC_USERNS_CONFIG"
	# loopback plus a `static` entry: containerd 1.6 wants an IP in the
	# result ("failed to find network info for sandbox").
	jq -n --arg name "$CNI_NET" '{cniVersion: "1.0.0", name: $name, plugins: [{type: "loopback"},
		{type: "static", addresses: [{address: "127.0.0.1/8"}]}]}' >"$D/cni/10-test.conflist"
	# contrib's drop-in, loaded as it ships, with this build's binary and
	# a runc root of the test's.
	sed -e "s|BinaryName = \"/usr/local/bin/runc-userns\"|BinaryName = \"$WRAPPER\"\n    Root = \"$D/runc\"|" \
		"$ROOT_DIR/contrib/containerd/runc-userns.v2.toml" >"$D/cri.toml"
	grep -q "BinaryName = \"$WRAPPER\"" "$D/cri.toml" || fail "contrib snippet: BinaryName not found"
	# containerd merges imports per plugin section: the CRI settings of the
	# test go into the same file as the drop-in.
	cat >>"$D/cri.toml" <<-EOT
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "localhost/pause:test"
		  restrict_oom_score_adj = true
		  disable_apparmor = true
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    default_runtime_name = "runc-userns"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.plain]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.plain.options]
		        BinaryName = "$REAL_RUNC"
		        Root = "$D/runc-plain"
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$D/cni"
	EOT
	cat >"$D/config.toml" <<-EOT
		version = 2
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
	for p in $(awk -v d="$D/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$p" 2>/dev/null || true
	done
	rm -rf "$D"
}

crictl() { command "$CRICTL" -c "$D/crictl.yaml" "$@"; }
ctr() { command ctr --address "$D/containerd.sock" "$@"; }

# pod_config NAME [ANNOTATIONS-JSON]: a pod sandbox config (own netns).
pod_config() {
	jq -n --arg name "$1" --arg uid "$1-$BATS_TEST_NUMBER" --arg logs "$D/logs" --argjson ann "${2:-{\}}" \
		'{metadata: {name: $name, namespace: "default", uid: $uid, attempt: 0},
		hostname: $name, log_directory: $logs, annotations: $ann, linux: {}}' >"$D/$1.pod.json"
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
	cfg=$(pod_config "$@")
	id=$(crictl runp "$cfg")
	crictl inspectp "$id" | jq -r '.info.runtimeSpec.linux.namespaces[] | select(.type == "network") | .path // empty' >>"$D/netns.list"
	echo "$id"
}

# run_ctr POD NAME ARGS-JSON [EXTRA-JQ]: create and start a container.
run_ctr() {
	local pod=$1 name=$2 id
	id=$(crictl create "$pod" "$(ctr_config "$name" "$3" "${4:-.}")" "$D/$name.pod.json" 2>/dev/null ||
		crictl create "$pod" "$D/$name.ctr.json" "$(ls "$D"/*.pod.json | head -1)")
	crictl start "$id" >/dev/null
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

@test "containerd loaded contrib's runc-userns handler with BinaryName and pod_annotations" {
	run -0 crictl info
	echo "$output" | jq -e --arg w "$WRAPPER" '.config.containerd.runtimes["runc-userns"]
		| .runtimeType == "io.containerd.runc.v2" and .options.BinaryName == $w and .PodAnnotations == ["runc-userns.io/*"]'
}

@test "ctr run --runc-binary: output, exit status, exec, kill, delete" {
	ctr -n test run --rm --runc-binary "$WRAPPER" localhost/busybox:test once sh -c 'echo hello; exit 7' >"$D/once.out" || rc=$?
	[ "${rc:-0}" = 7 ]
	[ "$(cat "$D/once.out")" = hello ]
	ctr -n test run -d --runc-binary "$WRAPPER" localhost/busybox:test long sleep 3600
	[ "$(ctr -n test tasks exec --exec-id e1 long sh -c 'echo in; id -u')" = "$(printf 'in\n0')" ]
	ctr -n test tasks kill -s KILL long
	for _ in $(seq 50); do ctr -n test tasks ls | grep -q 'long.*STOPPED' && break; sleep 0.1; done
	ctr -n test tasks rm long
	ctr -n test containers rm long
	[ -z "$(ctr -n test containers ls -q)" ]
}
