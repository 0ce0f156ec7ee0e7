#!/usr/bin/env bats
# Story 4: the kubelet's volumes in a pool pod, each readable by the pod's
# root and writable where Kubernetes makes it so; fsGroup's group.

load ../integration/helpers
load cluster

setup_file() {
	ensure_installed
	node_exec mkdir -p "$D/hostpath"
	node_exec sh -c "echo host > $D/hostpath/file; chmod 0755 $D/hostpath"
	kc create configmap vol-cm --from-literal=key=cm-value
	kc create secret generic vol-sec --from-literal=key=secret-value
}

teardown() {
	teardown_pods
}

teardown_file() {
	kc delete configmap vol-cm >/dev/null 2>&1 || true
	kc delete secret vol-sec >/dev/null 2>&1 || true
}

@test "story 4: emptyDir, Memory, configMap, secret 0400, token, downwardAPI, hostPath: readable, writable where they should be" {
	pooled_pod vols "containers:
- name: app
  image: busybox:1.36
  command: [sleep, '3600']
  volumeMounts:
  - {name: disk, mountPath: /v/disk}
  - {name: mem, mountPath: /v/mem}
  - {name: cm, mountPath: /v/cm}
  - {name: sec, mountPath: /v/sec}
  - {name: dapi, mountPath: /v/dapi}
  - {name: host, mountPath: /v/host}
volumes:
- {name: disk, emptyDir: {}}
- {name: mem, emptyDir: {medium: Memory}}
- {name: cm, configMap: {name: vol-cm}}
- {name: sec, secret: {secretName: vol-sec, defaultMode: 0400}}
- name: dapi
  downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}
- {name: host, hostPath: {path: '$D/hostpath', type: Directory}}"
	assert_pool_range "$(uid_map vols)"
	run -0 kc exec vols -- cat /v/cm/key
	[ "$output" = cm-value ]
	run -0 kc exec vols -- cat /v/sec/key
	[ "$output" = secret-value ]
	run -0 kc exec vols -- stat -L -c '%u:%g %a' /v/sec/key
	[ "$output" = "0:0 400" ]
	run -0 kc exec vols -- cat /v/dapi/name
	[ "$output" = vols ]
	run -0 kc exec vols -- cat /var/run/secrets/kubernetes.io/serviceaccount/token
	[[ "$output" == ey* ]] || fail "service account token: $output"
	run -0 kc exec vols -- cat /var/run/secrets/kubernetes.io/serviceaccount/namespace
	[ "$output" = default ]
	# The hostPath is the node's root's, and the pod's root's inside.
	run -0 kc exec vols -- stat -c '%u:%g' /v/host/file
	[ "$output" = 0:0 ]
	run -0 kc exec vols -- cat /v/host/file
	[ "$output" = host ]
	# Writable: emptyDir on disk and in memory, the hostPath; files the pod
	# writes there are the node's root's, not the pool's.
	for v in disk mem host; do
		run -0 kc exec vols -- sh -c "echo w > /v/$v/new && cat /v/$v/new && stat -c %u:%g /v/$v/new"
		[ "$output" = "w"$'\n'"0:0" ] || fail "/v/$v: $output"
	done
	run -0 node_exec stat -c %u:%g "$D/hostpath/new"
	[ "$output" = 0:0 ]
	# Read-only where Kubernetes mounts them so.
	for v in cm sec dapi; do
		run -1 kc exec vols -- touch "/v/$v/new"
		[[ "$output" == *"Read-only file system"* ]] || fail "/v/$v: $output"
	done
}

@test "story 4: runAsUser 1000 and fsGroup 2000 in a pool pod get the group they asked for" {
	pooled_pod fsg "securityContext: {runAsUser: 1000, fsGroup: 2000}
containers:
- name: app
  image: busybox:1.36
  command: [sleep, '3600']
  volumeMounts:
  - {name: disk, mountPath: /v/disk}
  - {name: sec, mountPath: /v/sec}
volumes:
- {name: disk, emptyDir: {}}
- {name: sec, secret: {secretName: vol-sec, defaultMode: 0440}}"
	run -0 kc exec fsg -- id
	[[ "$output" == "uid=1000 "*" groups="*"2000"* ]] || fail "id: $output"
	run -0 kc exec fsg -- sh -c 'touch /v/disk/f && stat -c %u:%g /v/disk/f'
	[ "$output" = 1000:2000 ]
	run -0 kc exec fsg -- cat /v/sec/key
	[ "$output" = secret-value ]
	run -0 kc exec fsg -- stat -L -c %g /v/sec/key
	[ "$output" = 2000 ]
}
