#!/usr/bin/env bash
# Builds critest, the CRI conformance suite of cri-tools, into DEST for
# tests/critest. critest is a Go test binary (`go test -c`, as cri-tools'
# own Makefile makes it), so `go install` cannot make it: a scratch module
# requires sigs.k8s.io/cri-tools at VERSION (from the Go module cache or
# proxy), which brings cri-tools' own go.mod versions, and compiles the
# test of its cmd/critest. Nothing of it lands in this repository. Skips
# the build when DEST already holds that version.
# Usage: install-critest.sh VERSION DEST-DIR   (e.g. v1.34.0 .cache/critest-v1.34.0)
set -euo pipefail
version=$1 dest=$2
# No early-exiting readers (grep -q) under pipefail.
if [ -x "$dest/critest" ] && "$dest/critest" -version 2>/dev/null | grep -x "critest version: $version" >/dev/null; then
	exit 0
fi
GO=${GO:-go}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd) # the build runs in a scratch module
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
echo "install-critest: building critest $version into $dest"
"$GO" mod init critest-build 2>/dev/null
GOFLAGS=-mod=mod "$GO" get "sigs.k8s.io/cri-tools@$version"
GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" test -c -trimpath \
	-ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=$version" \
	-o "$dest/critest.tmp" sigs.k8s.io/cri-tools/cmd/critest
mv "$dest/critest.tmp" "$dest/critest"
