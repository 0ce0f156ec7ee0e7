#!/usr/bin/env bash
# Builds containerd VERSION (containerd, containerd-shim-runc-v2 and ctr)
# into DEST for a second pass of the containerd suite: Debian 12 ships 1.6,
# and 1.7 is the other release nodes without user namespace support of
# their own run. containerd cannot be `go install`ed (its go.mod has
# exclude directives); the source comes from the Go module cache and is
# built in a scratch copy: nothing of it lands in this repository. Skips
# the build when DEST already holds that version.
# Usage: install-containerd.sh VERSION DEST-DIR   (e.g. v1.7.35 .cache/containerd-v1.7.35)
set -euo pipefail
version=$1 dest=$2
# No early-exiting readers (grep -q) under pipefail.
if [ -x "$dest/containerd" ] && [ -x "$dest/containerd-shim-runc-v2" ] && [ -x "$dest/ctr" ] &&
	"$dest/containerd" --version 2>/dev/null | grep -E " v?${version#v}( |$)" >/dev/null; then
	exit 0
fi
GO=${GO:-go}
export GOFLAGS=-mod=mod
# containerd 2 is the module's /v2.
module=github.com/containerd/containerd
case $version in v2.*) module=$module/v2 ;; esac
src=$("$GO" mod download -json "$module@$version" | jq -r .Dir)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$src/." "$work"
chmod -R u+w "$work"
echo "install-containerd: building containerd $version into $dest"
mkdir -p "$dest"
dest=$(cd "$dest" && pwd) # the build runs in $work
# Without cgo and the storage drivers that need C headers (btrfs,
# devmapper): the suite uses the overlayfs snapshotter. The version string
# is set as containerd's own Makefile sets it.
(cd "$work" && CGO_ENABLED=0 "$GO" build -trimpath -tags "no_btrfs no_devmapper no_zfs no_aufs" \
	-ldflags "-X $module/version.Version=$version" \
	-o "$dest/.build/" ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr)
mv "$dest/.build/"* "$dest/"
rmdir "$dest/.build"
"$dest/containerd" --version
