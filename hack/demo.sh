#!/usr/bin/env bash
# demo.sh BIN: runs a busybox container through runc-userns in a pod user
# namespace from the pool, with its own runc root, state dir and bundle in
# a temporary directory that is removed afterwards.
set -euo pipefail
bin=$(realpath "$1")
tmp=$(mktemp -d /tmp/runc-userns-demo.XXXXXX)
chmod 0711 "$tmp" # the pod's root (an unprivileged host ID) must reach the state dir
cleanup() {
	"$bin" --root "$tmp/runc" delete --force demo >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
"$(dirname "$0")/mkrootfs.sh" "$tmp/bundle/rootfs"
cat >"$tmp/config.json" <<JSON
{"runtime": "/usr/sbin/runc", "stateDir": "$tmp/state"}
JSON
export RUNC_USERNS_CONFIG=$tmp/config.json
cd "$tmp/bundle"
/usr/sbin/runc spec
jq '.process.terminal = false | .root.readonly = false
  | .process.args = ["sh", "-c", "echo \"uid_map: $(cat /proc/self/uid_map)\"; echo \"gid_map: $(cat /proc/self/gid_map)\"; echo \"id: $(id)\"; echo hello >/written-by-pod-root; ls -ln /written-by-pod-root"]
  | .annotations["runc-userns.io/userns"] = "auto"' config.json >config.json.new
mv config.json.new config.json

echo "== inside the container (runc-userns --root $tmp/runc run demo)"
"$bin" --root "$tmp/runc" run demo
echo "== on the host: the file the pod's root wrote is owned by host root (idmapped rootfs, nothing chowned)"
ls -ln "$tmp/bundle/rootfs/written-by-pod-root"
echo "== pool after the container exited (empty: its range went back)"
"$bin" pool ls
