#!/usr/bin/env bats
# User namespaces from the pool: the core promise (issue: runc-userns core).

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

# pod_range ID: "<hostID> <size>" the container's init sees in uid_map.
uid_map_of() {
	cexec "$1" cat /proc/self/uid_map | awk '{print $1, $2, $3}'
}

@test "auto: the pod's root is an unprivileged pool range, uid_map and gid_map agree" {
	b=$(pooled_bundle c1)
	start_container "$b" c1
	run -0 cexec c1 cat /proc/self/uid_map
	[ "$(echo $output)" = "0 $POOL_BASE 65536" ]
	run -0 cexec c1 cat /proc/self/gid_map
	[ "$(echo $output)" = "0 $POOL_BASE 65536" ]
	run -0 cexec c1 id -u
	[ "$output" = 0 ]
	# The host sees the container's init as the pool's first ID.
	pid=$(wrapper state c1 | jq .pid)
	[ "$(stat -c %u /proc/$pid)" = "$POOL_BASE" ]
	# The pool records it.
	run -0 pool_json
	[ "$(echo "$output" | jq -r '.[0].owner')" = c1 ]
	[ "$(echo "$output" | jq -r '.[0].hostID')" = "$POOL_BASE" ]
	[ "$(echo "$output" | jq -r '.[0].size')" = 65536 ]
	[ "$(echo "$output" | jq -r '.[0].root')" = "$RUNC_ROOT" ]
}

@test "auto: root can run binaries and create files in / and /tmp; the host sees them as root's" {
	b=$(pooled_bundle c1)
	start_container "$b" c1
	run -0 cexec c1 sh -c 'echo hi >/newfile && echo hi >/tmp/newfile && ls -ln /newfile /tmp/newfile && id'
	[[ "$output" == *"uid=0(root) gid=0(root)"* ]]
	# Written through the idmapped rootfs: on disk as host root, nothing chowned.
	[ "$(stat -c %u:%g "$b/rootfs/newfile")" = 0:0 ]
	[ "$(stat -c %u:%g "$b/rootfs/tmp/newfile")" = 0:0 ]
	[ "$(stat -c %u:%g "$b/rootfs/bin/busybox")" = 0:0 ]
}

@test "two pods get disjoint ranges; delete returns them" {
	b1=$(setup_bundle p1)
	b2=$(setup_bundle p2)
	annotate "$b1" runc-userns.io/userns auto
	annotate "$b2" runc-userns.io/userns auto
	start_container "$b1" p1
	start_container "$b2" p2
	m1=$(cexec p1 cat /proc/self/uid_map | awk '{print $2}')
	m2=$(cexec p2 cat /proc/self/uid_map | awk '{print $2}')
	[ "$m1" != "$m2" ]
	[ $((m1 > m2 ? m1 - m2 : m2 - m1)) -ge 65536 ]
	[ "$(pool_json | jq length)" = 2 ]
	wrapper delete --force p1
	[ "$(pool_json | jq -r '.[].owner')" = p2 ]
	wrapper delete --force p2
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
}

@test "a second container of the pod shares the pod's user namespace; the range goes back with the sandbox" {
	sb=$(setup_bundle sandbox)
	app=$(setup_bundle app)
	annotate "$sb" runc-userns.io/userns auto
	annotate "$app" runc-userns.io/userns auto
	as_pod "$sb" sandbox sandbox
	as_pod "$app" sandbox container
	start_container "$sb" sandbox
	start_container "$app" app
	[ "$(cexec sandbox readlink /proc/self/ns/user)" = "$(cexec app readlink /proc/self/ns/user)" ]
	[ "$(cexec app cat /proc/self/uid_map | awk '{print $1, $2, $3}')" = "0 $POOL_BASE 65536" ]
	[ "$(pool_json | jq length)" = 1 ]
	[ "$(pool_json | jq -c '.[0].members | sort')" = '["app","sandbox"]' ]
	wrapper delete --force app
	[ "$(pool_json | jq -c '.[0].members')" = '["sandbox"]' ]
	wrapper delete --force sandbox
	[ "$(pool_json | jq length)" = 0 ]
	[ ! -e "$STATE_DIR/pods/sandbox" ]
}

@test "a container claiming another pod by its annotations (as a pod author can on CRI-O's sandbox) joins nothing unless it shares the pod's cgroup parent" {
	sb=$(pooled_bundle sandbox)
	as_pod "$sb" sandbox sandbox
	start_container "$sb" sandbox
	[ "$(cat "$STATE_DIR/pods/sandbox/cgroup")" = / ]
	# CRI-O copies pod annotations onto its sandbox's spec after its own
	# keys: another pod's sandbox, in its own pod's cgroup, says it is an
	# app container of pod "sandbox".
	f=$(pooled_bundle forged)
	update_config "$f" '.annotations["io.kubernetes.cri-o.SandboxID"] = "sandbox" | .annotations["io.kubernetes.cri-o.ContainerType"] = "container"
		| .linux.cgroupsPath = "/'"$(basename "$TESTDIR")"'-otherpod/forged"'
	create_to_file forged "$f"
	[ "$status" = 1 ]
	[[ "$output" == *"container forged: its annotations put it in pod sandbox, but its cgroup parent \"/$(basename "$TESTDIR")-otherpod\" is not the pod's (\"/\", from its sandbox's linux.cgroupsPath)"* ]]
	# A pod pinned by an earlier release has no record: its sandbox's runc
	# state says the same.
	mv "$STATE_DIR/pods/sandbox/cgroup" "$TESTDIR/cgroup.record"
	create_to_file forged "$f"
	[ "$status" = 1 ]
	[[ "$output" == *"container forged: its annotations put it in pod sandbox, but its cgroup parent"*"is not the pod's (\"/\""* ]]
	mv "$TESTDIR/cgroup.record" "$STATE_DIR/pods/sandbox/cgroup"
	# Both CRIs' keys, or one present but empty: no CRI writes that.
	update_config "$f" '.linux.cgroupsPath = "/'"$(basename "$TESTDIR")"'-forged" | .annotations["io.kubernetes.cri.sandbox-id"] = "sandbox"'
	create_to_file forged "$f"
	[ "$status" = 1 ]
	[[ "$output" == *"container forged carries both containerd's pod annotations (io.kubernetes.cri.sandbox-id) and CRI-O's (io.kubernetes.cri-o.ContainerType, io.kubernetes.cri-o.SandboxID)"* ]]
	update_config "$f" 'del(.annotations["io.kubernetes.cri.sandbox-id"]) | .annotations["io.kubernetes.cri-o.ContainerType"] = ""'
	create_to_file forged "$f"
	[ "$status" = 1 ]
	[[ "$output" == *"container forged: io.kubernetes.cri-o.ContainerType is present but empty"* ]]
	[ ! -e "$RUNC_ROOT/forged" ]
	[ "$(pool_json | jq -c '[.[] | {owner, members}]')" = '[{"owner":"sandbox","members":["sandbox"]}]' ]
	# A container of the pod's cgroup parent joins as before.
	update_config "$f" '.annotations["io.kubernetes.cri-o.ContainerType"] = "container"'
	start_container "$f" forged
	[ "$(cexec forged readlink /proc/self/ns/user)" = "$(cexec sandbox readlink /proc/self/ns/user)" ]
	wrapper delete --force forged
	wrapper delete --force sandbox
	[ "$(pool_json | jq length)" = 0 ]
	[ ! -e "$STATE_DIR/pods/sandbox" ]
}

@test "an app container without the annotation joins its pod's user namespace; one that asks for the host's is refused" {
	# As under a containerd handler without pod_annotations (CRI-O copies
	# them into every container): only the sandbox asks.
	sb=$(pooled_bundle sandbox)
	as_pod "$sb" sandbox sandbox
	start_container "$sb" sandbox
	for id in app crio-app; do
		b=$(setup_bundle $id)
		if [ $id = app ]; then
			as_pod "$b" sandbox container
		else
			update_config "$b" '.annotations["io.kubernetes.cri-o.SandboxID"] = "sandbox" | .annotations["io.kubernetes.cri-o.ContainerType"] = "container"'
		fi
		start_container "$b" $id
		[ "$(cexec $id readlink /proc/self/ns/user)" = "$(cexec sandbox readlink /proc/self/ns/user)" ]
		[ "$(cexec $id cat /proc/self/uid_map | awk '{print $1, $2, $3}')" = "0 $POOL_BASE 65536" ]
	done
	[ "$(pool_json | jq -c '.[0].members | sort')" = '["app","crio-app","sandbox"]' ]
	# Asking for the host's user namespace in such a pod: refused, named.
	hb=$(setup_bundle hostapp)
	annotate "$hb" runc-userns.io/userns host
	as_pod "$hb" sandbox container
	run -1 wrapper create --bundle "$hb" hostapp
	[[ "$output" == *"container hostapp asks for the host's user namespace (runc-userns.io/userns=host), but its pod sandbox runs in a user namespace from runc-userns's pool"* ]]
	[ ! -e "$RUNC_ROOT/hostapp" ]
	# An app container of a pod without one stays as it was.
	ob=$(setup_bundle other)
	as_pod "$ob" plainpod container
	cp "$ob/config.json" "$TESTDIR/other.before"
	start_container "$ob" other
	cmp "$ob/config.json" "$TESTDIR/other.before"
	[ "$(cexec other cat /proc/self/uid_map | awk '{print $2}')" = 0 ]
	for id in other crio-app app sandbox; do wrapper delete --force $id; done
	[ "$(pool_json | jq length)" = 0 ]
}

@test "an app container whose sandbox has no user namespace is refused with a clear error" {
	app=$(pooled_bundle app)
	as_pod "$app" nosuchsandbox container
	run -1 wrapper create --bundle "$app" app
	[[ "$output" == *"container app"* ]]
	[[ "$output" == *"pod nosuchsandbox has no user namespace"* ]]
	[ ! -e "$RUNC_ROOT/app" ]
}

@test "32 pods created in parallel get 32 disjoint ranges" {
	for i in $(seq 1 32); do
		b=$(pooled_bundle "par$i")
		update_config "$b" '.process.args = ["true"]'
	done
	pids=()
	for i in $(seq 1 32); do
		wrapper create --bundle "$TESTDIR/par$i" "par$i" </dev/null >/dev/null 2>"$TESTDIR/par$i.err" &
		pids+=($!)
	done
	wait_pids "${pids[@]}" || fail "creates: $(cat "$TESTDIR"/par*.err)"
	for i in $(seq 1 32); do
		[ ! -s "$TESTDIR/par$i.err" ] || fail "create par$i: $(cat "$TESTDIR/par$i.err")"
	done
	run -0 pool_json
	[ "$(echo "$output" | jq length)" = 32 ]
	[ "$(echo "$output" | jq '[.[].hostID] | unique | length')" = 32 ]
	# Each container's init really runs as its recorded range.
	for i in $(seq 1 32); do
		pid=$(wrapper state "par$i" | jq .pid)
		want=$(echo "$output" | jq -r ".[] | select(.owner == \"par$i\") | .hostID")
		[ "$(stat -c %u /proc/$pid)" = "$want" ]
	done
	pids=()
	for i in $(seq 1 32); do
		wrapper delete --force "par$i" &
		pids+=($!)
	done
	wait_pids "${pids[@]}"
	[ "$(pool_json | jq length)" = 0 ]
}

@test "pool exhausted: a clear error, nothing created, nothing leaked" {
	POOL_SLOTS=1 write_config '{}'
	b1=$(setup_bundle e1)
	b2=$(setup_bundle e2)
	annotate "$b1" runc-userns.io/userns auto
	annotate "$b2" runc-userns.io/userns auto
	start_container "$b1" e1
	run -1 wrapper create --bundle "$b2" e2
	[[ "$output" == *"user namespace pool exhausted: 1 of 1 ranges in use (see runc-userns pool ls)"* ]]
	[ ! -e "$RUNC_ROOT/e2" ]
	[ "$(pool_json | jq -r '.[].owner')" = e1 ]
}

@test "no annotation and host: config.json is not touched, no range is taken" {
	b=$(setup_bundle none)
	h=$(setup_bundle host)
	annotate "$h" runc-userns.io/userns host
	sum_none=$(sha256sum <"$b/config.json")
	sum_host=$(sha256sum <"$h/config.json")
	mtime=$(stat -c %Y.%N "$b/config.json")
	start_container "$b" none
	start_container "$h" host
	[ "$(sha256sum <"$b/config.json")" = "$sum_none" ]
	[ "$(sha256sum <"$h/config.json")" = "$sum_host" ]
	[ "$(stat -c %Y.%N "$b/config.json")" = "$mtime" ]
	[ "$(cexec none cat /proc/self/uid_map | awk '{print $1, $2, $3}')" = "0 0 4294967295" ]
	pool_empty
}

@test "caller's mappings win: nothing allocated, mappings untouched" {
	b=$(pooled_bundle own)
	chown -R 1000000:1000000 "$b/rootfs"
	update_config "$b" '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]'
	start_container "$b" own
	[ "$(cexec own cat /proc/self/uid_map | awk '{print $1, $2, $3}')" = "0 1000000 65536" ]
	pool_empty
	run -0 jq -r '.annotations["runc-userns.io/stamp"] // "none"' "$b/config.json"
	[ "$output" = none ]
}

@test "the same bundle runs twice: the second create recognises the first one's edits" {
	b=$(pooled_bundle twice)
	update_config "$b" '.process.args = ["sh", "-c", "cat /proc/self/uid_map; id -u"]'
	orig_root=$(jq -r .root.path "$b/config.json")
	run -0 wrapper run --bundle "$b" twice </dev/null
	[[ "$output" == *"0 $POOL_BASE"*"65536"* ]]
	[ "$(jq -r '.annotations["runc-userns.io/stamp"]' "$b/config.json" | jq -r .rootfs)" = "$orig_root" ]
	run -0 wrapper run --bundle "$b" twice </dev/null
	[[ "$output" == *"0 $POOL_BASE"*"65536"* ]]
	[ "$(echo "$output" | tail -1)" = 0 ]
	[ "$(jq '.linux.namespaces | map(select(.type == "user")) | length' "$b/config.json")" = 1 ]
	[ "$(pool_json | jq length)" = 0 ]
}

@test "run in the foreground: exit status kept, range released when runc returns" {
	b=$(pooled_bundle fg)
	update_config "$b" '.process.args = ["sh", "-c", "exit 3"]'
	run -3 wrapper run --bundle "$b" fg </dev/null
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
}

@test "bad annotation value and mode off: clear errors naming the container and value" {
	b=$(setup_bundle bad)
	annotate "$b" runc-userns.io/userns yes-please
	run -1 wrapper create --bundle "$b" bad
	[[ "$output" == *'container bad: runc-userns.io/userns="yes-please"'* ]]
	annotate "$b" runc-userns.io/userns auto
	write_config '{"userns": {"mode": "off"}}'
	run -1 wrapper create --bundle "$b" bad
	[[ "$output" == *"container bad asks for a user namespace"*"turned them off"* ]]
	[ ! -e "$RUNC_ROOT/bad" ]
}

@test "mode always: every eligible pod gets a range; host opts out; host-network pods are skipped" {
	write_config '{"userns": {"mode": "always"}}'
	a=$(setup_bundle a)
	h=$(setup_bundle h)
	n=$(setup_bundle n)
	annotate "$h" runc-userns.io/userns host
	update_config "$n" '.linux.namespaces |= map(select(.type != "network"))'
	start_container "$a" a
	start_container "$h" h
	start_container "$n" n
	[ "$(cexec a cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	[ "$(cexec h cat /proc/self/uid_map | awk '{print $2}')" = 0 ]
	[ "$(cexec n cat /proc/self/uid_map | awk '{print $2}')" = 0 ]
	[ "$(pool_json | jq -r '.[].owner')" = a ]
}

@test "auto with the host's network namespace is refused" {
	b=$(pooled_bundle hn)
	update_config "$b" '.linux.namespaces |= map(select(.type != "network"))'
	run -1 wrapper create --bundle "$b" hn
	[[ "$output" == *"container hn asks for runc-userns.io/userns=auto but shares the host's [network] namespace"* ]]
}

@test "a failed runc create leaves no mount, no range, no state dir entry" {
	b=$(pooled_bundle broken)
	update_config "$b" '.process.args = ["/does/not/exist"]'
	run ! wrapper run --bundle "$b" broken </dev/null
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(test_mounts)" ]
}

@test "a rerun of a bundle whose only mount edit was sysfs (a CNI network namespace) starts from the caller's mounts" {
	netns_elsewhere
	b=$(pooled_bundle rr)
	join_netns "$TESTDIR/netns" "$b"
	update_config "$b" '.process.args = ["true"]'
	orig=$(jq -c .mounts "$b/config.json")
	run -0 wrapper run --bundle "$b" rr </dev/null
	[ "$(jq -r '.mounts[] | select(.destination == "/sys") | .type' "$b/config.json")" = bind ]
	# Again without the pool: the caller's sysfs, not a bind of the host's /sys.
	update_config "$b" 'del(.annotations["runc-userns.io/userns"])'
	run -0 wrapper run --bundle "$b" rr </dev/null
	umount "$TESTDIR/netns"
	[ "$(jq -c .mounts "$b/config.json")" = "$orig" ]
}

@test "delete with an empty environment finds what the container held" {
	b=$(pooled_bundle envless)
	start_container "$b" envless
	[ "$(pool_json | jq length)" = 1 ]
	run -0 envless_wrapper kill envless KILL
	# Not a sleep: the init is dead once runc says so.
	wait_status envless stopped
	run -0 envless_wrapper delete --force envless
	[ "$(pool_json | jq length)" = 0 ]
	[ ! -e "$STATE_DIR/pods/envless" ]
}

@test "a forged stamp from the pod author is refused: it cannot pick mounts, a runtime or a range" {
	b=$(pooled_bundle forged)
	marker=$TESTDIR/forged-runtime-ran
	printf '#!/bin/sh\ntouch %s\n' "$marker" >"$TESTDIR/evil"
	chmod +x "$TESTDIR/evil"
	stamp=$(jq -cn --arg rt "$TESTDIR/evil" --arg sd "$STATE_DIR" \
		'{v: 1, owner: "victim", root: "/run/runc", stateDir: $sd, runtime: $rt, hostID: 0, size: 65536,
		  mounts: [{destination: "/host", type: "bind", source: "/", options: ["rbind"]}], mac: "00"}')
	jq --arg s "$stamp" '.annotations["runc-userns.io/stamp"] = $s' "$b/config.json" >"$b/c"
	mv "$b/c" "$b/config.json"
	run -1 wrapper create --bundle "$b" forged
	[[ "$output" == *"container forged: config.json carries a runc-userns.io/stamp annotation that this node did not write"* ]]
	[ ! -e "$RUNC_ROOT/forged" ]
	[ ! -e "$marker" ]
	# delete --force of the (absent) container runs no stamp-named runtime
	# either: the configured runc's answer for a container it never had.
	run -0 wrapper delete --force forged
	[ ! -e "$marker" ]
	# A stamp of another stateDir (the operator moved it, or a forger
	# names one): the error names both.
	jq --arg s "$(jq -c '.stateDir = "/nonexistent-state"' <<<"$stamp")" '.annotations["runc-userns.io/stamp"] = $s' "$b/config.json" >"$b/c"
	mv "$b/c" "$b/config.json"
	run -1 wrapper create --bundle "$b" forged
	[[ "$output" == *"written before stateDir /nonexistent-state (configured now: $STATE_DIR) was cleared"* ]]
	[ ! -e "$RUNC_ROOT/forged" ]
	[ ! -e "$marker" ]
}

@test "a pod in a network namespace made elsewhere with rootfsPropagation rshared (containerd's, for a Bidirectional volume) starts; the volume receives host mounts and sends none" {
	netns_elsewhere
	# A shared source, as kubelet's pods directory is; this machine's /
	# may be private. teardown_env unmounts what a failed test leaves.
	vol=$TESTDIR/shared-vol
	mkdir -p "$vol/late" "$vol/fromctr"
	mount --bind "$vol" "$vol"
	mount --make-shared "$vol"
	b=$(pooled_bundle bidi)
	join_netns "$TESTDIR/netns" "$b"
	update_config "$b" '.linux.rootfsPropagation = "rshared"
		| .mounts += [{destination: "/vol", type: "bind", source: "'"$vol"'", options: ["rbind", "rshared"]}]'
	start_container "$b" bidi
	[ "$(jq -r '.mounts[] | select(.destination == "/sys") | .type' "$b/config.json")" = bind ]
	# runc's /sys/fs/cgroup (the mount that failed): the cgroup v1
	# hierarchies bound below it, or a cgroup2.
	if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
		want=' /sys/fs/cgroup .* - cgroup2 '
	else
		want=' /sys/fs/cgroup/memory .* - cgroup '
	fi
	cexec bidi grep -Eq "$want" /proc/self/mountinfo
	cexec bidi sh -c 'echo v >/vol/written'
	[ "$(stat -c %u:%g "$vol/written")" = 0:0 ]
	# Receive-only (idmap/policy.go).
	mount -t tmpfs -o size=1m runc-userns-test-late "$vol/late"
	echo late >"$vol/late/file"
	[ "$(cexec bidi cat /vol/late/file)" = late ]
	pid=$(wrapper state bidi | jq .pid)
	# As host root in its mount namespace (nsenter -m runs its busybox mount).
	nsenter -t "$pid" -m mount -t tmpfs -o size=1m runc-userns-test-fromctr /vol/fromctr
	cexec bidi grep -q " /vol/fromctr " /proc/self/mountinfo
	if mountpoint -q "$vol/fromctr"; then
		fail "a mount made in the container reached the host at $vol/fromctr"
	fi
	wrapper delete --force bidi
	umount "$vol/late" "$vol" "$TESTDIR/netns"
}

@test "a pod joining a network namespace made elsewhere (as containerd's CNI netns) runs, exec included; sysfs becomes a read-only bind; its net sysctls are written" {
	pod_elsewhere sandbox app
	app=$TESTDIR/app
	want=$(nsenter --net="$TESTDIR/netns" readlink /proc/self/ns/net)
	for c in sandbox app; do
		[ "$(cexec $c readlink /proc/self/ns/net)" = "$want" ]
		[ "$(cexec $c cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
		run -0 cexec $c grep " /sys " /proc/self/mountinfo
		[[ "$output" == *" ro,"* ]]
		cexec $c ls /sys/kernel >/dev/null
		# The host's own kernel filesystems in it are masked (a tmpfs
		# where it is a directory).
		run -0 cexec $c grep " /sys/kernel/security " /proc/self/mountinfo
		[[ "$output" == *" - tmpfs "* ]]
	done
	[ "$(jq -r '.mounts[] | select(.destination == "/sys") | .type' "$app/config.json")" = bind ]
	version=$("$REAL_RUNC" --version | awk 'NR == 1 {print $3}')
	if [[ "$version" == 1.[012].* ]]; then
		# runc < 1.3 joins the user namespace first and could not enter
		# the network namespace: the wrapper starts runc inside it instead.
		[ "$(jq '[.linux.namespaces[] | select(.type == "network")] | length' "$app/config.json")" = 0 ]
		# exec finds the namespace through the container's own stamp, not
		# the caller's config: with no environment at all (as podman and
		# some shims call it) it still lands in the pod's namespace.
		[ "$(envless_wrapper exec app readlink /proc/self/ns/net)" = "$want" ]
		# If what the stamp points at is gone, exec is refused, never run
		# in the host's network namespace.
		rec=$(ls "$STATE_DIR"/containers/*/app/netns)
		mv "$rec" "$rec.away"
		run -1 wrapper exec app readlink /proc/self/ns/net
		[[ "$output" == *"container app: runc-userns entered network namespace $TESTDIR/netns for it at create, but its record $rec is gone: refusing to exec"* ]]
		mv "$rec.away" "$rec"
		# An exec whose ID it cannot read is refused, never run in the host's.
		run -1 wrapper exec --some-future-flag x app true
		[[ "$output" == *"could not read the container ID from exec's arguments"* ]]
		run -0 wrapper exec --help
		[[ "$output" == *"runc exec"* ]]
	else
		[ "$(jq -r '.linux.namespaces[] | select(.type == "network") | .path' "$app/config.json")" = "$TESTDIR/netns" ]
	fi
	# The sandbox, whose spec sets none, gave the pod unprivileged ports
	# and ping (netns.PodDefaults), as a pod whose user namespace owned
	# the network namespace would have; its app container wrote nothing.
	[ "$(nsenter --net="$TESTDIR/netns" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" = 0 ]
	[ "$(nsenter --net="$TESTDIR/netns" cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' ')" = "$POOL_BASE $((POOL_BASE + 65535))" ]
	nsenter --net="$TESTDIR/netns" sh -c 'echo 1024 >/proc/sys/net/ipv4/ip_unprivileged_port_start; echo 1 0 >/proc/sys/net/ipv4/ping_group_range'
	# net.* sysctls (containerd 2 sets two on every sandbox): runc, any
	# version, cannot write them from the pod's user namespace there; the
	# wrapper writes them from the host before runc starts, with
	# ping_group_range's groups taken through the pod's mapping.
	sc=$(pooled_bundle sysctl)
	as_pod "$sc" sandbox container
	update_config "$sc" '.linux.namespaces |= map(if .type == "network" then .path = "'"$TESTDIR/netns"'" else . end)
		| .linux.sysctl = {"net.ipv4.ping_group_range": "0 2147483647", "net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"}'
	[ "$(nsenter --net="$TESTDIR/netns" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" = 1024 ]
	for id in sysctl sysctl2; do # the second create of the bundle starts from the caller's spec
		start_container "$sc" $id
		[ "$(cexec $id cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" = 0 ]
		[ "$(cexec $id cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' ')" = "0 65535" ]
		[ "$(nsenter --net="$TESTDIR/netns" cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' ')" = "$POOL_BASE $((POOL_BASE + 65535))" ]
		[ "$(cexec $id cat /proc/sys/kernel/shm_rmid_forced)" = 1 ] # not a network one: runc's
		[ "$(jq -c '.linux.sysctl' "$sc/config.json")" = '{"kernel.shm_rmid_forced":"1"}' ]
		wrapper delete --force $id
		nsenter --net="$TESTDIR/netns" sh -c 'echo 1024 >/proc/sys/net/ipv4/ip_unprivileged_port_start; echo 1 0 >/proc/sys/net/ipv4/ping_group_range'
	done
	# A key that is not a plain path under /proc/sys/net: refused, named.
	update_config "$sc" '.linux.sysctl = {"net/../kernel/core_pattern": "x"}'
	run -1 wrapper create --bundle "$sc" bad
	[[ "$output" == *"container bad: network namespace $TESTDIR/netns: sysctl \"net/../kernel/core_pattern\" is not a plain path under /proc/sys/net"* ]]
	[ ! -e "$RUNC_ROOT/bad" ]
	wrapper delete --force app
	wrapper delete --force sandbox
	umount "$TESTDIR/netns"
}
