#!/usr/bin/env bash
# node.sh DIR: the init of the cluster suite's one-node cluster, run by
# cluster.bash as `unshare --mount --net --propagation private node.sh DIR`.
#
# The node is this mount and network namespace, no more. What a node's
# daemons and the installer DaemonSet write to the paths a node has (/etc,
# /var, /opt, /usr/local/bin) lands in copy-on-write overlays under DIR, /run
# is a tmpfs of its own, and the node's network (loopback, the node's
# address, the pods' bridge, their veths and routes) lives and dies with the
# namespace: nothing of it reaches the host's, and every port is the
# suite's own. etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd and the kubelet run here, each restarted when
# it exits (as systemd's Restart=always would), until DIR/stop exists.
# containerd's pid is in /run/k8s-e2e/containerd.pid, which the installer
# DaemonSet's restart command kills (cluster.bash sets it so).
#
# DIR/env (written by cluster.bash) sets PATH, NODE_IP and the binaries.
set -euo pipefail
D=$1
# shellcheck source=/dev/null
. "$D/env"

mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/k8s-e2e
for dir in /etc /var /opt /usr/local/bin; do
	o=$D/overlay/${dir//\//_}
	mkdir -p "$o/upper" "$o/work"
	mount -t overlay overlay -o "lowerdir=$dir,upperdir=$o/upper,workdir=$o/work" "$dir"
done
# The node's CNI binaries where containerd looks by default: a drop-in
# that sets a CRI table replaces the main file's (contrib/README.md), so
# the node keeps containerd's CRI defaults, as a kubeadm node does.
mkdir -p /opt/cni/bin /etc/cni/net.d
ln -sf /usr/lib/cni/* /opt/cni/bin/
cp "$D/10-bridge.conflist" /etc/cni/net.d/
# Pods' volumes (mountPropagation) and containerd's netns pins need shared
# mounts: a peer group of this namespace's own, which the host is no part of.
mount --make-rshared /

# The node's address on its loopback (no dummy or veth needed): what the
# kubelet registers and the API server advertises, and reaches the kubelet at.
ip link set lo up
ip addr add "$NODE_IP/32" dev lo

# supervise NAME CMD...: run CMD, logging to DIR/logs/NAME.log, again
# whenever it exits, until DIR/stop exists; its pid in /run/k8s-e2e/NAME.pid.
supervise() {
	local name=$1
	shift
	(
		while [ ! -e "$D/stop" ]; do
			"$@" >>"$D/logs/$name.log" 2>&1 &
			echo $! >"/run/k8s-e2e/$name.pid"
			wait $! || true
			echo "node.sh: $name exited at $(date +%T.%N)" >>"$D/logs/$name.log"
			sleep 0.5
		done
	) &
}
mkdir -p "$D/logs"
supervise etcd "$ETCD" --name node --data-dir "$D/etcd" --unsafe-no-fsync \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster node=http://127.0.0.1:2380 --log-level warn
supervise kube-apiserver "$K8S/kube-apiserver" $(cat "$D/apiserver.flags")
supervise kube-controller-manager "$K8S/kube-controller-manager" $(cat "$D/controller-manager.flags")
supervise kube-scheduler "$K8S/kube-scheduler" $(cat "$D/scheduler.flags")
supervise containerd containerd --config "$D/containerd.toml"
supervise kubelet "$K8S/kubelet" $(cat "$D/kubelet.flags")
echo ready >"$D/node.ready"
wait
