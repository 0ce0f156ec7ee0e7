#!/usr/bin/env bats
# runc-userns under a real containerd as the runc.v2 shim's BinaryName: ctr
# and CRI (crictl). The containerd, shim and ctr on PATH: Debian's 1.6, and
# in more passes 1.7 and 2 (make integration-containerd puts them first on
# PATH and sets CONTAINERD_VERSION, which the suite checks it runs). One private
# containerd for the file: its own config, root, state, socket and CNI
# config in a temp dir, started in setup_file and stopped and cleaned in
# teardown_file.

load helpers
load containerd

teardown() {
	if [ -e "$RUNC_USERNS_CONFIG.orig" ]; then
		mv -f "$RUNC_USERNS_CONFIG.orig" "$RUNC_USERNS_CONFIG"
	fi
	# A test's own host mounts (SHARED_VOL: a shared volume and what it
	# mounted below it), also when it failed half-way.
	if [ -n "${SHARED_VOL:-}" ]; then
		umount -R -l "$SHARED_VOL" 2>/dev/null || true
	fi
	teardown_pods
}

# uidmap CID: the container's /proc/self/uid_map, one line, spaces squeezed.
uidmap() { crictl exec "$1" cat /proc/self/uid_map | awk '{print $1, $2, $3}'; }

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
	ctr -n test tasks ls | grep -q 'long.*STOPPED' || fail "long did not stop: $(ctr -n test tasks ls)"
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
	[ "$inside" = 0 ]
	[ "$size" = 65536 ]
	[ "$host" -ge "$POOL_BASE" ]
	[ "$host" -lt $((POOL_BASE + 131072)) ]
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
	# ping_group_range on every sandbox, containerd 1.x none; the wrapper
	# writes them into the pod's network namespace (its user namespace
	# cannot), the same values when the spec has none.
	sysctls=$(crictl inspectp "$pod" | jq -c '.info.runtimeSpec.linux.sysctl // {}')
	if [[ "$(containerd --version)" == *" v2."* ]]; then
		[ "$(jq -r '.["net.ipv4.ip_unprivileged_port_start"]' <<<"$sysctls")" = 0 ] || fail "containerd 2 set no sysctls: $sysctls"
	fi
	[ "$(crictl exec "$a1" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" = 0 ]
	[ "$(crictl exec "$a1" cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' ')" = "0 65535" ]
	# Writes: the rootfs upper dir and the idmapped host-path volume get
	# the container's IDs (root stays root on the host), through the
	# idmapped upper dir and volume.
	crictl exec "$a1" sh -c 'echo r >/written-by-app1 && echo v >/vol/written-by-app1'
	[ "$(stat -c %u:%g "$D/vol/written-by-app1")" = 0:0 ]
	upper=$(find "$D/root/io.containerd.snapshotter.v1.overlayfs/snapshots" -maxdepth 3 -name written-by-app1)
	[ "$(stat -c %u:%g "$upper")" = 0:0 ]
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

@test "CRI, mode always: a pod on the host's network, PID or IPC namespace stays in the host's user namespace, its app container too" {
	local cfg pod c ns opt
	# teardown puts the suite's config back.
	cp "$RUNC_USERNS_CONFIG" "$RUNC_USERNS_CONFIG.orig"
	jq '.userns.mode = "always"' "$RUNC_USERNS_CONFIG.orig" >"$RUNC_USERNS_CONFIG"
	for ns in network pid ipc; do
		cfg=$(pod_config "host$ns")
		opt='.linux.security_context.namespace_options.'$ns' = 2'
		# No UTS namespace of its own on the host's network: no hostname.
		[ "$ns" != network ] || opt="del(.hostname) | $opt"
		jq "$opt" "$cfg" >"$cfg.new"
		mv "$cfg.new" "$cfg"
		pod=$(crictl runp "$cfg")
		note_pod "$pod"
		c=$(run_ctr "$pod" "host$ns" app '["sleep", "3600"]')
		[ "$(uidmap "$c")" = "0 0 4294967295" ]
		[ "$(crictl exec "$c" readlink "/proc/self/ns/${ns/network/net}")" = "$(readlink "/proc/self/ns/${ns/network/net}")" ]
		[ "$(pool_count)" = 0 ]
		rmpod "$pod"
	done
}

@test "CRI: a pooled pod's root binds port 80 and may ping (the wrapper's sysctls), a pod's own sysctl wins, auto with a privileged container is refused" {
	local pod c cfg host
	# privileged allowed in the pod, as kubelet marks a pod with a
	# privileged container; its sandbox's spec is the same as any.
	pod=$(runp web '{"runc-userns.io/userns": "auto"}' '.linux.security_context.privileged = true')
	c=$(run_ctr "$pod" web app '["sleep", "3600"]')
	[ "$(uidmap "$c")" = "$(sandbox_uidmap "$pod")" ]
	[ "$(crictl exec "$c" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" = 0 ]
	[ "$(crictl exec "$c" cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' ')" = "0 65535" ]
	crictl exec "$c" sh -c 'mkdir -p /www && echo served >/www/index.html && httpd -p 80 -h /www'
	[ "$(crictl exec "$c" wget -q -O - http://127.0.0.1:80/)" = served ]
	# The kernel reads the range in the writer's user namespace: the host
	# wrote the pod's groups as host IDs (busybox's ping opens a raw
	# socket only, which the range does not cover).
	read -r _ host _ <<<"$(sandbox_uidmap "$pod")"
	[ "$(nsenter --net="/proc/$(crictl inspectp "$pod" | jq -r .info.pid)/ns/net" cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' ')" = "$host $((host + 65535))" ]
	# The pod asked for auto (pod_annotations copies it): a privileged
	# container in it is refused before runc, with the reason (CRI's
	# create only records it; its start runs the runtime's create).
	cfg=$(ctr_config priv '["sleep", "3600"]' '.linux.security_context.privileged = true')
	c=$(crictl create "$pod" "$cfg" "$D/web.pod.json")
	run crictl start "$c"
	[ "$status" -ne 0 ]
	[[ "$output" == *"is privileged"*"drop the annotation or privileged"* ]] || fail "$output"
	rmpod "$pod"
	# A pod that sets the sysctl keeps its value.
	pod=$(runp web2 '{"runc-userns.io/userns": "auto"}' '.linux.sysctls = {"net.ipv4.ip_unprivileged_port_start": "1024"}')
	c=$(run_ctr "$pod" web2 app '["sleep", "3600"]')
	[ "$(crictl exec "$c" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" = 1024 ]
	run crictl exec "$c" httpd -p 80
	[ "$status" -ne 0 ]
	[[ "$output" == *"ermission denied"* ]] || fail "$output"
	rmpod "$pod"
}

@test "CRI, mode always: a privileged container stays in the host's user namespace beside its pooled pod; NET_ADMIN gets a warning" {
	local pod priv app log
	cp "$RUNC_USERNS_CONFIG" "$RUNC_USERNS_CONFIG.orig"
	jq '.userns.mode = "always"' "$RUNC_USERNS_CONFIG.orig" >"$RUNC_USERNS_CONFIG"
	pod=$(runp privpod '{}' '.linux.security_context.privileged = true')
	# The sandbox cannot tell (containerd writes the same spec): it is
	# pooled, and so is an unprivileged container of the pod.
	[ "$(pool_count)" = 1 ]
	app=$(run_ctr "$pod" privpod app '["sleep", "3600"]' '.linux.security_context.capabilities.add_capabilities = ["NET_ADMIN"]')
	[ "$(uidmap "$app")" = "$(sandbox_uidmap "$pod")" ]
	log=$D/state-ctrd/io.containerd.runtime.v2.task/k8s.io/$app/log.json
	grep '"level":"warning"' "$log" | grep -q "container $app asks for CAP_NET_ADMIN, but its pod's root has none over network namespace" || fail "no warning in $log: $(cat "$log")"
	run crictl exec "$app" ip addr add 192.0.2.1/32 dev lo
	[ "$status" -ne 0 ]
	# The privileged one is host root: it administers the pod's network.
	priv=$(run_ctr "$pod" privpod priv '["sleep", "3600"]' '.linux.security_context.privileged = true')
	[ "$(uidmap "$priv")" = "0 0 4294967295" ]
	crictl exec "$priv" ip addr add 192.0.2.1/32 dev lo
	crictl exec "$priv" brctl addbr e2e0
	crictl exec "$priv" ip link del e2e0
	[ "$(crictl exec "$priv" readlink /proc/self/ns/net)" = "$(crictl exec "$app" readlink /proc/self/ns/net)" ]
	grep -q "container $priv is privileged: it stays in the host's user namespace" "$D/state-ctrd/io.containerd.runtime.v2.task/k8s.io/$priv/log.json"
	[ "$(pool_count)" = 1 ]
	rmpod "$pod"
	[ "$(pool_count)" = 0 ]
}

@test "CRI, mode always: an app container follows its sandbox's verdict; a pod started before the mode stays in the host's user namespace" {
	local pod c
	pod=$(runp before)
	[ "$(pool_count)" = 0 ]
	cp "$RUNC_USERNS_CONFIG" "$RUNC_USERNS_CONFIG.orig"
	jq '.userns.mode = "always"' "$RUNC_USERNS_CONFIG.orig" >"$RUNC_USERNS_CONFIG"
	c=$(run_ctr "$pod" before app '["sleep", "3600"]')
	[ "$(uidmap "$c")" = "0 0 4294967295" ]
	[ "$(pool_count)" = 0 ]
	grep -q "its pod $pod's sandbox is not in a user namespace from the pool" "$D/state-ctrd/io.containerd.runtime.v2.task/k8s.io/$c/log.json"
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

@test "CRI: a Bidirectional volume in a userns pod (rootfsPropagation rshared) starts; the volume is idmapped, receives host mounts and sends none" {
	# Bidirectional needs a shared source mount (containerd checks it), as
	# kubelet's pods directory is; this machine's / may be private.
	SHARED_VOL=$D/bidi
	mkdir -p "$SHARED_VOL/late" "$SHARED_VOL/fromctr"
	mount --bind "$SHARED_VOL" "$SHARED_VOL"
	mount --make-shared "$SHARED_VOL"
	pod=$(runp bidi '{"runc-userns.io/userns": "auto"}')
	c=$(run_ctr "$pod" bidi app '["sleep", "3600"]' '.mounts = [{container_path: "/vol", host_path: "'"$SHARED_VOL"'", propagation: 2}]')
	# What containerd asks of runc for such a mount.
	[ "$(crictl inspect "$c" | jq -r .info.runtimeSpec.linux.rootfsPropagation)" = rshared ]
	[ "$(uidmap "$c")" = "$(sandbox_uidmap "$pod")" ]
	# runc's /sys/fs/cgroup (the mount that failed): the cgroup v1
	# hierarchies bound below it, or a cgroup2.
	if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
		want=' /sys/fs/cgroup .* - cgroup2 '
	else
		want=' /sys/fs/cgroup/memory .* - cgroup '
	fi
	crictl exec "$c" grep -Eq "$want" /proc/self/mountinfo
	# Idmapped: the pod's root writes as host root.
	crictl exec "$c" sh -c 'echo v >/vol/written-by-app'
	[ "$(stat -c %u:%g "$SHARED_VOL/written-by-app")" = 0:0 ]
	# Receive-only (idmap/policy.go): a host mount made now reaches the
	# pod; one made in the pod's mount namespace stays there.
	mount -t tmpfs -o size=1m ctrd-e2e-late "$SHARED_VOL/late"
	echo late >"$SHARED_VOL/late/file"
	[ "$(crictl exec "$c" cat /vol/late/file)" = late ]
	pid=$(crictl inspect "$c" | jq -r .info.pid)
	# As host root in its mount namespace (nsenter -m runs its busybox mount).
	nsenter -t "$pid" -m mount -t tmpfs -o size=1m ctrd-e2e-fromctr /vol/fromctr
	crictl exec "$c" grep -q " /vol/fromctr " /proc/self/mountinfo
	if mountpoint -q "$SHARED_VOL/fromctr"; then
		fail "a mount made in the pod reached the host at $SHARED_VOL/fromctr"
	fi
	rmpod "$pod"
	[ "$(pool_count)" = 0 ]
	[ -z "$(staged_mounts)" ]
	umount "$SHARED_VOL/late" "$SHARED_VOL"
}

@test "CRI, mode always: a pod without the annotation gets a pool user namespace; its web server binds :80, its Bidirectional volume starts" {
	local pod web vol inside host size
	cp "$RUNC_USERNS_CONFIG" "$RUNC_USERNS_CONFIG.orig"
	jq '.userns.mode = "always"' "$RUNC_USERNS_CONFIG.orig" >"$RUNC_USERNS_CONFIG"
	SHARED_VOL=$D/bidi-always
	mkdir -p "$SHARED_VOL"
	mount --bind "$SHARED_VOL" "$SHARED_VOL"
	mount --make-shared "$SHARED_VOL"
	pod=$(runp always)
	[ "$(pool_count)" = 1 ]
	read -r inside host size <<<"$(sandbox_uidmap "$pod")"
	[ "$inside:$size" = 0:65536 ]
	[ "$host" -ge "$POOL_BASE" ]
	web=$(run_ctr "$pod" always web '["sleep", "3600"]')
	[ "$(uidmap "$web")" = "0 $host 65536" ]
	crictl exec "$web" sh -c 'mkdir -p /www && echo served >/www/index.html && httpd -p 80 -h /www'
	[ "$(crictl exec "$web" wget -q -O - http://127.0.0.1:80/)" = served ]
	vol=$(run_ctr "$pod" always vol '["sleep", "3600"]' '.mounts = [{container_path: "/vol", host_path: "'"$SHARED_VOL"'", propagation: 2}]')
	[ "$(uidmap "$vol")" = "0 $host 65536" ]
	crictl exec "$vol" sh -c 'echo v >/vol/written'
	[ "$(stat -c %u:%g "$SHARED_VOL/written")" = 0:0 ]
	rmpod "$pod"
	[ "$(pool_count)" = 0 ]
	umount "$SHARED_VOL"
}
