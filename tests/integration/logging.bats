#!/usr/bin/env bats
# Logging like runc (--log, --log-format), where containerd and podman read
# it: a failed call leaves exactly one line, the error; informational lines
# only when the call succeeds. And the files we read: errors that point at
# the problem, and nothing of the caller's lost.

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

# create_logged LOG FORMAT BUNDLE ID: create through the wrapper with --log
# LOG --log-format FORMAT, stdio to files; sets status, stdout, stderr.
create_logged() {
	status=0
	wrapper --log "$1" --log-format "$2" create --bundle "$3" "$4" \
		</dev/null >"$TESTDIR/$4.stdout" 2>"$TESTDIR/$4.stderr" || status=$?
	stdout=$(cat "$TESTDIR/$4.stdout")
	stderr=$(cat "$TESTDIR/$4.stderr")
}

# one_json_error LOG ID: LOG holds exactly one line, valid JSON, level
# error, whose msg names container ID; stderr carries the same error.
one_json_error() {
	[ "$(wc -l <"$1")" = 1 ] || fail "want exactly one line in $1, have: $(cat "$1")"
	jq -e . "$1" >/dev/null
	jq -e --arg id "$2" '.level == "error" and (.msg | contains("container " + $id)) and (.time | type == "string")' "$1"
	local msg
	msg=$(jq -r .msg "$1")
	[[ "$stderr" == *"$msg"* ]] || fail "stderr does not carry the error: $stderr"
}

@test "a bad annotation value: exactly one JSON error line naming the container, and on stderr" {
	b=$(setup_bundle bad)
	annotate "$b" runc-userns.io/userns bogus
	create_logged "$TESTDIR/log" json "$b" bad
	[ "$status" = 1 ]
	one_json_error "$TESTDIR/log" bad
	jq -e '.msg | contains("runc-userns.io/userns=\"bogus\"")' "$TESTDIR/log"
	[ -z "$stdout" ]
	[ ! -e "$RUNC_ROOT/bad" ]
	# A second failed call appends its own single line (runc's O_APPEND).
	create_logged "$TESTDIR/log" json "$b" bad
	[ "$(wc -l <"$TESTDIR/log")" = 2 ]
	[ "$(jq -s 'map(.level) | unique' "$TESTDIR/log" | jq -c .)" = '["error"]' ]
}

@test "pool exhausted: exactly one JSON error line naming the container" {
	POOL_SLOTS=1 write_config '{}'
	b1=$(setup_bundle e1)
	b2=$(setup_bundle e2)
	annotate "$b1" runc-userns.io/userns auto
	annotate "$b2" runc-userns.io/userns auto
	# An unknown key of ours is a warning: logged when the call succeeds,
	# dropped when it fails (the error must be the only line).
	annotate "$b1" runc-userns.io/nosuchkey x
	annotate "$b2" runc-userns.io/nosuchkey x
	create_logged "$TESTDIR/e1.log" json "$b1" e1
	[ "$status" = 0 ]
	jq -se 'map(select(.level == "warning" and (.msg | contains("runc-userns.io/nosuchkey")))) | length == 1' "$TESTDIR/e1.log"
	create_logged "$TESTDIR/e2.log" json "$b2" e2
	[ "$status" = 1 ]
	one_json_error "$TESTDIR/e2.log" e2
	jq -e '.msg | contains("user namespace pool exhausted")' "$TESTDIR/e2.log"
	[ ! -e "$RUNC_ROOT/e2" ]
	[ "$(pool_json | jq -r '.[].owner')" = e1 ]
}

@test "--log-format text: the error as one logfmt line" {
	b=$(setup_bundle bad)
	annotate "$b" runc-userns.io/userns bogus
	create_logged "$TESTDIR/log" text "$b" bad
	[ "$status" = 1 ]
	[ "$(wc -l <"$TESTDIR/log")" = 1 ]
	grep -Eq '^time="[^"]+" level=error msg=".*container bad: .*"$' "$TESTDIR/log"
	[[ "$stderr" == *"container bad: "*bogus* ]]
	# The default format is text too.
	rm "$TESTDIR/log"
	status=0
	wrapper --log "$TESTDIR/log" create --bundle "$b" bad </dev/null >/dev/null 2>&1 || status=$?
	[ "$status" = 1 ]
	[ "$(wc -l <"$TESTDIR/log")" = 1 ]
	grep -q 'level=error' "$TESTDIR/log"
}

@test "a failed runc create under auto: the log holds runc's lines only" {
	for id in broken plain; do
		b=$(setup_bundle "$id")
		update_config "$b" '.process.args = ["/does/not/exist"]'
	done
	annotate "$TESTDIR/broken" runc-userns.io/userns auto
	run ! wrapper --log "$TESTDIR/broken.log" --log-format json run --bundle "$TESTDIR/broken" broken </dev/null
	# runc's own lines for the same failure, without us.
	run ! plain_runc --log "$TESTDIR/plain.log" --log-format json run --bundle "$TESTDIR/plain" plain </dev/null
	[ -s "$TESTDIR/broken.log" ]
	jq -e . "$TESTDIR/broken.log" >/dev/null
	[ "$(jq -s 'map(select(.level != "error" and .level != "warning")) | length' "$TESTDIR/broken.log")" = 0 ]
	run ! grep -Eq 'runc-userns|user namespace|/state/' "$TESTDIR/broken.log"
	diff -u <(normalise_time <"$TESTDIR/plain.log") <(normalise_time <"$TESTDIR/broken.log")
	[ "$(pool_json | jq length)" = 0 ]
}

@test "a warning about a spec that runc then fails to run: the log holds runc's lines only" {
	b=$(setup_bundle typo)
	# A misspelt annotation of ours: warned about, the spec is runc's as it is.
	annotate "$b" runc-userns.io/usern auto
	update_config "$b" '.process.args = ["/does/not/exist"]'
	run ! wrapper --log "$TESTDIR/typo.log" --log-format json run --bundle "$b" typo </dev/null
	jq -e . "$TESTDIR/typo.log" >/dev/null
	run ! grep -q 'unknown annotation' "$TESTDIR/typo.log"
	# And kept when runc succeeds.
	update_config "$b" '.process.args = ["true"]'
	run -0 wrapper --log "$TESTDIR/ok.log" --log-format json run --bundle "$b" typo </dev/null
	jq -e 'select(.level == "warning") | .msg | contains("unknown annotation runc-userns.io/usern")' "$TESTDIR/ok.log"
}

@test "a successful create under auto: info lines of ours in the log, nothing on stdout" {
	b=$(pooled_bundle good)
	create_logged "$TESTDIR/log" json "$b" good
	[ "$status" = 0 ]
	[ -z "$stdout" ]
	[ -z "$stderr" ]
	jq -e . "$TESTDIR/log" >/dev/null
	# The pod's line: its user namespace, its range, its idmapped rootfs.
	[ "$(jq -s 'map(select(.level == "info" and (.msg | test("^container good: pod good runs in user namespace .*, uid/gid 0-65535 -> host [0-9]+-[0-9]+, rootfs idmapped at ")))) | length' "$TESTDIR/log")" = 1 ]
	[ "$(jq -s 'map(select(.level == "error")) | length' "$TESTDIR/log")" = 0 ]
	run -0 wrapper start good
	[ "$(plain_runc state good | jq -r .status)" = running ]
	# With --debug: the same line once, and where the create's time went.
	b4=$(pooled_bundle debug2)
	wrapper --debug --log "$TESTDIR/debug2.log" --log-format json create --bundle "$b4" debug2 </dev/null >/dev/null 2>&1
	jq -se 'map(select(.msg | test("^container debug2: create took "))) | length == 1' "$TESTDIR/debug2.log"
	jq -se 'map(select(.level == "info" and (.msg | contains("container debug2: pod debug2 runs in user namespace")))) | length == 1' "$TESTDIR/debug2.log"
	# Without --log nothing of ours is printed for a successful create:
	# podman shows whatever it prints in the container's logs.
	b2=$(pooled_bundle quiet)
	wrapper create --bundle "$b2" quiet </dev/null >"$TESTDIR/q.out" 2>"$TESTDIR/q.err"
	[ ! -s "$TESTDIR/q.out" ]
	[ ! -s "$TESTDIR/q.err" ]
}

@test "--debug: create and delete each log one line with the time of every step" {
	b=$(pooled_bundle timed)
	wrapper --debug --log "$TESTDIR/log" --log-format json create --bundle "$b" timed </dev/null >/dev/null 2>&1
	wrapper --debug --log "$TESTDIR/log" --log-format json delete --force timed
	# Every step named, each with its milliseconds, the total first.
	ms='[0-9]+\.[0-9]{2} ms'
	jq -r 'select(.level == "debug") | .msg' "$TESTDIR/log" | grep -E "^container timed: create took $ms: load $ms, request $ms, features $ms, pool $ms, pin $ms, rootfs $ms, mounts $ms, stamp $ms, modify $ms, write $ms, stdio $ms, runc $ms, detach $ms$" ||
		fail "no create timing line in: $(cat "$TESTDIR/log")"
	jq -r 'select(.level == "debug") | .msg' "$TESTDIR/log" | grep -E "^container timed: delete took $ms: state $ms, runc $ms, release $ms$" ||
		fail "no delete timing line in: $(cat "$TESTDIR/log")"
	[ "$(pool_json | jq length)" = 0 ]
}

@test "a config.json that does not parse: an error naming the file and the offset; the file is untouched" {
	b=$(pooled_bundle badjson)
	cp "$b/config.json" "$TESTDIR/good.json"
	# A ';' for the comma that ends the second line.
	sed -i '2s/,$/;/' "$b/config.json"
	pos=$(grep -bo ';' "$b/config.json" | head -n 1 | cut -d: -f1)
	line1=$(head -n 1 "$b/config.json" | wc -c)
	sum=$(sha256sum <"$b/config.json")
	create_logged "$TESTDIR/log" json "$b" badjson
	[ "$status" = 1 ]
	one_json_error "$TESTDIR/log" badjson
	[[ "$stderr" == *"$b/config.json"* ]]
	[[ "$stderr" == *"offset $((pos + 1)) (line 2, column $((pos - line1 + 1)))"* ]]
	[ "$(sha256sum <"$b/config.json")" = "$sum" ]
	[ -z "$(find "$b" -maxdepth 1 -name '.*')" ]
	[ ! -e "$RUNC_ROOT/badjson" ]

	# A value of the wrong type in a member the wrapper reads: the field
	# and its offset. (One in a member it passes through undecoded, such
	# as process, is runc's to refuse: hostile.bats.)
	sed 's/"hostname": "runc",/"hostname": 7,/' "$TESTDIR/good.json" >"$b/config.json"
	grep -q '"hostname": 7' "$b/config.json"
	sum=$(sha256sum <"$b/config.json")
	run -1 wrapper create --bundle "$b" badjson
	[[ "$output" == *"$b/config.json"* ]]
	[[ "$output" == *'field "hostname"'*"offset "[0-9]* ]]
	[ "$(sha256sum <"$b/config.json")" = "$sum" ]

	# Cut short.
	head -c 100 "$TESTDIR/good.json" >"$b/config.json"
	sum=$(sha256sum <"$b/config.json")
	run -1 wrapper create --bundle "$b" badjson
	[[ "$output" == *"$b/config.json"* ]]
	[ "$(sha256sum <"$b/config.json")" = "$sum" ]
	[ -z "$(find "$b" -maxdepth 1 -name '.*')" ]
	[ ! -e "$RUNC_ROOT/badjson" ]
}

@test "unknown fields in config.json survive an auto create's rewrite, values unchanged" {
	b=$(pooled_bundle foreign)
	mkdir "$TESTDIR/vol"
	update_config "$b" '. + {"x-vendor": {"a": 1, "list": [1, "two", {"three": 3.5}], "s": "ü <&> \u0001"}}
		| .process["x-proc"] = {"keep": true, "n": null}
		| .linux["x-linux"] = [{"nested": {"deep": [null, false]}}]
		| .mounts[0]["x-mount"] = "kept"
		| .mounts += [{"destination": "/vol", "type": "bind", "source": "'"$TESTDIR/vol"'", "options": ["rbind", "rw"], "x-bind": {"k": "v"}}]'
	# Numbers jq would round: written by hand.
	sed -i 's/"a": 1,$/"a": 1, "big": 18446744073709551615, "exp": 1e400,/' "$b/config.json"
	grep -q 18446744073709551615 "$b/config.json"
	paths='."x-vendor", .process."x-proc", .linux."x-linux", .mounts[0]."x-mount", (.mounts[] | select(.destination == "/vol") | ."x-bind")'
	before=$(jq -cS "$paths" "$b/config.json")
	start_container "$b" foreign
	# It was rewritten: our stamp is in it.
	jq -e '.annotations["runc-userns.io/stamp"]' "$b/config.json" >/dev/null
	[ "$(jq -cS "$paths" "$b/config.json")" = "$before" ]
	grep -q '"big": *18446744073709551615' "$b/config.json"
	grep -q '"exp": *1e400' "$b/config.json"
	# The container runs and sees its bind mount.
	run -0 cexec foreign sh -c 'echo hi >/vol/f && cat /vol/f'
	[ "$output" = hi ]
}

# The user namespace entry is added to linux.namespaces: an array that
# grows must not lose what its existing elements carry.
@test "unknown fields in the elements of linux.namespaces survive an auto create's rewrite" {
	b=$(pooled_bundle foreign)
	update_config "$b" '.linux.namespaces |= map(. + {"x-ns": {"type-was": .type}})'
	before=$(jq -cS '[.linux.namespaces[] | select(.type != "user") | {type, "x-ns"}] | sort_by(.type)' "$b/config.json")
	start_container "$b" foreign
	jq -e '.annotations["runc-userns.io/stamp"]' "$b/config.json" >/dev/null
	[ "$(jq '.linux.namespaces | map(select(.type == "user")) | length' "$b/config.json")" = 1 ]
	after=$(jq -cS '[.linux.namespaces[] | select(.type != "user") | {type, "x-ns"}] | sort_by(.type)' "$b/config.json")
	diff -u <(echo "$before" | jq .) <(echo "$after" | jq .)
}

@test "an operator config with an unknown key: creates refused naming the key and the file; the node can still stop and remove its containers" {
	b=$(setup_bundle c1)
	start_container "$b" c1
	p=$(pooled_bundle p1)
	start_container "$p" p1
	for over in '{"bogusKey": 1}' '{"userns": {"poolSize": 1}}'; do
		write_config "$over"
		key=$(echo "$over" | jq -r '[paths | last | strings] | last')
		rm -f "$TESTDIR/log"
		status=0
		wrapper --log "$TESTDIR/log" --log-format json create --bundle "$b" c2 </dev/null >/dev/null 2>"$TESTDIR/err" || status=$?
		[ "$status" = 1 ]
		grep -qF "\"$key\"" "$TESTDIR/err"
		grep -qF "$RUNC_USERNS_CONFIG" "$TESTDIR/err"
		[ "$(wc -l <"$TESTDIR/log")" = 1 ]
		jq -e --arg k "$key" '.level == "error" and (.msg | contains($k))' "$TESTDIR/log"
		[ ! -e "$RUNC_ROOT/c2" ]
		# state and kill go on, handed to runc as they are.
		rm -f "$TESTDIR/log"
		run -0 wrapper --log "$TESTDIR/log" --log-format json state c1
		[ "$(echo "$output" | jq -r .status)" = running ]
		run -0 wrapper --log "$TESTDIR/log" --log-format json kill c1 CONT
		[ ! -s "$TESTDIR/log" ]
		run -1 "$WRAPPER" pool ls
		[[ "$output" == *"$key"*"$RUNC_USERNS_CONFIG"* || "$output" == *"$RUNC_USERNS_CONFIG"*"$key"* ]]
	done
	run -0 wrapper delete --force c1
	[ ! -e "$RUNC_ROOT/c1" ]
	# The pool pod's delete still gives its range back, and warns in the
	# log, naming the key and the file.
	[ -n "$(pool_records)" ]
	rm -f "$TESTDIR/log"
	run -0 wrapper --log "$TESTDIR/log" --log-format json delete --force p1
	pool_empty
	jq -e --arg f "$RUNC_USERNS_CONFIG" 'select(.level == "warning") | .msg | contains($f) and contains("every create is refused")' "$TESTDIR/log"
	# A file that is not JSON at all: nothing can be read from it.
	echo '{"runtime": ' >"$RUNC_USERNS_CONFIG"
	run -1 wrapper state c1
	[[ "$output" == *"$RUNC_USERNS_CONFIG"* ]]
}
