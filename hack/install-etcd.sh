#!/usr/bin/env bash
# Builds etcd VERSION into DEST for the cluster suite (tests/k8s): Debian 12
# packages etcd 3.4, and kube-apiserver 1.34 wants 3.5 or later. etcd's
# server module cannot be `go install`ed (its go.mod replaces its sibling
# modules with relative paths); a scratch module that requires it builds its
# main package against the published siblings of the same release, from the
# Go module proxy. Nothing of it lands in this repository. Skips the build
# when DEST already holds that version.
# Usage: install-etcd.sh VERSION DEST-DIR   (e.g. v3.6.4 .cache/etcd-v3.6.4)
set -euo pipefail
version=$1 dest=$2
# No early-exiting readers (grep -q) under pipefail.
if [ -x "$dest/etcd" ] && "$dest/etcd" --version 2>/dev/null | grep -E "^etcd Version: ${version#v}\$" >/dev/null; then
	exit 0
fi
GO=${GO:-go}
export GOFLAGS=-mod=mod
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'module runc-userns.test/etcd-build\n\ngo 1.23\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$version" >"$work/go.mod"
echo "install-etcd: building etcd $version into $dest"
mkdir -p "$dest"
dest=$(cd "$dest" && pwd) # the build runs in $work
(cd "$work" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$dest/etcd.tmp" go.etcd.io/etcd/server/v3)
mv "$dest/etcd.tmp" "$dest/etcd"
"$dest/etcd" --version
