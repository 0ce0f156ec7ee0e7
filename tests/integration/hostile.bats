#!/usr/bin/env bats
# Hostile and broken input: each is refused with an error that names the
# bad value, and nothing changes on disk (no runc state, no pool entry, no
# state dir entry, config.json byte for byte as it was).

load helpers

setup() {
	requires root
	setup_env
	b=$(pooled_bundle h)
}

teardown() {
	teardown_env
}

# refused ID WANT...: create of $b as ID fails; its output contains each
# WANT; nothing changed on disk.
refused() {
	local id=$1 sum w
	shift
	sum=$(sha256sum <"$b/config.json")
	run wrapper create --bundle "$b" "$id" </dev/null
	echo "$output"
	[ "$status" != 0 ] || fail "create $id succeeded"
	for w in "$@"; do
		[[ "$output" == *"$w"* ]] || fail "error does not say: $w"
	done
	unchanged "$sum"
}

# unchanged SUM: config.json has SUM, runc has no container, the pool and
# the state dir hold nothing.
unchanged() {
	[ "$(sha256sum <"$b/config.json")" = "$1" ] || fail "config.json changed"
	[ -z "$(ls -A "$RUNC_ROOT" 2>/dev/null)" ] || fail "runc root: $(ls -A "$RUNC_ROOT")"
	pool_empty || fail "pool: $(pool_json)"
	[ -z "$(cd "$STATE_DIR" 2>/dev/null && find pods containers inflight -mindepth 1 2>/dev/null)" ] || fail "state dir entries left"
	[ -z "$(test_mounts)" ] || fail "mounts: $(test_mounts)"
}

@test "container IDs that are paths, empty or too long" {
	local long
	long=$(printf 'a%.0s' $(seq 1100))
	refused ../x 'invalid container id "../x"' "'/'"
	# Where ../x leads from the runc root ($TESTDIR/x) and from the state
	# dir's per-ID directories ($STATE_DIR/x); nothing named x anywhere.
	[ ! -e "$TESTDIR/x" ]
	[ ! -e "$STATE_DIR/x" ]
	[ -z "$(find "$TESTDIR" -path "$b/rootfs" -prune -o -name x -print)" ]
	refused a/b 'invalid container id "a/b"'
	refused "" 'invalid container id "": must not be empty'
	refused "$long" "invalid container id \"aaaa" "longer than 1024 bytes"
	refused .. 'invalid container id "..": must not be ".."'
}

@test "annotation values: unknown mode, huge, not UTF-8, duplicate key" {
	annotate "$b" runc-userns.io/userns autoo
	refused h 'container h' 'runc-userns.io/userns="autoo"' 'want "auto"'
	update_config "$b" '.annotations["runc-userns.io/userns"] = ("a" * 5000)'
	refused h 'runc-userns.io/userns is 5000 bytes long, more than 4096'
	# jq cannot write invalid UTF-8: splice the bytes in with sed. JSON
	# decoding turns them into U+FFFD, which is no mode either.
	update_config "$b" '.annotations["runc-userns.io/userns"] = "BAD"'
	sed -i 's/"BAD"/"a\xff\xfeb"/' "$b/config.json"
	refused h 'runc-userns.io/userns="a' 'want "auto"'
	update_config "$b" '.annotations["runc-userns.io/userns"] = "DUP"'
	sed -i 's/"runc-userns.io\/userns": "DUP"/"runc-userns.io\/userns": "host", "runc-userns.io\/userns": "auto"/' "$b/config.json"
	grep -c 'runc-userns.io/userns' "$b/config.json" | grep -qx 1 # both on one line
	refused h 'annotation "runc-userns.io/userns" appears more than once'
	# encoding/json reads every member whose name folds to "annotations"
	# into one map; a reader that takes one member would miss the opt-in.
	update_config "$b" 'del(.annotations) | .Annotations = {"runc-userns.io/userns": "host"} | .annotations = {"runc-userns.io/userns": "auto"}'
	refused h 'the annotations object appears twice (as "Annotations" and "annotations")'
	update_config "$b" 'del(.Annotations)'
	update_config "$b" '.annotations["runc-userns.io/idmap-skip"] = ("/x," * 2000)'
	annotate "$b" runc-userns.io/userns auto
	refused h 'runc-userns.io/idmap-skip is 6000 bytes long'
}

@test "config.json: invalid JSON, wrong types, too big" {
	cp "$b/config.json" "$TESTDIR/good.json"
	printf '{"ociVersion": "1.0.2", "annotations": {"runc-userns.io/userns": "auto"},\n  "process": {' >"$b/config.json"
	refused h 'container h' "$b/config.json" 'unexpected end of JSON input'
	printf '{"ociVersion": "1.0.2",\n "annotations": {"runc-userns.io/userns": "auto"}, "mounts": [{"destination": "/x", "options": "ro"}]}' >"$b/config.json"
	refused h "$b/config.json" 'field "mounts.options"' 'line 2' 'want []string'
	# A member the wrapper passes through undecoded (process) is runc's to
	# refuse, in its own words. The create's edits stay in config.json
	# under their stamp, as after any runc create that fails (the next
	# create undoes them); all else it took is given back.
	jq '.annotations["runc-userns.io/userns"] = "auto" | .process.args = "sh"' "$TESTDIR/good.json" >"$b/config.json"
	run wrapper create --bundle "$b" h </dev/null
	echo "$output"
	[ "$status" != 0 ] || fail "create h succeeded"
	[[ "$output" == *'process.args'*'[]string'* ]] || fail "runc's error does not name process.args"
	[ "$(jq -r '.annotations["runc-userns.io/stamp"] // "" | length > 0' "$b/config.json")" = true ] || fail "config.json has no stamp"
	unchanged "$(sha256sum <"$b/config.json")"
	printf '{"ociVersion": 1.0.2}' >"$b/config.json"
	refused h "$b/config.json" 'invalid JSON at offset'
	head -c $((17 << 20)) /dev/zero | tr '\0' ' ' >"$b/config.json"
	refused h "$b/config.json" 'more than the 16777216 this runtime reads'
}

@test "a network namespace path that names a FIFO, a file or another kind of namespace: refused at once" {
	mkfifo "$TESTDIR/fifo"
	join_netns "$TESTDIR/fifo" "$b"
	# No writer ever opens the FIFO: an open that waited would hold the
	# create for good.
	sum=$(sha256sum <"$b/config.json")
	run timeout 20 "$WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" h </dev/null
	echo "$output"
	[ "$status" != 124 ] || fail "create still waited on the FIFO after 20 s"
	[ "$status" != 0 ] || fail "create h succeeded"
	[[ "$output" == *"$TESTDIR/fifo"*"not a namespace file"* ]] || fail "error does not name the FIFO"
	unchanged "$sum"
	echo x >"$TESTDIR/file"
	join_netns "$TESTDIR/file" "$b"
	refused h "$TESTDIR/file" 'not a namespace file'
	join_netns /proc/self/ns/user "$b"
	refused h /proc/self/ns/user 'not a network namespace'
}

@test "a 10 MB spec of a pool pod runs; unknown fields survive" {
	update_config "$b" '.annotations["example.com/big"] = ("x" * (10 * 1024 * 1024)) | .["x-unknown"] = {"kept": true}'
	start_container "$b" big
	[ "$(cexec big cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	[ "$(jq -r '.annotations["example.com/big"] | length' "$b/config.json")" = $((10 * 1024 * 1024)) ]
	[ "$(jq -r '.["x-unknown"].kept' "$b/config.json")" = true ]
	wrapper delete --force big
}

@test "caller mappings into the pool are refused; elsewhere they pass" {
	update_config "$b" '.linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": '"$((POOL_BASE + 65536))"', "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]'
	refused h 'container h' "linux.uidMappings maps container IDs 0-65535 to host IDs $((POOL_BASE + 65536))-" 'inside the user namespace pool' 'never shared'
	# Overlapping by one ID at the pool's end is as bad.
	update_config "$b" '.linux.uidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": '"$((POOL_BASE - 10))"', "size": 11}]'
	refused h "linux.gidMappings maps container IDs 0-10 to host IDs $((POOL_BASE - 10))-$POOL_BASE"
	# A mount's own mappings too (idmapped volume).
	mkdir "$TESTDIR/vol"
	update_config "$b" '.linux.gidMappings = .linux.uidMappings
		| .mounts += [{"destination": "/vol", "type": "bind", "source": "'"$TESTDIR/vol"'", "options": ["bind"],
			"uidMappings": [{"containerID": 0, "hostID": '"$POOL_BASE"', "size": 1}], "gidMappings": [{"containerID": 0, "hostID": 0, "size": 1}]}]'
	refused h 'mounts[' '(/vol) uidMappings maps container IDs 0-0' 'inside the user namespace pool'
}

@test "userns mode turned off while pool pods still run: caller mappings into the pool stay refused until they are gone" {
	p=$(pooled_bundle pod)
	start_container "$p" pod
	# The operator also dropped the pool's ranges: what the pod holds
	# still counts.
	write_config '{"userns": {"mode": "off", "ranges": [{"hostID": '"$((POOL_BASE + 100 * 65536))"', "size": 65536}]}}'
	update_config "$b" 'del(.annotations["runc-userns.io/userns"])
		| .linux.namespaces += [{"type": "user"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": '"$POOL_BASE"', "size": 65536}]
		| .linux.gidMappings = .linux.uidMappings'
	create_to_file h "$b"
	[ "$status" != 0 ]
	[[ "$output" == *"inside the user namespace pool"*"held by a pod made before userns.mode was turned off"*"pool ls"* ]] || fail "$output"
	[ ! -e "$RUNC_ROOT/h" ]
	wrapper delete --force pod
	pool_empty
	# The pool holds nothing any more: with mode off, mappings are the caller's.
	chown -R "$POOL_BASE:$POOL_BASE" "$b/rootfs"
	start_container "$b" h
	wrapper delete --force h
}

@test "a user namespace path that is not a user namespace" {
	update_config "$b" '.linux.namespaces += [{"type": "user", "path": "/etc/passwd"}]
		| .linux.uidMappings = [{"containerID": 0, "hostID": 1000000, "size": 65536}] | .linux.gidMappings = .linux.uidMappings'
	refused h 'container h' 'user namespace path /etc/passwd: not a namespace'
	update_config "$b" '(.linux.namespaces[] | select(.type == "user") | .path) = "/proc/self/ns/net"'
	refused h 'user namespace path /proc/self/ns/net: a namespace of another type'
	update_config "$b" '(.linux.namespaces[] | select(.type == "user") | .path) = "/dev/null"'
	refused h 'user namespace path /dev/null: not a namespace: it is a'
	update_config "$b" '(.linux.namespaces[] | select(.type == "user") | .path) = "/nonexistent/ns"'
	refused h 'user namespace path /nonexistent/ns' 'no such file or directory'
}

@test "bind mount sources: missing is an error; a device or FIFO stays a plain bind, never idmapped" {
	local sum
	cp "$b/config.json" "$TESTDIR/orig.json"
	update_config "$b" '.mounts += [{"destination": "/m", "type": "bind", "source": "/nonexistent/src", "options": ["bind"]}]'
	refused h 'container h' 'mount /m' '/nonexistent/src' 'no such file or directory'
	mkfifo "$TESTDIR/fifo"
	update_config "$b" '.mounts[-1].source = "/dev/null" | .mounts += [{"destination": "/f", "type": "bind", "source": "'"$TESTDIR/fifo"'", "options": ["bind"]}]'
	wrapper --log "$TESTDIR/log" --log-format json create --bundle "$b" dev </dev/null >/dev/null 2>"$TESTDIR/err" || fail "$(cat "$TESTDIR/err")"
	wrapper start dev
	grep -q '/dev/null is a character device, not a directory or regular file' "$TESTDIR/log" || fail "log: $(cat "$TESTDIR/log")"
	grep -q 'is a FIFO, not a directory or regular file' "$TESTDIR/log" || fail "log: $(cat "$TESTDIR/log")"
	[ "$(jq -r '.annotations["runc-userns.io/idmap-skipped"]' "$b/config.json")" = "/m,/f" ]
	# The pod's root cannot take the host's /dev/null.
	run cexec dev chown 0:0 /m
	[ "$status" != 0 ]
	[ "$(stat -c '%u:%g %a' /dev/null)" = "0:0 666" ] || fail "/dev/null is now $(stat -c '%u:%g %a' /dev/null)"
	wrapper delete --force dev
	# Asked for explicitly, it is refused.
	jq --arg fifo "$TESTDIR/fifo" '.mounts += [{"destination": "/f", "type": "bind", "source": $fifo, "options": ["bind", "idmap"]}]' "$TESTDIR/orig.json" >"$b/config.json"
	jq -e '.mounts[-1].options | index("idmap")' "$b/config.json" >/dev/null
	sum=$(sha256sum <"$b/config.json")
	run wrapper create --bundle "$b" dev2 </dev/null
	[ "$status" != 0 ] || fail "explicit idmap of a FIFO succeeded"
	[[ "$output" == *"mount /f"*"is a FIFO"* ]] || fail "$output"
	unchanged "$sum"
}

@test "a local user reaches no staged volume or rootfs of a pod, during its create or after" {
	local loop
	# A volume whose host parent only root may enter (a pod's secrets).
	mkdir -p "$TESTDIR/secrets/vol"
	chmod 0700 "$TESTDIR/secrets"
	echo s3cret >"$TESTDIR/secrets/vol/token"
	update_config "$b" '.mounts += [{"destination": "/secrets", "type": "bind", "source": "'"$TESTDIR/secrets/vol"'", "options": ["rbind", "ro"]}]'
	# nobody tries, in a loop, for the whole create, to read the staged
	# volume, to hold a working directory in it or in the staged rootfs.
	: >"$TESTDIR/reached"
	chmod 0666 "$TESTDIR/reached"
	as_nobody sh -c 'while [ ! -e "$1/stop" ]; do
		for d in "$2"/containers/*/h/mounts/* "$2"/containers/*/h/rootfs; do
			cat "$d/token" >>"$1/reached" 2>/dev/null
			(cd "$d" 2>/dev/null && echo "cwd $d" >>"$1/reached")
		done
	done; exit 0' sh "$TESTDIR" "$STATE_DIR" &
	loop=$!
	start_container "$b" h
	staging_unreachable h
	: >"$TESTDIR/stop"
	wait "$loop"
	[ ! -s "$TESTDIR/reached" ] || fail "nobody reached: $(cat "$TESTDIR/reached")"
	# The pod reads its volume.
	[ "$(cexec h cat /secrets/token)" = s3cret ]
	wrapper delete --force h
}

# copy_stamp FROM-BUNDLE TO-BUNDLE: put FROM's stamp on TO's config.json.
copy_stamp() {
	local st
	st=$(jq -r '.annotations["runc-userns.io/stamp"]' "$1/config.json") || return 1
	[ -n "$st" ] && [ "$st" != null ] || { fail "no stamp on $1"; return 1; }
	update_config "$2" '.annotations["runc-userns.io/stamp"] = '"$(jq -Rn --arg s "$st" '$s')"
}

@test "a stamp copied onto another container is refused, across pods and within one; the victim's volume never reaches it" {
	local atk
	mkdir -p "$TESTDIR/secret"
	echo s3cret >"$TESTDIR/secret/token"
	# The victim: a pod with a host volume.
	v=$(pooled_bundle victim)
	as_pod "$v" victim sandbox
	update_config "$v" '.mounts += [{"destination": "/vol", "type": "bind", "source": "'"$TESTDIR/secret"'", "options": ["rbind"]}]'
	start_container "$v" victim
	for atk in other-pod same-pod; do
		a=$(pooled_bundle "$atk")
		if [ "$atk" = same-pod ]; then
			as_pod "$a" victim container
		else
			as_pod "$a" "$atk" sandbox
		fi
		copy_stamp "$v" "$a"
		sum=$(sha256sum <"$a/config.json")
		run wrapper --log "$TESTDIR/$atk.log" --log-format json create --bundle "$a" "$atk" </dev/null
		[ "$status" = 1 ] || fail "create of $atk with the victim's stamp: status $status: $output"
		[[ "$output" == *"container $atk: config.json carries a runc-userns.io/stamp annotation of another container (runc-userns stamp written for another container: it was written for container victim of runc root $RUNC_ROOT, bundle $v)"* ]] || fail "$output"
		jq -e 'select(.level == "error") | .msg | contains("a copy is refused")' "$TESTDIR/$atk.log" >/dev/null
		[ "$(sha256sum <"$a/config.json")" = "$sum" ]
		[ ! -e "$RUNC_ROOT/$atk" ]
	done
	# Only the victim holds a range.
	[ "$(pool_json | jq -c '[.[] | .owner]')" = '["victim"]' ]
	[ "$(cexec victim cat /vol/token)" = s3cret ]
	wrapper delete --force victim
	pool_empty
}

@test "a stamp of another container in runc's state is ignored at delete, with a log line, and releases nothing of the victim's" {
	v=$(pooled_bundle victim)
	start_container "$v" victim
	a=$(setup_bundle atk)
	start_container "$a" atk
	# What no create would write: the victim's stamp among atk's labels
	# in runc's state (root could write it, or a future bug).
	st=$(jq -r '.annotations["runc-userns.io/stamp"]' "$v/config.json")
	jq --arg l "runc-userns.io/stamp=$st" '.config.labels += [$l]' "$RUNC_ROOT/atk/state.json" >"$TESTDIR/state.json"
	cat "$TESTDIR/state.json" >"$RUNC_ROOT/atk/state.json"
	wrapper --log "$TESTDIR/delete.log" --log-format json delete --force atk
	jq -e 'select(.level == "warning") | .msg | contains("container atk: ignoring its runc-userns.io/stamp annotation: runc-userns stamp written for another container: it was written for container victim")' "$TESTDIR/delete.log" >/dev/null
	[ "$(pool_json | jq -c '[.[] | {owner, members}]')" = '[{"owner":"victim","members":["victim"]}]' ]
	[ "$(cexec victim cat /proc/self/uid_map | awk '{print $2}')" = "$POOL_BASE" ]
	wrapper delete --force victim
	pool_empty
}

@test "a create with a flag runc-userns does not know: refused if the spec needs a pool user namespace, runc's otherwise" {
	local sum
	sum=$(sha256sum <"$b/config.json")
	# A pool pod: one error that names the flag, in --log JSON too.
	run wrapper --log "$TESTDIR/log.json" --log-format json create --future-flag --bundle "$b" h </dev/null
	[ "$status" = 1 ]
	[[ "$output" == *"runc-userns does not know the flag --future-flag of \`runc create\`"*"its config.json has the annotation runc-userns.io/userns"*"rather than running the container without its user namespace, as host root"* ]] || fail "$output"
	[ "$(jq -s '[.[] | select(.level == "error")] | length' "$TESTDIR/log.json")" = 1 ]
	jq -e 'select(.level == "error") | .msg | contains("--future-flag")' "$TESTDIR/log.json" >/dev/null
	unchanged "$sum"
	# The same with the flag after the ID, and for run.
	run wrapper run -d --bundle "$b" h --future-flag=1 </dev/null
	[ "$status" = 1 ]
	[[ "$output" == *"the flag --future-flag=1 of \`runc run\`"* ]] || fail "$output"
	unchanged "$sum"
	# Under mode always, a spec without annotation needs it too.
	p=$(setup_bundle plain)
	write_config '{"userns": {"mode": "always"}}'
	run wrapper create --bundle "$p" --future-flag plain </dev/null
	[ "$status" = 1 ]
	[[ "$output" == *"the flag --future-flag of \`runc create\`"*"userns.mode is \"always\""* ]] || fail "$output"
	[ ! -e "$RUNC_ROOT/plain" ]
	# In mode annotation, a spec without annotation is runc's: its own error.
	write_config '{}'
	same_as_runc create --bundle "$p" --future-flag plain
	grep -q 'flag provided but not defined: -future-flag' "$TESTDIR/wrapper.err"
	[ ! -e "$RUNC_ROOT/plain" ]
}

@test "operator config: unknown keys, overlapping and overflowing ranges" {
	local sum
	sum=$(sha256sum <"$b/config.json")
	write_config '{"userns": {"rangez": []}}'
	run wrapper create --bundle "$b" h </dev/null
	[ "$status" != 0 ] && [[ "$output" == *"$RUNC_USERNS_CONFIG"*'unknown field "rangez"'* ]] || fail "$output"
	unchanged "$sum"
	write_config '{"userns": {"ranges": [{"hostID": 3221225472, "size": 131072}, {"hostID": 3221291008, "size": 65536}]}}'
	run wrapper create --bundle "$b" h </dev/null
	[ "$status" != 0 ] && [[ "$output" == *"3221225472+131072"*"3221291008+65536"* ]] || fail "$output"
	unchanged "$sum"
	write_config '{"userns": {"ranges": [{"hostID": 4294901760, "size": 131072}]}}'
	run wrapper create --bundle "$b" h </dev/null
	[ "$status" != 0 ] && [[ "$output" == *"4294901760+131072"* ]] || fail "$output"
	unchanged "$sum"
}

@test "a volume symlink swapped while we work: the mount is what was resolved when it was idmapped" {
	mkdir -p "$TESTDIR/A" "$TESTDIR/B"
	echo a >"$TESTDIR/A/which"
	echo b >"$TESTDIR/B/which"
	ln -s "$TESTDIR/A" "$TESTDIR/link"
	update_config "$b" '.mounts += [{"destination": "/vol", "type": "bind", "source": "'"$TESTDIR/link"'", "options": ["rbind"]}]'
	# Stop after the mounts are prepared (the test binary's fault switch),
	# swap the link, go on.
	requires faults
	env RUNC_USERNS_TEST_STOP_AT=staged "$FAULTS_WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" swap </dev/null >"$TESTDIR/swap.out" 2>&1 3>&- &
	local pid=$! i
	for i in $(seq 100); do
		[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ] && break
		sleep 0.1
	done
	[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ] || {
		kill -KILL "$pid" 2>/dev/null || true
		fail "create did not stop at staged: $(cat "$TESTDIR/swap.out")"
	}
	ln -sfn "$TESTDIR/B" "$TESTDIR/link"
	kill -CONT "$pid"
	wait "$pid" || fail "create: $(cat "$TESTDIR/swap.out")"
	wrapper start swap
	local src
	src=$(jq -r '.mounts[] | select(.destination == "/vol") | .source' "$b/config.json")
	if [[ $src == "$STATE_DIR/"* ]]; then
		# runc 1.1: we staged it, from the fd open_tree resolved.
		[ "$(cexec swap cat /vol/which)" = a ] || fail "the staged mount follows the swapped link"
	else
		# runc >= 1.2 idmaps the mount itself, resolving the source when it
		# mounts it, as for any bind mount: the spec keeps the caller's path.
		[ "$src" = "$TESTDIR/link" ] || fail "mount source rewritten to $src"
		[ "$(cexec swap cat /vol/which)" = b ]
	fi
	wrapper delete --force swap
}
