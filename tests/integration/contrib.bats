#!/usr/bin/env bats
# contrib/: what can be checked without a cluster. The containerd v2
# drop-in is loaded by a real containerd in containerd.bats; here every
# YAML and TOML file parses, and the pieces that name each other agree.

load helpers

setup() {
	setup_env
	C=$ROOT_DIR/contrib
}

teardown() {
	teardown_env
}

# py SCRIPT ARGS...: python3 with yaml and tomllib.
py() {
	python3 -c "import sys, json, tomllib, yaml
$1" "${@:2}"
}

@test "contrib/kubernetes: every document parses; RuntimeClass, example pod and DaemonSet agree" {
	run -0 py '
docs = {}
for f in sys.argv[1:]:
    for d in yaml.safe_load_all(open(f)):
        docs[(d["kind"], d["metadata"]["name"])] = d
rc = docs[("RuntimeClass", "runc-userns")]
assert rc["apiVersion"] == "node.k8s.io/v1" and rc["handler"] == "runc-userns", rc
pod = docs[("Pod", "userns-demo")]
assert pod["spec"]["runtimeClassName"] == rc["metadata"]["name"], pod
assert pod["metadata"]["annotations"]["runc-userns.io/userns"] == "auto", pod
ds = docs[("DaemonSet", "runc-userns-installer")]
spec = ds["spec"]["template"]["spec"]
assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
assert spec["nodeSelector"] == rc["scheduling"]["nodeSelector"], (spec["nodeSelector"], rc["scheduling"])
cm = docs[("ConfigMap", "runc-userns-config")]
assert any(v.get("configMap", {}).get("name") == cm["metadata"]["name"] for v in spec["volumes"])
print(cm["data"]["config.json"])
' "$C"/kubernetes/*.yaml
	# The operator config the DaemonSet installs is one the wrapper accepts.
	jq . <<<"$output" >"$TESTDIR/ds-config.json"
	jq --arg r "$REAL_RUNC" '.runtime = $r' "$TESTDIR/ds-config.json" >"$RUNC_USERNS_CONFIG"
	run -0 "$WRAPPER" --version
	[[ "$output" == *"runc-userns:"* ]]
	# Its containerd drop-in is contrib's v2 snippet, key for key.
	run -0 py '
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == "ConfigMap"][0]
a = tomllib.loads(ds["data"]["runc-userns.toml"])
b = tomllib.load(open(sys.argv[2], "rb"))
h = lambda c: c["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc-userns"]
assert h(a)["pod_annotations"] == h(b)["pod_annotations"] and h(a)["options"]["BinaryName"] == h(b)["options"]["BinaryName"], (a, b)
' "$C/kubernetes/daemonset.yaml" "$C/containerd/runc-userns.v2.toml"
	# Its commented CRI options, uncommented, are containerd'"'"'s two keys.
	run -0 py '
text = open(sys.argv[1]).read().replace("# [plugins", "[plugins").replace("#   enable_", "enable_")
c = tomllib.loads(text)["plugins"]["io.containerd.grpc.v1.cri"]
assert c["enable_unprivileged_ports"] is True and c["enable_unprivileged_icmp"] is True, c
assert "runc-userns" in c["containerd"]["runtimes"], c
' "$C/containerd/runc-userns.v2.toml"
}

@test "contrib/containerd v3 and contrib/cri-o parse and define the runc-userns handler" {
	run -0 py '
v3 = tomllib.load(open(sys.argv[1], "rb"))
assert v3["version"] == 3
h = v3["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc-userns"]
assert h["runtime_type"] == "io.containerd.runc.v2" and h["pod_annotations"] == ["runc-userns.io/*"], h
assert h["options"]["BinaryName"] == "/usr/local/bin/runc-userns", h
crio = tomllib.load(open(sys.argv[2], "rb"))
r = crio["crio"]["runtime"]["runtimes"]["runc-userns"]
assert r["runtime_path"] == "/usr/local/bin/runc-userns" and "allowed_annotations" not in r, r
assert r["runtime_type"] == "oci" and r["runtime_root"] == "/run/runc-userns-runc", r
# Both drop_infra_ctr modes work (crio.bats): that node-wide setting is left alone.
assert "drop_infra_ctr" not in crio["crio"].get("runtime", {}), crio["crio"]["runtime"]
' "$C/containerd/runc-userns.v3.toml" "$C/cri-o/10-runc-userns.conf"
}

@test "contrib/systemd: the tmpfiles line creates the default stateDir traversable by pods" {
	run -0 awk '!/^#/ && NF {print $1, $2, $3, $4, $5}' "$C/systemd/runc-userns.conf"
	[ "$output" = "d /run/runc-userns 0711 root root" ]
}
