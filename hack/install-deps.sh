#!/usr/bin/env bash
# Installs what the demo and the tests need from Debian's packages, only if
# something is missing (apt-get update runs at most once).
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null 2>&1; }
installed() { dpkg -s "$1" >/dev/null 2>&1; }
installed runc || need+=(runc)
have bats || need+=(bats)
installed busybox-static || need+=(busybox-static)
have getsubids || need+=(uidmap)
have jq || need+=(jq)
have pkg-config || need+=(pkg-config)
installed libseccomp-dev || need+=(libseccomp-dev)
have gcc || need+=(gcc)
# make build links statically with musl (libuserns's holder and the
# signal forwarder are C; Makefile's BUILD_CC says why musl). The unit tests' race
# detector needs glibc: libc.a is in libc6-dev, which gcc only recommends.
have musl-gcc || need+=(musl-tools)
installed libc6-dev || need+=(libc6-dev)
# containerd.bats: containerd (with its runc.v2 shim and ctr) and the CNI
# plugins its pods use (loopback, static); critest's and the cluster
# suite's pods: bridge, host-local, and portmap (critest's hostPort
# specs), which runs iptables (a dependency of the plugins' package) in
# containerd's network namespace. ip (iproute2) sets up those namespaces.
have containerd || need+=(containerd)
for p in loopback static bridge host-local portmap; do
	if [ ! -x "/usr/lib/cni/$p" ]; then
		need+=(containernetworking-plugins)
		break
	fi
done
have iptables || need+=(iptables)
have ip || need+=(iproute2)
# contrib.bats parses contrib's YAML and TOML (tomllib is in python3 >= 3.11).
installed python3-yaml || need+=(python3-yaml)
# podman.bats: podman 4.3.1 and conmon (a dependency). Kernel overlayfs
# and vfs storage, --network none and ns: need nothing else: no
# fuse-overlayfs, netavark, CNI plugins or catatonit (recommends, not
# installed).
have podman || need+=(podman)
# hostdev.bats: crun 1.8.1 chowns a user-namespaced container's stdio; the
# wrapper's guard is tested with it. podman.bats names its runtime
# explicitly, so podman preferring crun when installed changes nothing there.
installed crun || need+=(crun)
if [ "${#need[@]}" -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: need root to install: ${need[*]}" >&2
		exit 1
	fi
	echo "install-deps: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
