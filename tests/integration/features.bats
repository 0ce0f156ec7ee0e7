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
	# The runtime: the real runc behind a script that counts its calls.
	cat >"$TESTDIR/counting-runc" <<-EOF
		#!/bin/sh
		echo "\$*" >>"$TESTDIR/runc.calls"
		exec "$REAL_RUNC" "\$@"
	EOF
	chmod +x "$TESTDIR/counting-runc"
	write_config "$(jq -n --arg rt "$TESTDIR/counting-runc" '{runtime: $rt}')"
	run -0 "$WRAPPER" features
	ours=$output
	echo "$ours" | jq -e '.linux.namespaces | index("user") != null'
	echo "$ours" | jq -e '.linux.mountExtensions.idmap.enabled == true'
	theirs=$("$REAL_RUNC" features)
	# Everything but the two amended fields is byte-for-byte the runtime's.
	[ "$(echo "$ours" | jq -S 'del(.linux.mountExtensions) | .linux.namespaces |= sort')" = \
		"$(echo "$theirs" | jq -S 'del(.linux.mountExtensions) | .linux.namespaces |= (. + ["user"] | unique | sort)')" ]
	[ "$(cat "$TESTDIR/runc.calls")" = features ]
	# Cached: a second call answers the same without probing again. The
	# runtime is not run again, and the kernel's answer is the cached one:
	# a cache that says "no idmap" is believed (the kernel says yes).
	ls "$STATE_DIR"/kernel-idmap-* "$STATE_DIR"/features-*.json
	run -0 "$WRAPPER" features
	[ "$output" = "$ours" ]
	[ "$(cat "$TESTDIR/runc.calls")" = features ]
	for f in "$STATE_DIR"/kernel-idmap-*; do printf 0 >"$f"; done
	run -0 "$WRAPPER" features
	echo "$output" | jq -e '.linux.mountExtensions.idmap.enabled == false'
	[ "$(cat "$TESTDIR/runc.calls")" = features ]
}
