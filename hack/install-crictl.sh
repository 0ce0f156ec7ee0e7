#!/usr/bin/env bash
# Builds crictl (cri-tools) into DEST for the containerd suite. cri-tools
# cannot be `go install`ed (its go.mod replaces k8s.io/* with paths inside
# the kubernetes repository); its replace block is pointed at the published
# k8s.io/* modules of the same Kubernetes release instead. The source comes
# from the Go module cache and is built in a scratch copy: nothing of it
# lands in this repository.
# Usage: install-crictl.sh VERSION DEST-DIR   (e.g. v1.26.1 .cache/crictl-v1.26.1)
set -euo pipefail
version=$1 dest=$2
k8s=v0.26.0 # the k8s.io/* release cri-tools $version was cut against
if [ -x "$dest/crictl" ]; then
	exit 0
fi
GO=${GO:-go}
export GOFLAGS=-mod=mod
src=$("$GO" mod download -json "github.com/kubernetes-sigs/cri-tools@$version" | jq -r .Dir)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$src/." "$work"
chmod -R u+w "$work"
rm -rf "$work/vendor"
sed -i -E "s#^(\s*k8s\.io/[a-z-]+) => k8s\.io/kubernetes/staging/src/k8s\.io/[a-z-]+ v0\.0\.0-[0-9a-f-]+\$#\1 => \1 $k8s#" "$work/go.mod"
if grep -q 'kubernetes/staging' "$work/go.mod"; then
	echo "install-crictl: cri-tools $version's go.mod still points into kubernetes/staging after the rewrite" >&2
	exit 1
fi
echo "install-crictl: building crictl $version (k8s.io/* $k8s) into $dest"
mkdir -p "$dest"
(cd "$work" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-X github.com/kubernetes-sigs/cri-tools/pkg/version.Version=$version" -o "$dest/crictl.tmp" ./cmd/crictl)
mv "$dest/crictl.tmp" "$dest/crictl"
