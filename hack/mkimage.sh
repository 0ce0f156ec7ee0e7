#!/usr/bin/env bash
# mkimage.sh [--bare] [--add SRC:DST]... [--tree DIR] [--user USER] OUT.tar NAME CMD...:
# a one-layer OCI image archive (image layout, uncompressed layer) of the
# busybox rootfs of mkrootfs.sh, named NAME (e.g. localhost/busybox:test;
# several names of one image comma-separated) for `ctr images import`.
# --bare starts from an empty rootfs instead (a pause image); --add copies
# the file SRC to DST in the rootfs; --tree copies the directory DIR over
# the rootfs as it is (modes, setuid bits, hard links: critest's stand-ins,
# tests/critest); --user sets the image's User. No registry needed: tar,
# sha256sum and jq write it.
set -euo pipefail
bare="" adds=() tree="" user=""
while [ $# -gt 0 ]; do
	case $1 in
	--bare) bare=1 ;;
	--add) adds+=("$2"); shift ;;
	--tree) tree=$2; shift ;;
	--user) user=$2; shift ;;
	*) break ;;
	esac
	shift
done
out=$1 name=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "$bare" ]; then
	mkdir "$work/rootfs"
else
	"$here/mkrootfs.sh" "$work/rootfs"
fi
for a in "${adds[@]}"; do
	install -D -m 0755 "${a%%:*}" "$work/rootfs/${a#*:}"
done
if [ -n "$tree" ]; then
	# Replacing, not writing through, what is there: an applet's symlink.
	cp -a --remove-destination "$tree/." "$work/rootfs/"
fi
mkdir -p "$work/layout/blobs/sha256"
blob() { # blob FILE MEDIATYPE: store FILE, print its descriptor
	local d s
	d=$(sha256sum "$1" | cut -d' ' -f1)
	s=$(stat -c %s "$1")
	mv "$1" "$work/layout/blobs/sha256/$d"
	jq -cn --arg m "$2" --arg d "sha256:$d" --argjson s "$s" '{mediaType: $m, digest: $d, size: $s}'
}
tar --numeric-owner --sort=name --mtime=@0 -C "$work/rootfs" -cf "$work/layer.tar" .
diff_id=sha256:$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
layer=$(blob "$work/layer.tar" application/vnd.oci.image.layer.v1.tar)
# CMD as a JSON array (one argument a line): jq would take a "-c" or "-f"
# among --args for its own.
cmd=$(printf '%s\n' "$@" | jq -R . | jq -cs .)
jq -cn --arg diff "$diff_id" --arg user "$user" --argjson cmd "$cmd" '{architecture: "amd64", os: "linux",
	config: ({Cmd: $cmd, Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
		+ if $user != "" then {User: $user} else {} end),
	rootfs: {type: "layers", diff_ids: [$diff]}}' >"$work/config.json"
config=$(blob "$work/config.json" application/vnd.oci.image.config.v1+json)
jq -cn --argjson c "$config" --argjson l "$layer" \
	'{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config: $c, layers: [$l]}' >"$work/manifest.json"
manifest=$(blob "$work/manifest.json" application/vnd.oci.image.manifest.v1+json)
jq -cn --argjson m "$manifest" --arg names "$name" \
	'{schemaVersion: 2, manifests: [$names | split(",")[] as $name
		| $m + {annotations: {"io.containerd.image.name": $name, "org.opencontainers.image.ref.name": ($name | sub(".*:"; ""))}}]}' >"$work/layout/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$work/layout/oci-layout"
tar -C "$work/layout" -cf "$out" .
