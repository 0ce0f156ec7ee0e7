#!/usr/bin/env bash
# Builds upstream runc VERSION into DIR (from the Go module proxy; needs
# libseccomp-dev and pkg-config, see install-deps.sh). Skips the build when
# DIR already holds that version.
set -euo pipefail
version=$1 dir=$2
# No early-exiting readers (grep -q, head) under pipefail: runc would die
# of SIGPIPE and fail the pipeline.
# Built as runc's release binaries are, with seccomp (libseccomp-dev, from
# make deps): containerd 2 gives every sandbox the RuntimeDefault profile,
# which a runc built without it refuses ("seccomp not supported"). A
# binary without its libseccomp line is one of earlier, seccomp-less
# builds, and is built again.
if [ -x "$dir/runc" ] && "$dir/runc" --version 2>/dev/null | grep "^runc version ${version#v}\$" >/dev/null &&
	"$dir/runc" --version | grep '^libseccomp: ' >/dev/null; then
	exit 0
fi
mkdir -p "$dir"
echo "install-runc-upstream: building runc $version into $dir"
GOBIN=$dir CGO_ENABLED=1 go install -tags seccomp "github.com/opencontainers/runc@$version"
"$dir/runc" --version | sed -n 1p
