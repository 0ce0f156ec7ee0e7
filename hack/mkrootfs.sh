#!/usr/bin/env bash
# mkrootfs.sh DIR: a minimal busybox rootfs (what `runc spec` bundles use),
# owned by host root, as an unpacked image layer would be.
set -euo pipefail
dir=$1
mkdir -p "$dir"/{bin,dev,etc,proc,sys,tmp,root,var/tmp}
chmod 1777 "$dir/tmp" "$dir/var/tmp"
cp /bin/busybox "$dir/bin/busybox"
for applet in $("$dir/bin/busybox" --list); do
	[ -e "$dir/bin/$applet" ] || ln -s busybox "$dir/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$dir/etc/passwd"
echo 'root:x:0:' >"$dir/etc/group"
