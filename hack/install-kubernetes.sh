#!/usr/bin/env bash
# Builds Kubernetes VERSION (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kubectl) into DEST for the cluster suite
# (tests/k8s). k8s.io/kubernetes cannot be `go install`ed or built as a
# dependency as it is: its go.mod replaces every k8s.io/* staging module
# with ./staging/src/..., which the module zip does not hold. A scratch
# build module requires k8s.io/kubernetes and replaces each staging module
# with its published v0.MINOR.PATCH of the same release instead. Everything
# comes from the Go module proxy; nothing of it lands in this repository.
# The version is stamped as Kubernetes's own hack/lib/version.sh stamps it,
# so that `kubectl version` and the node's kubeletVersion say VERSION.
# Kubernetes's own pause (build/pause/linux/pause.c, in the module zip) is
# built beside them with BUILD_CC (musl-gcc, static): the suite's sandbox
# image, so that a pod's PID 1 is the pause process its users know.
# Skips the build when DEST already holds that version.
# Usage: install-kubernetes.sh VERSION DEST-DIR   (e.g. v1.34.4 .cache/kubernetes-v1.34.4)
set -euo pipefail
version=$1 dest=$2
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
built() {
	local b
	for b in "${bins[@]}" pause; do [ -x "$dest/$b" ] || return 1; done
	# No early-exiting readers (grep -q) under pipefail.
	"$dest/kubelet" --version 2>/dev/null | grep -E "^Kubernetes ${version}\$" >/dev/null
}
built && exit 0
GO=${GO:-go}
export GOFLAGS=-mod=mod
src=$("$GO" mod download -json "k8s.io/kubernetes@$version" | jq -r .Dir)
# v1.34.4 -> the staging modules' v0.34.4.
staging=v0.${version#v1.}
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
{
	echo "module runc-userns.test/kubernetes-build"
	echo
	sed -n 's/^go \(.*\)/go \1/p' "$src/go.mod"
	echo
	echo "require k8s.io/kubernetes $version"
	echo
	echo "replace ("
	sed -n -E "s#^\s*(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\t\1 => \1 $staging#p" "$src/go.mod"
	echo ")"
} >"$work/go.mod"
n=$(grep -c " => k8s.io/" "$work/go.mod") || true
if [ "$n" -lt 20 ]; then
	echo "install-kubernetes: found only $n staging modules in k8s.io/kubernetes@$version's go.mod; its replace block changed shape" >&2
	exit 1
fi
ver=${version#v}
pkgs=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
ldflags="-s -w"
for p in "${pkgs[@]}"; do
	ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=${ver%%.*} -X $p.gitMinor=$(echo "$ver" | cut -d. -f2)"
	ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
echo "install-kubernetes: building ${bins[*]} $version (staging $staging) into $dest"
mkdir -p "$dest"
dest=$(cd "$dest" && pwd) # the build runs in $work
(
	cd "$work"
	CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" -o "$dest/.build/" \
		$(printf 'k8s.io/kubernetes/cmd/%s ' "${bins[@]}")
)
mv "$dest/.build/"* "$dest/"
rmdir "$dest/.build"
"${BUILD_CC:-musl-gcc}" -Os -static -DVERSION="$version" -o "$dest/pause" "$src/build/pause/linux/pause.c"
built || { echo "install-kubernetes: $dest/kubelet --version does not say Kubernetes $version" >&2; exit 1; }
"$dest/kubelet" --version
