#!/usr/bin/env bats
# Idmapped bind mounts (issue: idmapped mounts everywhere).

load helpers

setup() {
	requires root
	setup_env
	VOL=$TESTDIR/vol
	mkdir -p "$VOL"
	chmod 0755 "$VOL"
	echo root >"$VOL/root-file"
	echo user >"$VOL/user-file"
	chown 1000:1000 "$VOL/user-file"
}

teardown() {
	if [ -n "${HOLDER:-}" ]; then
		kill "$HOLDER" 2>/dev/null || true
		wait "$HOLDER" 2>/dev/null || true
	fi
	teardown_env
}

# add_bind BUNDLE SOURCE DEST [OPTIONS-JSON]
add_bind() {
	local opts=${4:-'["rbind"]'}
	update_config "$1" ".mounts += [{\"destination\": \"$3\", \"type\": \"bind\", \"source\": \"$2\", \"options\": $opts}]"
}

# runc_idmaps: the real runc idmaps mounts itself (runc >= 1.2).
runc_idmaps() { "$REAL_RUNC" features 2>/dev/null | jq -e '.linux.mountExtensions.idmap.enabled == true' >/dev/null; }

# vol_submount: a tmpfs at $VOL/sub holding in-tmpfs, owned by host root
# (teardown_env unmounts it if the test does not).
vol_submount() {
	mkdir -p "$VOL/sub"
	mount -t tmpfs -o mode=0755 tmpfs "$VOL/sub"
	echo x >"$VOL/sub/in-tmpfs"
}

@test "pool pod: a volume owned by host root looks root's inside, writes land as host root, uid 1000 stays 1000" {
	b=$(pooled_bundle v)
	add_bind "$b" "$VOL" /v
	update_config "$b" '.process.capabilities |= with_entries(.value += ["CAP_CHOWN"])'
	start_container "$b" v
	run -0 cexec v stat -c '%n %u:%g' /v/root-file /v/user-file
	[ "${lines[0]}" = "/v/root-file 0:0" ]
	[ "${lines[1]}" = "/v/user-file 1000:1000" ]
	run -0 cexec v sh -c 'echo new >/v/created && mkdir /v/dir && chown 1000:1000 /v/dir'
	[ "$(stat -c %u:%g "$VOL/created")" = 0:0 ]
	[ "$(stat -c %u:%g "$VOL/dir")" = 1000:1000 ]
	# Nothing was chowned on the host side.
	[ "$(stat -c %u:%g "$VOL/root-file")" = 0:0 ]
	[ "$(stat -c %u:%g "$VOL")" = 0:0 ]
	# And nothing of it stays mounted on the host once create returned.
	[ -z "$(staging_mounts)" ]
}

@test "a single-file bind mount (like /etc/hosts) is idmapped too" {
	b=$(pooled_bundle f)
	echo "127.0.0.1 test" >"$TESTDIR/hosts"
	add_bind "$b" "$TESTDIR/hosts" /etc/hosts '["rbind", "ro"]'
	start_container "$b" f
	[ "$(cexec f stat -c %u:%g /etc/hosts)" = 0:0 ]
	[ "$(cexec f cat /etc/hosts)" = "127.0.0.1 test" ]
}

@test "rbind: a submount of the volume is idmapped too" {
	b=$(pooled_bundle r)
	vol_submount
	add_bind "$b" "$VOL" /v '["rbind"]'
	start_container "$b" r
	run cexec r stat -c '%u:%g' /v/sub/in-tmpfs
	umount "$VOL/sub"
	[ "$status" = 0 ]
	[ "$output" = 0:0 ]
}

@test "explicit rbind with idmap: the submounts come along as they are, only the top is idmapped (runc >= 1.2's reading)" {
	b=$(pooled_bundle t)
	vol_submount
	add_bind "$b" "$VOL" /v '["rbind", "idmap"]'
	add_bind "$b" "$VOL" /r '["rbind", "ridmap"]'
	start_container "$b" t
	run cexec t stat -c '%n %u:%g' /v/root-file /v/sub/in-tmpfs /r/root-file /r/sub/in-tmpfs
	mountpoint -q "$VOL/sub" || fail "the host's submount is gone"
	umount "$VOL/sub"
	[ "$status" = 0 ]
	[ "${lines[0]}" = "/v/root-file 0:0" ]
	[ "${lines[1]}" = "/v/sub/in-tmpfs 65534:65534" ]
	[ "${lines[2]}" = "/r/root-file 0:0" ]
	[ "${lines[3]}" = "/r/sub/in-tmpfs 0:0" ]
}

@test "idmap-skip opts a mount out: its host-root files look unmapped" {
	b=$(pooled_bundle s)
	annotate "$b" runc-userns.io/idmap-skip "/skipped, /other"
	add_bind "$b" "$VOL" /skipped
	add_bind "$b" "$VOL" /mapped
	start_container "$b" s
	[ "$(cexec s stat -c %u /skipped/root-file)" = 65534 ]
	[ "$(cexec s stat -c %u /mapped/root-file)" = 0 ]
}

@test "implicit idmap on a filesystem without support stays a plain bind, logged and recorded" {
	b=$(pooled_bundle p)
	add_bind "$b" /sys/kernel /hostkernel '["rbind", "ro"]'
	wrapper --log "$TESTDIR/log.json" --log-format json create --bundle "$b" p </dev/null >/dev/null
	wrapper start p
	[ "$(jq -r '.annotations["runc-userns.io/idmap-skipped"]' "$b/config.json")" = /hostkernel ]
	grep -q '"level":"warning"' "$TESTDIR/log.json"
	grep -q '/hostkernel stays a plain bind' "$TESTDIR/log.json"
	cexec p ls /hostkernel >/dev/null
}

@test "explicit idmap on a filesystem without support fails with the kernel's errno and the hint" {
	b=$(pooled_bundle x)
	add_bind "$b" /sys/kernel /hostkernel '["rbind", "idmap"]'
	run -1 wrapper create --bundle "$b" x
	[[ "$output" == *"container x: mount /hostkernel: failed to set MOUNT_ATTR_IDMAP on /sys/kernel (sysfs): invalid argument (maybe the source filesystem doesn't support idmap mounts on this kernel?)"* ]]
	[ ! -e "$RUNC_ROOT/x" ]
	[ "$(pool_json | jq length)" = 0 ]
}

@test "explicit mount mappings with the caller's own user namespace: honoured, nothing allocated" {
	b=$(setup_bundle own)
	chown -R 1000000:1000000 "$b/rootfs"
	update_config "$b" '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]
		| .mounts += [{"destination": "/v", "type": "bind", "source": "'"$VOL"'", "options": ["rbind"],
			"uidMappings": [{"containerID": 0, "hostID": 1000000, "size": 65536}],
			"gidMappings": [{"containerID": 0, "hostID": 1000000, "size": 65536}]}]'
	start_container "$b" own
	[ "$(cexec own stat -c %u:%g /v/root-file)" = 0:0 ]
	[ "$(cexec own stat -c %u:%g /v/user-file)" = 1000:1000 ]
	cexec own sh -c 'echo x >/v/by-caller-ns'
	[ "$(stat -c %u:%g "$VOL/by-caller-ns")" = 0:0 ]
	pool_empty
}

@test "the idmap option alone uses the container's mappings" {
	b=$(setup_bundle opt)
	chown -R 1000000:1000000 "$b/rootfs"
	update_config "$b" '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]'
	add_bind "$b" "$VOL" /v '["bind", "idmap"]'
	start_container "$b" opt
	[ "$(cexec opt stat -c %u:%g /v/root-file)" = 0:0 ]
}

@test "a rerun of an idmapped bundle starts from the caller's mounts" {
	b=$(pooled_bundle again)
	add_bind "$b" "$VOL" /v
	update_config "$b" '.process.args = ["stat", "-c", "%u", "/v/root-file"]'
	run -0 wrapper run --bundle "$b" again </dev/null
	[ "$output" = 0 ]
	run -0 wrapper run --bundle "$b" again </dev/null
	[ "$output" = 0 ]
	[ "$(jq -r '.mounts[] | select(.destination == "/v") | .source' "$b/config.json" | grep -c "$STATE_DIR" || true)" -le 1 ]
}

# ramfs has no idmapped mount support: a rootfs on it cannot be idmapped.
ramfs_bundle() {
	local b
	b=$(setup_bundle "$1") || return 1
	mv "$b/rootfs" "$b/rootfs.src" || return 1
	mkdir "$b/rootfs" || return 1
	mount -t ramfs ramfs "$b/rootfs" || return 1
	cp -a "$b/rootfs.src/." "$b/rootfs/" || return 1
	annotate "$b" runc-userns.io/userns auto || return 1
	echo "$b"
}

@test "a rootfs whose filesystem cannot be idmapped: a clear error, nothing taken, nothing chowned" {
	b=$(ramfs_bundle ram)
	run -1 wrapper create --bundle "$b" ram
	umount "$b/rootfs" || true
	[[ "$output" == *"container ram: idmap rootfs: failed to set MOUNT_ATTR_IDMAP on $b/rootfs (ramfs): invalid argument"*"enable userns.rootfsChown"* ]]
	[ "$(pool_json | jq length)" = 0 ]
	[ ! -e "$RUNC_ROOT/ram" ]
}

@test "userns.rootfsChown: the opt-in fallback chowns the rootfs to the pod's range" {
	write_config '{"userns": {"rootfsChown": true}}'
	b=$(ramfs_bundle ramc)
	chmod u+s "$b/rootfs/bin/busybox"
	status=0
	wrapper --log "$TESTDIR/log" create --bundle "$b" ramc </dev/null >"$TESTDIR/out" 2>&1 || status=$?
	if [ "$status" = 0 ]; then
		wrapper start ramc
		run cexec ramc sh -c 'id -u; stat -c %u:%g /bin/busybox; echo x >/newfile'
	fi
	owner=$(stat -c %u:%g "$b/rootfs/bin/busybox")
	mode=$(stat -c %a "$b/rootfs/bin/busybox")
	wrapper delete --force ramc || true
	umount "$b/rootfs" || true
	[ "$status" = 0 ]
	[ "${lines[0]}" = 0 ]
	[ "${lines[1]}" = 0:0 ]
	[ "$owner" = "$POOL_BASE:$POOL_BASE" ]
	[ "$mode" = 4755 ]
	grep -q 'cannot be idmapped: chowned' "$TESTDIR/log"
}

@test "volumes keep their propagation: host mounts made later reach the pod unless it is rprivate; the host's submounts stay" {
	# The volume on a shared mount, as kubelet makes its pods directory
	# (rshared) for mount propagation; this machine's / may be private.
	mount --bind "$VOL" "$VOL"
	mount --make-shared "$VOL"
	mkdir -p "$VOL/sub" "$VOL/late"
	mount -t tmpfs -o size=1m runc-userns-test-sub "$VOL/sub"
	echo sub >"$VOL/sub/file"
	b=$(pooled_bundle p)
	add_bind "$b" "$VOL" /slave '["rbind", "rslave"]'
	add_bind "$b" "$VOL" /shared '["rbind", "rshared"]'
	add_bind "$b" "$VOL" /private '["rbind", "rprivate"]'
	add_bind "$b" "$VOL" /plain '["rbind"]'
	start_container "$b" p
	# The staging mounts' detach took none of the host's submounts, nor
	# the pod's copies of them.
	mountpoint -q "$VOL/sub"
	for d in slave shared private plain; do
		[ "$(cexec p cat /$d/sub/file)" = sub ]
		[ "$(cexec p stat -c %u /$d/root-file)" = 0 ]
	done
	mount -t tmpfs -o size=1m runc-userns-test-late "$VOL/late"
	echo late >"$VOL/late/file"
	for d in slave shared plain; do
		[ "$(cexec p cat /$d/late/file)" = late ]
	done
	run cexec p cat /private/late/file
	[ "$status" -ne 0 ]
	wrapper delete --force p
	mountpoint -q "$VOL/sub"
	mountpoint -q "$VOL/late"
	umount "$VOL/late" "$VOL/sub" "$VOL"
	[ -z "$(staging_mounts)" ]
}

@test "explicit idmap of an rslave volume with a submount, no user namespace: the submount survives the staging mount's detach" {
	# The state dir on a shared mount, as /run is on a systemd node: what
	# is attached below it is shared unless made otherwise.
	mkdir -p "$STATE_DIR"
	mount --bind "$STATE_DIR" "$STATE_DIR"
	mount --make-shared "$STATE_DIR"
	mkdir -p "$VOL/sub"
	mount -t tmpfs -o size=1m runc-userns-test-sub "$VOL/sub"
	echo sub >"$VOL/sub/file"
	b=$(setup_bundle e)
	update_config "$b" '.mounts += [{destination: "/e", type: "bind", source: "'"$VOL"'", options: ["rbind", "rslave"],
		uidMappings: [{containerID: 0, hostID: 100000, size: 65536}], gidMappings: [{containerID: 0, hostID: 100000, size: 65536}]}]'
	start_container "$b" e
	[ "$(cexec e cat /e/sub/file)" = sub ]
	[ "$(cexec e stat -c %u /e/root-file)" = 100000 ]
	wrapper delete --force e
	mountpoint -q "$VOL/sub"
	umount "$VOL/sub" "$STATE_DIR"
	[ -z "$(staging_mounts)" ]
}

# nested_bundle NAME OPTIONS-JSON: a bundle whose first bind puts $VOL at
# /mnt/x (a path its rootfs does not have) and whose second bind, with the
# options given, has its source in the rootfs below it: it exists only once
# runc has made the first mount.
nested_bundle() {
	local b
	b=$(setup_bundle "$1") || return 1
	mkdir -p "$VOL/y/z" || return 1
	echo nested >"$VOL/y/z/file" || return 1
	[ ! -e "$b/rootfs/mnt" ] || return 1
	add_bind "$b" "$VOL" /mnt/x '["rbind"]' || return 1
	add_bind "$b" "$b/rootfs/mnt/x/y/z" /nested "$2" || return 1
	echo "$b"
}

# own_userns BUNDLE: the caller's user namespace, 0 -> 1000000, rootfs chowned.
own_userns() {
	update_config "$1" '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]' || return 1
	chown -R 1000000:1000000 "$1/rootfs"
}

@test "an idmapped bind whose source lies under an earlier mount: runc >= 1.2 does it, runc 1.1 gets a clear refusal" {
	b=$(nested_bundle nest '["bind", "idmap"]')
	own_userns "$b"
	create_to_file nest "$b"
	if runc_idmaps; then
		[ "$status" -eq 0 ]
		wrapper start nest
		[ "$(cexec nest cat /nested/file)" = nested ]
		[ "$(cexec nest stat -c %u:%g /nested/file)" = 0:0 ]
	else
		[ "$status" -eq 1 ]
		[[ "$output" == *"container nest: mount /nested asks for idmap, but its source $b/rootfs/mnt/x/y/z lies under /mnt/x, an earlier mount of the same spec, and exists only once runc has made that mount;"*"use runc >= 1.2, which idmaps it itself in mount order, or a source outside the container's rootfs"* ]]
		[[ "$output" != *open_tree* ]]
		[ ! -e "$RUNC_ROOT/nest" ]
	fi
	[ ! -e "$b/rootfs/mnt" ] || [ -d "$b/rootfs/mnt/x" ]
}

@test "the same without a user namespace: runc >= 1.2 does it, runc 1.1 gets the refusal" {
	b=$(nested_bundle nons '["bind"]')
	update_config "$b" '.mounts[-1] += {
		"uidMappings": [{"containerID": 0, "hostID": 1000000, "size": 65536}],
		"gidMappings": [{"containerID": 0, "hostID": 1000000, "size": 65536}]}'
	create_to_file nons "$b"
	if runc_idmaps; then
		[ "$status" -eq 0 ]
		wrapper start nons
		[ "$(cexec nons cat /nested/file)" = nested ]
		# Host root's file seen through 0 -> 1000000.
		[ "$(cexec nons stat -c %u:%g /nested/file)" = 1000000:1000000 ]
	else
		[ "$status" -eq 1 ]
		[[ "$output" == *"container nons: mount /nested asks for idmap, but its source $b/rootfs/mnt/x/y/z lies under /mnt/x"* ]]
		[ ! -e "$RUNC_ROOT/nons" ]
	fi
}

@test "a missing idmap source under no earlier mount: named, never an open_tree errno" {
	b=$(setup_bundle gone)
	own_userns "$b"
	add_bind "$b" "$TESTDIR/no-such-dir" /gone '["bind", "idmap"]'
	create_to_file gone "$b"
	[ "$status" -eq 1 ]
	[[ "$output" == *"container gone: mount /gone: its source $TESTDIR/no-such-dir does not exist (no such file or directory): create it, or fix the mount's source"* ]]
	[[ "$output" != *open_tree* ]]
	[ ! -e "$RUNC_ROOT/gone" ]
}

@test "a pool container's bind whose source lies under an earlier mount: left to runc >= 1.2 as a plain bind, logged; refused on runc 1.1" {
	b=$(nested_bundle pnest '["bind"]')
	annotate "$b" runc-userns.io/userns auto
	status=0
	wrapper --log "$TESTDIR/log.json" --log-format json create --bundle "$b" pnest </dev/null >/dev/null 2>&1 || status=$?
	if runc_idmaps; then
		[ "$status" -eq 0 ]
		wrapper start pnest
		grep -q "bind mount /nested is left to runc as a plain bind (not idmapped by runc-userns): its source $b/rootfs/mnt/x/y/z lies under /mnt/x, an earlier mount of the spec, which runc resolves in mount order" "$TESTDIR/log.json"
		[ "$(jq -r '.annotations["runc-userns.io/idmap-skipped"]' "$b/config.json")" = /nested ]
		[ "$(cexec pnest cat /nested/file)" = nested ]
		# Under /mnt/x, which is idmapped: host root's file is the pod's root's.
		[ "$(cexec pnest stat -c %u:%g /nested/file)" = 0:0 ]
	else
		[ "$status" -eq 1 ]
		jq -e 'select(.level == "error") | .msg | contains("container pnest: mount /nested: its source '"$b"'/rootfs/mnt/x/y/z lies under /mnt/x, an earlier mount of the same spec") and contains("use runc >= 1.2")' "$TESTDIR/log.json"
		[ ! -e "$RUNC_ROOT/pnest" ]
		pool_empty
	fi
}

# userns_holder UID-MAP GID-MAP: a process in a user namespace of its own
# (unshare -U), with the maps given written ("" writes none); HOLDER is
# its PID, which teardown kills.
userns_holder() {
	local i
	unshare -U sleep infinity </dev/null >/dev/null 2>&1 &
	HOLDER=$!
	# unshare runs in ours until it has unshared.
	for i in $(seq 50); do
		[ "$(readlink "/proc/$HOLDER/ns/user")" != "$(readlink /proc/self/ns/user)" ] && break
		sleep 0.1
	done
	[ "$(readlink "/proc/$HOLDER/ns/user")" != "$(readlink /proc/self/ns/user)" ] || {
		fail "unshare -U ($HOLDER) made no user namespace"
		return 1
	}
	if [ -n "$1" ]; then
		echo "$1" >"/proc/$HOLDER/uid_map" || return 1
		echo "$2" >"/proc/$HOLDER/gid_map" || return 1
	fi
}

# joining_bundle NAME USERNS-PATH: a bundle whose container joins the user
# namespace at USERNS-PATH, with no uid/gid mappings, rootfs owned by the
# holder's root (1000000:2000000), and $VOL bound at /v with the idmap
# option alone.
joining_bundle() {
	local b
	b=$(setup_bundle "$1") || return 1
	chown -R 1000000:2000000 "$b/rootfs" || return 1
	update_config "$b" '.linux.namespaces += [{"type": "user", "path": "'"$2"'"}]' || return 1
	add_bind "$b" "$VOL" /v '["bind", "idmap"]' || return 1
	echo "$b"
}

@test "a container joining a user namespace by path, with no mappings: its idmap mount takes that namespace's, uid and gid apart" {
	userns_holder "0 1000000 65536" "0 2000000 65536"
	b=$(joining_bundle joined "/proc/$HOLDER/ns/user")
	update_config "$b" '.process.capabilities |= with_entries(.value += ["CAP_CHOWN"])'
	start_container "$b" joined
	pid=$(plain_runc state joined | jq .pid)
	[ "$(readlink "/proc/$pid/ns/user")" = "$(readlink "/proc/$HOLDER/ns/user")" ]
	run -0 cexec joined stat -c '%n %u:%g' /v/root-file /v/user-file
	[ "${lines[0]}" = "/v/root-file 0:0" ]
	[ "${lines[1]}" = "/v/user-file 1000:1000" ]
	run -0 cexec joined sh -c 'echo x >/v/by-joined && mkdir /v/dir && chown 1000:1000 /v/dir'
	[ "$(stat -c %u:%g "$VOL/by-joined")" = 0:0 ]
	[ "$(stat -c %u:%g "$VOL/dir")" = 1000:1000 ]
	if runc_idmaps; then
		# runc reads the mappings from the path itself: the spec as given.
		[ "$(jq -c '.mounts[-1]' "$b/config.json")" = '{"destination":"/v","type":"bind","source":"'"$VOL"'","options":["bind","idmap"]}' ]
		[ "$(jq -c '.linux.uidMappings' "$b/config.json")" = null ]
	else
		# runc 1.1 needs the namespace's mappings in the spec to run in it.
		[ "$(jq -c '.linux.uidMappings' "$b/config.json")" = '[{"containerID":0,"hostID":1000000,"size":65536}]' ]
		[ "$(jq -c '.linux.gidMappings' "$b/config.json")" = '[{"containerID":0,"hostID":2000000,"size":65536}]' ]
	fi
	[ -z "$(staging_mounts)" ]
	pool_empty
	# A second create of the bundle starts from the caller's spec.
	wrapper delete --force joined
	start_container "$b" joined
	[ "$(cexec joined stat -c %u:%g /v/root-file)" = 0:0 ]
}

@test "the same through a pin of the namespace whose holder is gone" {
	userns_holder "0 1000000 65536" "0 2000000 65536"
	touch "$TESTDIR/userns"
	mount --bind "/proc/$HOLDER/ns/user" "$TESTDIR/userns"
	kill "$HOLDER"
	wait "$HOLDER" || true
	HOLDER=
	b=$(joining_bundle pinned "$TESTDIR/userns")
	create_to_file pinned "$b"
	if [ "$status" = 0 ]; then
		wrapper start pinned
		run cexec pinned stat -c %u:%g /v/root-file /v/user-file
		wrapper delete --force pinned
	fi
	umount "$TESTDIR/userns"
	[ "$status" = 0 ]
	[ "${lines[0]}" = 0:0 ]
	[ "${lines[1]}" = 1000:1000 ]
}

@test "joining a user namespace whose maps were never written, with an idmap mount: refused, naming the container, the namespace and what to do" {
	userns_holder "" ""
	b=$(joining_bundle nomap "/proc/$HOLDER/ns/user")
	create_to_file nomap "$b"
	[ "$status" -eq 1 ]
	[[ "$output" == *"container nomap: an idmap bind mount without uid/gid mappings takes those of the user namespace the container joins, /proc/$HOLDER/ns/user, whose mappings cannot be read or used: uid_map: empty: no mapping was written to the namespace; write the namespace's uid_map and gid_map before the container is created, or give the mount uidMappings and gidMappings"* ]]
	[ ! -e "$RUNC_ROOT/nomap" ]
	[ -z "$(staging_mounts)" ]
}

@test "joining a user namespace that maps into the pool, with an idmap mount: refused as caller mappings into the pool are" {
	userns_holder "0 $POOL_BASE 65536" "0 $POOL_BASE 65536"
	b=$(joining_bundle inpool "/proc/$HOLDER/ns/user")
	create_to_file inpool "$b"
	[ "$status" -eq 1 ]
	[[ "$output" == *"container inpool: the user namespace it joins, /proc/$HOLDER/ns/user, uid_map maps container IDs 0-65535 to host IDs $POOL_BASE-$((POOL_BASE + 65535)), inside the user namespace pool"*"those host IDs belong to pods and are never shared"* ]]
	[ ! -e "$RUNC_ROOT/inpool" ]
	pool_empty
}
