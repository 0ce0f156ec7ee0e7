#!/usr/bin/env bats
# `features`: the real runtime's document, plus what runc-userns adds.

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

@test "features: user namespaces and idmap mounts from a kernel probe; the rest is the runtime's own" {
	run -0 "$WRAPPER" features
	ours=$output
	echo "$ours" | jq -e '.linux.namespaces | index("user") != null'
	echo "$ours" | jq -e '.linux.mountExtensions.idmap.enabled == true'
	theirs=$("$REAL_RUNC" features)
	# Everything but the two amended fields is byte-for-byte the runtime's.
	[ "$(echo "$ours" | jq -S 'del(.linux.mountExtensions) | .linux.namespaces |= sort')" = \
		"$(echo "$theirs" | jq -S 'del(.linux.mountExtensions) | .linux.namespaces |= (. + ["user"] | unique | sort)')" ]
	# Cached: a second call answers the same without probing again.
	[ -n "$(ls "$STATE_DIR"/kernel-idmap-* "$STATE_DIR"/features-*.json)" ]
	run -0 "$WRAPPER" features
	[ "$output" = "$ours" ]
}
