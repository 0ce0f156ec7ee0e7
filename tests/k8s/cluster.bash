# The cluster suite's one-node Kubernetes cluster: cluster_up makes it in a
# temp dir $D (certificates, configs, images) and starts tests/k8s/node.sh
# in a mount and network namespace of its own (what that namespace holds:
# node.sh); cluster_down stops it and leaves the host as it found it. kc runs
# kubectl as the cluster's admin, inside the node's network namespace (the
# API server listens on the node's 127.0.0.1 only). Load after helpers.
# Users: tests/k8s/setup_suite.bash, tests/k8s/*.bats.

K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.4}
CONTAINERD17_VERSION=${CONTAINERD17_VERSION:-v1.7.35}
CONTAINERD2_VERSION=${CONTAINERD2_VERSION:-v2.2.9}
RUNC_UPSTREAM_VERSION=${RUNC_UPSTREAM_VERSION:-v1.5.2}
K8S=${K8S:-$ROOT_DIR/.cache/kubernetes-$K8S_VERSION}  # make deps-k8s
ETCD=${ETCD:-$ROOT_DIR/.cache/etcd-$ETCD_VERSION/etcd} # make deps-k8s
CRICTL=${CRICTL:-$ROOT_DIR/.cache/crictl-v1.26.1/crictl} # make deps-crictl
# The node: K8S_E2E_NODE=ours (the default) is the node runc-userns is
# for, containerd 1.7 and Debian's runc 1.1.5, where KEP-127's own path is
# not available; K8S_E2E_NODE=native is containerd 2 and upstream runc,
# the stack an operator would otherwise pick (make deps-containerd,
# deps-upstream). The pods: K8S_E2E_PODS=pooled (the default) asks
# runc-userns (its RuntimeClass and annotation), K8S_E2E_PODS=hostusers
# asks Kubernetes (hostUsers: false) on the node's default handler.
K8S_E2E_NODE=${K8S_E2E_NODE:-ours}
K8S_E2E_PODS=${K8S_E2E_PODS:-pooled}
if [ "$K8S_E2E_NODE" = native ]; then
	CONTAINERD_DIR=$ROOT_DIR/.cache/containerd-$CONTAINERD2_VERSION
	NODE_RUNC=$ROOT_DIR/.cache/runc-$RUNC_UPSTREAM_VERSION/runc
	CONTAINERD_CONFIG_VERSION=3 CRI_PLUGIN=io.containerd.cri.v1.runtime
	CONTRIB_DROPIN=$ROOT_DIR/contrib/containerd/runc-userns.v3.toml
else
	CONTAINERD_DIR=$ROOT_DIR/.cache/containerd-$CONTAINERD17_VERSION
	NODE_RUNC=/usr/sbin/runc
	CONTAINERD_CONFIG_VERSION=2 CRI_PLUGIN=io.containerd.grpc.v1.cri
	CONTRIB_DROPIN="" # the ConfigMap's, in contrib/kubernetes/daemonset.yaml
fi
# The one CRI setting this node needs: this machine withholds
# CAP_SYS_RESOURCE from every process, so no runtime may lower an
# oom_score_adj (containerd asks -998 for every sandbox). A drop-in that has
# a CRI table replaces the main file's (contrib/README.md), so the operator
# puts the node's CRI settings into the DaemonSet's drop-in too: install
# appends it there.
NODE_CRI="[plugins.\"$CRI_PLUGIN\"]
  restrict_oom_score_adj = true"
NODE=k8s-e2e-node
NODE_IP=10.244.76.1
POD_CIDR=10.244.77.0/24
# The installer image: what contrib/kubernetes/daemonset.yaml installs.
INSTALLER=localhost/runc-userns-installer

# kc ARGS...: kubectl as the cluster's admin.
kc() {
	nsenter --net="/proc/$(cat "$D/node.pid")/ns/net" -- "$K8S/kubectl" --kubeconfig "$D/admin.kubeconfig" "$@"
}

# node_exec CMD...: CMD on the node: in its mount and network namespace.
node_exec() {
	nsenter --mount="/proc/$(cat "$D/node.pid")/ns/mnt" --net="/proc/$(cat "$D/node.pid")/ns/net" -- "$@"
}

# ctr_node ARGS...: containerd's ctr on the node's containerd, namespace k8s.io.
ctr_node() {
	"$CONTAINERD_DIR/ctr" --address "$D/containerd.sock" -n k8s.io "$@"
}

# crictl_node ARGS...: crictl on the node's containerd.
crictl_node() {
	"$CRICTL" --runtime-endpoint "unix://$D/containerd.sock" --image-endpoint "unix://$D/containerd.sock" --timeout 30s "$@"
}

# pool_ls: the node's pool, as the installed binary sees it (JSON, one line).
pool_ls() {
	node_exec /usr/local/bin/runc-userns pool ls --json | jq -c .
}

# wait_for SECONDS DESC CMD...: run CMD until it succeeds, at most SECONDS.
wait_for() {
	local secs=$1 desc=$2 end
	shift 2
	end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if ! kill -0 "$(cat "$D/node.pid")" 2>/dev/null; then
			echo "the node is gone while waiting for $desc: $(tail -n 20 "$D/node.log")" >&2
			return 1
		fi
		if [ "$SECONDS" -ge "$end" ]; then
			echo "timed out after ${secs}s waiting for $desc" >&2
			"$@" >&2 || true
			return 1
		fi
		sleep 0.5
	done
}

# pki: a CA and the certificates of every component, ECDSA P-256.
pki() {
	local p=$D/pki
	mkdir -p "$p"
	openssl ecparam -name prime256v1 -genkey -noout -out "$p/ca.key" 2>/dev/null
	openssl req -x509 -new -key "$p/ca.key" -subj /CN=k8s-e2e-ca -days 2 -out "$p/ca.crt" 2>/dev/null
	cert apiserver /CN=kube-apiserver serverAuth \
		"IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
	cert admin /O=system:masters/CN=k8s-e2e-admin clientAuth
	cert apiserver-kubelet /O=system:masters/CN=kube-apiserver-kubelet-client clientAuth
	cert kubelet "/O=system:nodes/CN=system:node:$NODE" clientAuth
	cert controller-manager /CN=system:kube-controller-manager clientAuth
	cert scheduler /CN=system:kube-scheduler clientAuth
	openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
	openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
}

# cert NAME SUBJECT USAGE [SANS]: $D/pki/NAME.{key,crt}, signed by the CA.
cert() {
	local p=$D/pki
	openssl ecparam -name prime256v1 -genkey -noout -out "$p/$1.key" 2>/dev/null
	openssl req -new -key "$p/$1.key" -subj "$2" -out "$p/$1.csr" 2>/dev/null
	{
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$3"
		[ -z "${4:-}" ] || echo "subjectAltName=$4"
	} >"$p/$1.ext"
	openssl x509 -req -in "$p/$1.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
		-days 2 -extfile "$p/$1.ext" -out "$p/$1.crt" 2>/dev/null
}

# kubeconfig NAME: $D/NAME.kubeconfig with the client certificate NAME.
kubeconfig() {
	cat >"$D/$1.kubeconfig" <<-EOT
		apiVersion: v1
		kind: Config
		clusters:
		- name: e2e
		  cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$D/pki/ca.crt"}
		users:
		- name: $1
		  user: {client-certificate: "$D/pki/$1.crt", client-key: "$D/pki/$1.key"}
		contexts:
		- name: e2e
		  context: {cluster: e2e, user: $1}
		current-context: e2e
	EOT
}

# configs: the node's env, each component's flags and config files.
configs() {
	local p=$D/pki
	cat >"$D/env" <<-EOT
		PATH=$CONTAINERD_DIR:$(dirname "$NODE_RUNC"):$PATH
		NODE_IP=$NODE_IP
		K8S=$K8S
		ETCD=$ETCD
	EOT
	cat >"$D/apiserver.flags" <<-EOT
		--etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --secure-port=6443
		--advertise-address=$NODE_IP --allow-privileged=true
		--tls-cert-file=$p/apiserver.crt --tls-private-key-file=$p/apiserver.key --client-ca-file=$p/ca.crt
		--kubelet-client-certificate=$p/apiserver-kubelet.crt --kubelet-client-key=$p/apiserver-kubelet.key
		--service-account-issuer=https://kubernetes.default.svc --service-account-key-file=$p/sa.pub
		--service-account-signing-key-file=$p/sa.key --service-cluster-ip-range=10.96.0.0/24
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction
		--cert-dir=$D/apiserver-certs --profiling=false --kubelet-preferred-address-types=InternalIP
	EOT
	cat >"$D/controller-manager.flags" <<-EOT
		--kubeconfig=$D/controller-manager.kubeconfig --authentication-kubeconfig=$D/controller-manager.kubeconfig
		--authorization-kubeconfig=$D/controller-manager.kubeconfig --bind-address=127.0.0.1 --leader-elect=false
		--service-account-private-key-file=$p/sa.key --root-ca-file=$p/ca.crt --use-service-account-credentials=true
		--cert-dir=$D/controller-manager-certs --profiling=false
	EOT
	cat >"$D/scheduler.flags" <<-EOT
		--kubeconfig=$D/scheduler.kubeconfig --authentication-kubeconfig=$D/scheduler.kubeconfig
		--authorization-kubeconfig=$D/scheduler.kubeconfig --bind-address=127.0.0.1 --leader-elect=false
		--cert-dir=$D/scheduler-certs --profiling=false
	EOT
	cat >"$D/kubelet.flags" <<-EOT
		--config=$D/kubelet.yaml --kubeconfig=$D/kubelet.kubeconfig --hostname-override=$NODE
		--node-ip=$NODE_IP --root-dir=$D/kubelet --cert-dir=$D/kubelet-certs --v=2
	EOT
	cat >"$D/kubelet.yaml" <<-EOT
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: true}
		  x509: {clientCAFile: "$p/ca.crt"}
		authorization: {mode: Webhook}
		cgroupDriver: cgroupfs
		cgroupRoot: $CG_ROOT
		containerRuntimeEndpoint: unix://$D/containerd.sock
		resolvConf: $D/resolv.conf
		readOnlyPort: 0
		healthzPort: 0
		failSwapOn: false
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
		evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
		syncFrequency: 5s
		fileCheckFrequency: 5s
		serializeImagePulls: false
	EOT
	echo "nameserver 127.0.0.1" >"$D/resolv.conf"
	# containerd keeps its CRI defaults but one (node.sh says why); its root
	# is on disk, as /var/lib/containerd is, its state under the node's /run.
	cat >"$D/containerd.toml" <<-EOT
		version = $CONTAINERD_CONFIG_VERSION
		root = "$D/containerd"
		state = "/run/containerd"
		imports = ["/etc/containerd/conf.d/*.toml"]
		[grpc]
		  address = "$D/containerd.sock"
		[ttrpc]
		  address = "$D/containerd.sock.ttrpc"
		[debug]
		  address = "$D/containerd-debug.sock"
		$NODE_CRI
	EOT
	jq -n --arg cidr "$POD_CIDR" --arg ipam "$D/cni-ipam" '{cniVersion: "1.0.0", name: "k8s-e2e", plugins: [
		{type: "bridge", bridge: "e2e0", isGateway: true, ipMasq: false, hairpinMode: true,
		 ipam: {type: "host-local", ranges: [[{subnet: $cidr}]], routes: [{dst: "0.0.0.0/0"}], dataDir: $ipam}}]}' \
		>"$D/10-bridge.conflist"
}

# cgroups: the kubelet's cgroupRoot, made in every hierarchy (the kubelet
# refuses a root that does not exist); cpuset's children start empty.
cgroups() {
	local h
	for h in /sys/fs/cgroup/*/; do
		mkdir -p "$h${CG_ROOT#/}"
	done
	if [ -d /sys/fs/cgroup/cpuset ]; then
		cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset$CG_ROOT/cpuset.cpus"
		cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset$CG_ROOT/cpuset.mems"
	fi
}

# images: busybox, pause and the installer image, built here and imported
# under the names the pods and containerd ask for: nothing is pulled.
images() {
	"$ROOT_DIR/hack/mkimage.sh" "$D/busybox.tar" docker.io/library/busybox:1.36 sh
	"$ROOT_DIR/hack/mkimage.sh" --bare --add "$K8S/pause:/pause" "$D/pause.tar" registry.k8s.io/pause:3.10 /pause
	ctr_node images import "$D/busybox.tar" >/dev/null
	ctr_node images import "$D/pause.tar" >/dev/null
	ctr_node images tag docker.io/library/busybox:1.36 docker.io/library/busybox:latest >/dev/null
	# containerd 1.7's and 2.2's default sandbox images, and the DaemonSet's.
	local tag
	for tag in 3.8 3.10.1 3.9; do
		ctr_node images tag registry.k8s.io/pause:3.10 "registry.k8s.io/pause:$tag" >/dev/null
	done
	installer_image 1
}

# installer_image TAG: $INSTALLER:TAG, the binary at /runc-userns plus a
# static busybox (contrib/kubernetes/daemonset.yaml), imported.
installer_image() {
	"$ROOT_DIR/hack/mkimage.sh" --add "$WRAPPER:/runc-userns" "$D/installer.tar" "$INSTALLER:$1" sh
	ctr_node images import "$D/installer.tar" >/dev/null
}

cluster_up() {
	local b
	for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl pause; do
		[ -x "$K8S/$b" ] || fail "$K8S/$b missing: run make deps-k8s"
	done
	[ -x "$ETCD" ] || fail "$ETCD missing: run make deps-k8s"
	[ -x "$CONTAINERD_DIR/containerd" ] || fail "$CONTAINERD_DIR/containerd missing: run make deps-containerd"
	[ -x "$CRICTL" ] || fail "$CRICTL missing: run make deps-crictl"
	export D CG_ROOT
	D=$(mktemp -d /tmp/k8s-e2e.XXXXXX)
	chmod 0711 "$D"
	CG_ROOT=/$(basename "$D" | tr . -)
	echo "$CG_ROOT" >"$D/cgroot"
	pki
	for b in admin kubelet controller-manager scheduler; do kubeconfig "$b"; done
	configs
	cgroups
	setsid unshare --mount --net --propagation private "$ROOT_DIR/tests/k8s/node.sh" "$D" >"$D/node.log" 2>&1 &
	echo $! >"$D/node.pid"
	wait_for 30 "the node's containerd ($D/containerd.sock)" crictl_node info ||
		fail "containerd did not come up: $(tail -n 20 "$D/logs/containerd.log" "$D/node.log" 2>&1)"
	images
	wait_for 120 "the API server" kc get --raw /readyz ||
		fail "kube-apiserver did not come up: $(tail -n 20 "$D/logs/kube-apiserver.log")"
	wait_for 120 "node $NODE Ready" node_ready ||
		fail "node $NODE did not become Ready: $(kc describe node "$NODE" 2>&1 | tail -n 30; tail -n 20 "$D/logs/kubelet.log")"
	wait_for 60 "the default service account" kc get serviceaccount default
}

node_ready() {
	[ "$(kc get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

cluster_down() {
	[ -n "${D:-}" ] && [ -d "$D" ] || return 0
	local pid ns p
	touch "$D/stop"
	CG_ROOT=$(cat "$D/cgroot" 2>/dev/null || true)
	# The kubelet first, so that it starts nothing again; then every pod
	# through containerd, so that runc-userns releases what they hold.
	node_kill kubelet
	if [ -S "$D/containerd.sock" ]; then
		for p in $(crictl_node pods -q 2>/dev/null); do
			crictl_node stopp "$p" >/dev/null 2>&1 || true
			crictl_node rmp -f "$p" >/dev/null 2>&1 || true
		done
	fi
	for p in kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do node_kill "$p"; done
	# Everything still in the node's namespaces (shims, a container that
	# would not stop, node.sh itself) ends with them.
	if [ -f "$D/node.pid" ] && ns=$(readlink "/proc/$(cat "$D/node.pid")/ns/mnt" 2>/dev/null); then
		for p in /proc/[0-9]*; do
			if [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ]; then kill -9 "${p#/proc/}" 2>/dev/null || true; fi
		done
	fi
	if [ -n "$CG_ROOT" ]; then
		for p in /sys/fs/cgroup/*/"${CG_ROOT#/}"; do
			[ -d "$p" ] || continue
			cat $(find "$p" -name cgroup.procs) 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		done
		sleep 0.2
		for p in /sys/fs/cgroup/*/"${CG_ROOT#/}"; do
			if [ -d "$p" ]; then find "$p" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
		done
	fi
	for p in $(awk -v d="$D/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$p" 2>/dev/null || true
	done
	rm -rf "$D"
}

# node_kill NAME: stop the node's NAME (and keep it stopped: DIR/stop).
node_kill() {
	local pid
	pid=$(node_pid "$1") || return 0
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
}

# node_pid NAME: the pid of the node's NAME, as its supervisor wrote it.
node_pid() {
	node_exec cat "/run/k8s-e2e/$1.pid" 2>/dev/null
}

# install_runc_userns TAG: contrib/kubernetes's RuntimeClass and DaemonSet
# applied as an operator would, with the installer image $INSTALLER:TAG,
# this node's containerd restart (node.sh's supervisor starts it again when
# it exits), its drop-in (node_dropin) and its runc (node_config): nothing
# else of the files is changed.
install_runc_userns() {
	kc apply -f "$ROOT_DIR/contrib/kubernetes/runtimeclass.yaml"
	python3 - "$ROOT_DIR/contrib/kubernetes/daemonset.yaml" "$INSTALLER:$1" \
		'kill "$(cat /host/run/k8s-e2e/containerd.pid)"' "$(node_dropin)" "$(node_config)" >"$D/daemonset.yaml" <<-'EOT'
		import sys, yaml
		docs = list(yaml.safe_load_all(open(sys.argv[1])))
		for d in docs:
		    if d["kind"] == "ConfigMap":
		        d["data"]["runc-userns.toml"] = sys.argv[4]
		        d["data"]["config.json"] = sys.argv[5]
		    if d["kind"] != "DaemonSet":
		        continue
		    c = d["spec"]["template"]["spec"]["initContainers"][0]
		    c["image"] = sys.argv[2]
		    [e for e in c["env"] if e["name"] == "CONTAINERD_RESTART"][0]["value"] = sys.argv[3]
		yaml.safe_dump_all(docs, sys.stdout)
	EOT
	kc apply -f "$D/daemonset.yaml"
	kc label node "$NODE" runc-userns.io/installed=true --overwrite
	kc -n kube-system rollout status ds/runc-userns-installer --timeout=180s
}

# ensure_installed: runc-userns installed by the DaemonSet, for a file run
# alone (00-install.bats installs it first in a whole run).
ensure_installed() {
	if ! kc -n kube-system rollout status ds/runc-userns-installer --timeout=1s >/dev/null 2>&1; then
		install_runc_userns 1
	fi
	wait_for 60 "containerd's runc-userns handler" handler_served
}

handler_served() {
	crictl_node info | jq -e '.config.containerd.runtimes["runc-userns"]' >/dev/null
}

# pooled_pod NAME [EXTRA-SPEC-YAML]: a pod in a user namespace of its own,
# as $K8S_E2E_PODS asks for it (userns_pod_fields), whose container app runs
# `sleep 3600`; waits until Ready. EXTRA-SPEC-YAML is indented under spec:
# (containers may be replaced).
pooled_pod() {
	local name=$1 extra=${2:-}
	{
		cat <<-EOT
			apiVersion: v1
			kind: Pod
			metadata:
			  name: $name
			spec:
			  terminationGracePeriodSeconds: 1
		EOT
		if [[ "$extra" != *"containers:"* ]]; then
			cat <<-EOT
				  containers:
				  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}
			EOT
		fi
		[ -z "$extra" ] || sed 's/^/  /' <<<"$extra"
	} | userns_pod | kc apply -f -
	kc wait --for=condition=Ready "pod/$name" --timeout=90s
}

# userns_pod: the pod manifest on stdin (a Pod's first document) asking for
# a user namespace as $K8S_E2E_PODS says: runc-userns's RuntimeClass and
# annotation (pooled), or hostUsers: false and neither (hostusers).
userns_pod() {
	python3 -c 'import sys, yaml
d = yaml.safe_load(sys.stdin)
ann = d["metadata"].setdefault("annotations", {})
if sys.argv[1] == "hostusers":
    ann.pop("runc-userns.io/userns", None)
    d["spec"].pop("runtimeClassName", None)
    d["spec"]["hostUsers"] = False
else:
    ann["runc-userns.io/userns"] = "auto"
    d["spec"]["runtimeClassName"] = "runc-userns"
yaml.safe_dump(d, sys.stdout)' "$K8S_E2E_PODS"
}

# assert_pool N: the node's pool holds N ranges, for pods that ask
# runc-userns; none for pods that ask Kubernetes (hostUsers: false).
assert_pool() {
	local want=$1
	[ "$K8S_E2E_PODS" = pooled ] || want=0
	[ "$(pool_count)" = "$want" ] || fail "pool: want $want ranges, have $(pool_ls)"
}

# uid_map POD [CONTAINER]: the container's /proc/self/uid_map, one line, spaces squeezed.
uid_map() {
	kc exec "$1" ${2:+-c "$2"} -- cat /proc/self/uid_map | tr -s ' ' | sed 's/^ //'
}

# assert_pool_range MAP: MAP maps 0 to a pool range of 65536, not to host 0.
assert_pool_range() {
	local inside host size
	read -r inside host size <<<"$1"
	[ "$inside" = 0 ] && [ "$size" = 65536 ] && [ "$host" -ge 65536 ] ||
		fail "uid_map '$1' is not a pool range (0 HOSTID 65536)"
}

# pool_count: how many ranges the node's pool holds.
pool_count() {
	pool_ls | jq length
}

# delete_pods NAME...: delete the pods and wait until they are gone.
delete_pods() {
	kc delete pod "$@" --wait=true --timeout=90s
}

# ephemeral_done POD NAME: the ephemeral container NAME has terminated.
ephemeral_done() {
	[ -n "$(kc get pod "$1" -o jsonpath="{.status.ephemeralContainerStatuses[?(@.name==\"$2\")].state.terminated}")" ]
}

# restarted_ready POD N: the pod's first container has restarted N times or
# more and is ready again.
restarted_ready() {
	local n ready
	n=$(kc get pod "$1" -o jsonpath='{.status.containerStatuses[0].restartCount}')
	ready=$(kc get pod "$1" -o jsonpath='{.status.containerStatuses[0].ready}')
	[ "${n:-0}" -ge "$2" ] || return 1
	[ "$ready" = true ]
}

# installer_config KEY: the installer ConfigMap's data KEY (config.json or
# runc-userns.toml), as applied from contrib.
installer_config() {
	kc -n kube-system get configmap runc-userns-config -o jsonpath="{.data.${1//./\\.}}"
}

# reconfigure CONFIG-JSON TOML: the installer's ConfigMap with this
# operator config and containerd drop-in, rolled out as an operator would
# (a new drop-in restarts containerd); waits until containerd serves.
reconfigure() {
	kc -n kube-system patch configmap runc-userns-config --type merge \
		-p "$(jq -n --arg c "$1" --arg t "$2" '{data: {"config.json": $c, "runc-userns.toml": $t}}')"
	kc -n kube-system rollout restart ds/runc-userns-installer
	kc -n kube-system rollout status ds/runc-userns-installer --timeout=180s
	wait_for 60 "containerd's runc-userns handler" handler_served
	run -0 node_exec cat /etc/runc-userns/config.json
	[ "$(jq -c . <<<"$output")" = "$(jq -c . <<<"$1")" ] || fail "the node's config is $output, not $1"
}

# restore_config: the ConfigMap as installed, rolled out.
restore_config() {
	reconfigure "$(node_config)" "$(node_dropin)"
}

# node_dropin [TOML]: contrib's containerd drop-in (the ConfigMap's; on a
# containerd 2 node, contrib/containerd's v3 file), this node's CRI setting
# ($NODE_CRI), then TOML.
node_dropin() {
	local dropin
	if [ -n "$CONTRIB_DROPIN" ]; then
		dropin=$(cat "$CONTRIB_DROPIN")
	else
		dropin=$(contrib_config runc-userns.toml)
	fi
	printf '%s\n%s\n%s' "$dropin" "$NODE_CRI" "${1:-}"
}

# node_config: the ConfigMap's operator config, with this node's runc.
node_config() {
	contrib_config config.json | jq -c --arg r "$NODE_RUNC" '.runtime = $r'
}

# contrib_config KEY: the ConfigMap's data KEY in contrib/kubernetes/daemonset.yaml.
contrib_config() {
	python3 -c 'import sys, yaml
d = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == "ConfigMap"][0]
print(d["data"][sys.argv[2]], end="")' "$ROOT_DIR/contrib/kubernetes/daemonset.yaml" "$1"
}

# teardown_pods: a test's pods go; then the node's pool must be empty and
# nothing mounted under runc-userns's state dir, or the test fails (what
# it left would fail the next test instead).
teardown_pods() {
	kc delete pod --all --wait=true --timeout=90s --grace-period=1 >/dev/null 2>&1 || true
	local pool mounts
	pool=$(pool_ls)
	mounts=$(node_mounts)
	[ "$pool" = "[]" ] || fail "the test left ranges in the pool: $pool"
	[ -z "$mounts" ] || fail "the test left mounts on the node: $mounts"
}

# node_mounts: the node's mounts under runc-userns's state dir.
node_mounts() {
	node_exec awk '$5 ~ "^/run/runc-userns/" {print $5}' /proc/self/mountinfo
}
