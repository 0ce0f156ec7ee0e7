#!/usr/bin/env bats
# Overlay rootfs, as containerd's shim and podman hand it to the runtime:
# lower layers and the upper directory idmapped, the overlay rebuilt on
# them with a work directory of its own, nothing chowned.

load helpers

setup() {
	requires root
	setup_env
	L=$TESTDIR/layers
	mkdir -p "$L"/{lower1,lower2,upper,work}
	"$ROOT_DIR/hack/mkrootfs.sh" "$L/lower1"
	mkdir -p "$L/lower2/etc"
	echo two >"$L/lower2/etc/layer2"
	echo user >"$L/lower2/etc/user-file"
	chown 1000:1000 "$L/lower2/etc/user-file"
	B=$TESTDIR/ovb
	mkdir -p "$B/rootfs"
	(cd "$B" && "$REAL_RUNC" spec)
	update_config "$B" '.process.terminal = false | .root.readonly = false | .process.args = ["sleep", "infinity"]'
	annotate "$B" runc-userns.io/userns auto
}

mount_rootfs() {
	mount -t overlay overlay -o "lowerdir=$L/lower2:$L/lower1,upperdir=$L/upper,workdir=$L/work${1:+,$1}" "$B/rootfs"
}

teardown() {
	[ -n "${TESTDIR:-}" ] || return 0
	"$WRAPPER" --root "$RUNC_ROOT" delete --force ov >/dev/null 2>&1 || true
	umount "$B/rootfs" 2>/dev/null || true
	teardown_env
}

@test "overlay rootfs: layers look root's, writes land in the upper dir as host root, nothing chowned" {
	mount_rootfs index=off
	before=$(cd "$L" && find lower1 lower2 -printf '%p %u:%g %m\n' | sha256sum)
	start_container "$B" ov
	[ "$(cexec ov stat -c %u:%g /bin/busybox)" = 0:0 ]
	[ "$(cexec ov stat -c %u:%g /etc/layer2)" = 0:0 ]
	[ "$(cexec ov stat -c %u:%g /etc/user-file)" = 1000:1000 ]
	[ "$(cexec ov cat /etc/layer2)" = two ]
	cexec ov sh -c 'echo new >/newfile && echo changed >/etc/layer2 && mkdir /tmp/d'
	# Copy-up and new files: in the upper dir, owned by host root, as
	# without a user namespace (the upper dir is idmapped too); the upper
	# dir itself is not chowned.
	[ "$(stat -c %u:%g "$L/upper/newfile")" = 0:0 ]
	[ "$(stat -c %u:%g "$L/upper/etc/layer2")" = 0:0 ]
	[ "$(stat -c %u:%g "$L/upper/tmp/d")" = 0:0 ]
	[ "$(stat -c %u:%g "$L/upper")" = 0:0 ]
	[ "$(cat "$L/lower2/etc/layer2")" = two ]
	[ "$(cd "$L" && find lower1 lower2 -printf '%p %u:%g %m\n' | sha256sum)" = "$before" ]
	# The container's view is consistent: what it wrote is root's.
	[ "$(cexec ov stat -c %u:%g /newfile)" = 0:0 ]
	[ -z "$(staging_mounts)" ]
	# The original overlay still copies up (podman cp and nerdctl cp write
	# through it): the staged one has a work directory of its own.
	echo host >"$B/rootfs/bin/from-host"
	[ "$(cat "$L/upper/bin/from-host")" = host ]
	[ -d "$L/work.runc-userns" ]
}

@test "overlay rootfs with a non-empty upper: what the host wrote there is seen through the mapping" {
	# As podman leaves it before runc runs: /etc copied up by host root
	# (its /etc/mtab), a mount point made there, a file of user 1000's.
	mount_rootfs
	ln -sfn /proc/mounts "$B/rootfs/etc/mtab"
	touch "$B/rootfs/etc/hostname"
	echo user >"$B/rootfs/from-user"
	chown 1000:1000 "$B/rootfs/from-user"
	[ "$(stat -c %u:%g "$L/upper/etc")" = 0:0 ]
	start_container "$B" ov
	[ "$(cexec ov stat -c '%n %u:%g' /etc /etc/hostname /from-user)" = "$(printf '/etc 0:0\n/etc/hostname 0:0\n/from-user 1000:1000')" ]
	# The pod's root writes in the directories host root made.
	cexec ov sh -c 'echo ok >/etc/again && echo new >/etc/hostname'
	[ "$(stat -c %u:%g "$L/upper/etc/again")" = 0:0 ]
	[ "$(cat "$L/upper/etc/hostname")" = new ]
}

@test "overlay rootfs mounted with index=on: refused before runc, saying to mount it with index=off; nothing left" {
	mount_rootfs index=on
	create_to_file ov "$B"
	[ "$status" = 1 ]
	[[ "$output" == *"container ov: "*"index=on"*"locks its upper directory $L/upper"*"Mount the rootfs with index=off"* ]]
	[[ "$output" != *"permission denied"* ]]
	[ ! -e "$RUNC_ROOT/ov" ]
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(staging_mounts)" ]
}

@test "overlay rootfs mounted nosuid,nodev: the rebuilt overlay keeps both" {
	# (noexec would keep the container from starting; ro from runc's
	# mkdirs: the same flags, read the same way.)
	mount_rootfs nosuid,nodev
	findmnt -no OPTIONS "$B/rootfs" | grep -Eq '(^|,)nosuid(,|$)'
	start_container "$B" ov
	opts=$(cexec ov awk '$5 == "/" {print $6}' /proc/self/mountinfo)
	[[ ",$opts," == *,nosuid,* ]] || fail "the container's / is mounted $opts, want nosuid"
	[[ ",$opts," == *,nodev,* ]] || fail "the container's / is mounted $opts, want nodev"
}

@test "overlay rootfs: delete leaves no staging mount or directory; the original overlay is untouched" {
	mount_rootfs
	start_container "$B" ov
	wrapper delete --force ov
	[ -z "$(staging_mounts)" ]
	[ -z "$(ls "$STATE_DIR/containers" 2>/dev/null)" ]
	mountpoint -q "$B/rootfs"
	[ "$(pool_json | jq length)" = 0 ]
}

@test "overlay rootfs of 60 layers as containerd mounts it (lowerdir relative to its snapshots directory): the pod runs on all of them" {
	# containerd's mount package, for options near a page: it mounts from
	# its snapshots directory with lowerdir=N/fs:..., and mountinfo keeps
	# them relative. The staged overlay's options, with our layer paths,
	# would not fit a page either.
	S=$TESTDIR/snapshots
	mkdir -p "$S/1" "$S/61/fs" "$S/61/work"
	mv "$L/lower1" "$S/1/fs"
	lower=1/fs
	for i in $(seq 2 60); do
		mkdir -p "$S/$i/fs/etc"
		echo "$i" >"$S/$i/fs/etc/layer$i"
		lower=$i/fs:$lower
	done
	(cd "$S" && mount -t overlay overlay -o "lowerdir=$lower,upperdir=$S/61/fs,workdir=$S/61/work,index=off" "$B/rootfs")
	grep -q " $B/rootfs .*lowerdir=60/fs:59/fs:" /proc/self/mountinfo
	start_container "$B" ov
	# The staged overlay named its layers through a descriptor: the full
	# paths of 60 layers do not fit the page mount(2) reads.
	cexec ov cat /proc/self/mountinfo | grep -q ' / / .*lowerdir=/proc/self/fd/[0-9]*/0:/proc/self/fd/'
	[ "$(cexec ov cat /etc/layer2 /etc/layer37 /etc/layer60)" = "$(printf '2\n37\n60')" ]
	[ "$(cexec ov stat -c %u:%g /etc/layer37 /bin/busybox)" = "$(printf '0:0\n0:0')" ]
	cexec ov sh -c 'echo new >/newfile'
	[ "$(stat -c %u:%g "$S/61/fs/newfile")" = 0:0 ]
	[ -z "$(staging_mounts)" ]
	wrapper delete --force ov
	[ -z "$(ls "$STATE_DIR/containers" 2>/dev/null)" ]
}

@test "overlay rootfs as containers/storage mounts many layers (every path relative to its overlay directory): the pod runs" {
	# CRI-O and podman: lowerdir=l/<link>:...,upperdir=<id>/diff,
	# workdir=<id>/work from their overlay directory, at <id>/merged.
	S=$TESTDIR/overlay
	mkdir -p "$S/l" "$S/a" "$S/b/diff/etc" "$S/c/diff" "$S/c/work" "$S/c/merged"
	mv "$L/lower1" "$S/a/diff"
	echo b >"$S/b/diff/etc/layer-b"
	ln -s ../a/diff "$S/l/AAA"
	ln -s ../b/diff "$S/l/BBB"
	(cd "$S" && mount -t overlay overlay -o "lowerdir=l/BBB:l/AAA,upperdir=c/diff,workdir=c/work,index=off" "$S/c/merged")
	grep -q " $S/c/merged .*lowerdir=l/BBB:l/AAA,upperdir=c/diff" /proc/self/mountinfo
	update_config "$B" '.root.path = "'"$S/c/merged"'"'
	start_container "$B" ov
	[ "$(cexec ov cat /etc/layer-b)" = b ]
	[ "$(cexec ov stat -c %u:%g /etc/layer-b /bin/busybox)" = "$(printf '0:0\n0:0')" ]
	cexec ov sh -c 'echo new >/newfile'
	[ "$(stat -c %u:%g "$S/c/diff/newfile")" = 0:0 ]
	wrapper delete --force ov
	umount "$S/c/merged"
	[ -z "$(staging_mounts)" ]
}

@test "overlay rootfs with a relative lower layer that cannot be placed: refused, naming it; nothing left" {
	mkdir -p "$TESTDIR/elsewhere/1" "$TESTDIR/up/fs" "$TESTDIR/up/work"
	mv "$L/lower1" "$TESTDIR/elsewhere/1/fs"
	(cd "$TESTDIR/elsewhere" && mount -t overlay overlay -o "lowerdir=1/fs,upperdir=$TESTDIR/up/fs,workdir=$TESTDIR/up/work" "$B/rootfs")
	create_to_file ov "$B"
	[ "$status" = 1 ]
	[[ "$output" == *"container ov: rootfs $B/rootfs: overlay mounted at $B/rootfs: lower layer 0 is the relative path \"1/fs\" (containerd and containers/storage write them so"* ]]
	[ ! -e "$RUNC_ROOT/ov" ]
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(staging_mounts)" ]
}
