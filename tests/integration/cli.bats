#!/usr/bin/env bats
# The command line: argv, exit status, fds, environment and signals reach
# the real runc untouched (checked with the fake runc in tests/bin/runc),
# the real runc is found and never confused with ourselves, and the
# operator's pool verbs.

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

# wrapper_ok ARGS...: $WRAPPER ARGS (no --root added) exits 0 and the fake
# runc's last call had exactly ARGS.
wrapper_ok() {
	local before
	before=$(fake_runc_calls)
	"$WRAPPER" "$@" </dev/null >"$TESTDIR/out" 2>"$TESTDIR/err" || {
		echo "runc-userns $* failed: $(cat "$TESTDIR/err")" >&2
		return 1
	}
	[ "$(fake_runc_calls)" -gt "$before" ] || fail "runc-userns $*: the fake runc did not run"
	expect_fake_argv "$@"
}

@test "pass-through commands: argv reaches runc byte for byte" {
	use_fake_runc
	wrapper_ok --root "$RUNC_ROOT" state c1
	wrapper_ok --root "$RUNC_ROOT" state "id with spaces"
	wrapper_ok --root "$RUNC_ROOT" exec c1 sh -c 'echo "a  b" $1' "" -- "ü ñ 日本 🙂" --env=A=b -f=v "" -
	wrapper_ok --root "$RUNC_ROOT" exec --env "A=b c" -e= --cwd=/ c1 printf '%s\n' $'new\nline' $'tab\there' '*' '$HOME' '\'
	wrapper_ok --root "$RUNC_ROOT" exec c1 echo $'\xff\xfe not UTF-8 \xc3' $'\e[31m'
	wrapper_ok --root="$RUNC_ROOT" --log="$TESTDIR/a log" --log-format=json kill c1 KILL
	wrapper_ok --root "$RUNC_ROOT" --log "$TESTDIR/a log" --log-format json kill --all c1 9
	wrapper_ok -root="$RUNC_ROOT" -log-format=text list -q
	wrapper_ok --debug --systemd-cgroup --criu /no/criu --rootless=false ps c1 -- -o pid
	wrapper_ok --debug=false --root "$RUNC_ROOT" -- list
	wrapper_ok --root "$RUNC_ROOT" update --memory 10M c1 --pids-limit=5 --
	wrapper_ok --root "$RUNC_ROOT" events --stats --interval=1s c1
	wrapper_ok --root "$RUNC_ROOT" pause c1
	wrapper_ok features --help
	wrapper_ok spec --rootless --bundle "$TESTDIR/no such bundle"
	wrapper_ok checkpoint --image-path "$TESTDIR/img" --leave-running c1
	# What runc itself would refuse still reaches it as it is.
	wrapper_ok --root "$RUNC_ROOT" nosuchcommand "a b" ""
	wrapper_ok --no-such-flag=x --root "$RUNC_ROOT" state c1
	wrapper_ok --root
	wrapper_ok ""
	wrapper_ok --root "$RUNC_ROOT" create
	wrapper_ok --root "$RUNC_ROOT" create --no-such-flag c1
	wrapper_ok --root "$RUNC_ROOT" create c1 c2
	wrapper_ok --root "$RUNC_ROOT" create --help
	wrapper_ok --root "$RUNC_ROOT" run --bundle
	# delete is ours (it releases what the container held) but runc gets
	# the very same argv.
	wrapper_ok --root "$RUNC_ROOT" delete c1
	wrapper_ok --root "$RUNC_ROOT" delete c1 --force
	wrapper_ok --root="$RUNC_ROOT" delete -f=true "c1"
	wrapper_ok --root "$RUNC_ROOT" delete -- c1
	wrapper_ok --root "$RUNC_ROOT" delete ../escape
	# --version is run, not exec'd: runc still gets exactly our argv.
	wrapper_ok --version
	wrapper_ok --root "$RUNC_ROOT" -v
}

@test "create and run of a bundle with no annotation: argv byte for byte, config.json untouched" {
	use_fake_runc
	b=$(setup_bundle c1)
	sum=$(sha256sum <"$b/config.json")
	# The bundle directory's listing (hidden temporary files included) and
	# its mtime: no file was written and renamed there.
	{ ls -lA --time-style=full-iso "$b"; stat -c %y "$b"; } >"$TESTDIR/bundle.before"
	wrapper_ok --root "$RUNC_ROOT" create --bundle "$b" c1
	wrapper_ok --root "$RUNC_ROOT" create -b="$b" --pid-file "$TESTDIR/pid file" --no-pivot --no-new-keyring c1
	wrapper_ok --root "$RUNC_ROOT" create c1 --bundle "$b" --console-socket "$TESTDIR/sock"
	wrapper_ok --root="$RUNC_ROOT" --log="$TESTDIR/log" --log-format=json create --bundle="$b" --preserve-fds=0 c1
	wrapper_ok --root "$RUNC_ROOT" create --bundle "$b" -- c1
	wrapper_ok --root "$RUNC_ROOT" run -d --bundle "$b" c1
	wrapper_ok --root "$RUNC_ROOT" run --detach=true --keep --no-subreaper --bundle "$b" c1
	wrapper_ok --root "$RUNC_ROOT" run --bundle "$b" c1
	(cd "$b" && wrapper_ok --root "$RUNC_ROOT" create c1)
	[ "$(sha256sum <"$b/config.json")" = "$sum" ]
	{ ls -lA --time-style=full-iso "$b"; stat -c %y "$b"; } | diff -u "$TESTDIR/bundle.before" -
	# Nothing of ours was created for it.
	[ ! -e "$STATE_DIR/pool.d" ]
	[ ! -e "$STATE_DIR/pool.json" ]
	[ -z "$(cd "$STATE_DIR" 2>/dev/null && find pods containers -mindepth 1 2>/dev/null)" ]
}

@test "create of a pool pod: runc gets the same argv" {
	use_fake_runc
	b=$(pooled_bundle c1)
	wrapper_ok --root "$RUNC_ROOT" create --bundle "$b" --pid-file "$TESTDIR/p f" c1
	wrapper_ok --root="$RUNC_ROOT" --log "$TESTDIR/log" run -d c1 -b="$b"
	# The fake runc created nothing: what the wrapper took is given back.
	[ "$(pool_json | jq length)" = 0 ]
	[ -z "$(staging_mounts)" ]
}

@test "exit status propagates" {
	use_fake_runc
	b=$(setup_bundle c1)
	a=$(pooled_bundle c2)
	export FAKE_RUNC_EXIT=42
	run -42 wrapper state c1
	run -42 wrapper exec c1 true
	run -42 wrapper kill c1 KILL
	run -42 wrapper create --bundle "$b" c1
	run -42 wrapper run --bundle "$b" c1
	run -42 wrapper delete --force c1
	run -42 wrapper create --bundle "$a" c2
	run -42 wrapper run --bundle "$a" c2
	run -42 "$WRAPPER" --version
	FAKE_RUNC_EXIT=3 run -3 wrapper list
	FAKE_RUNC_EXIT=255 run -255 wrapper delete c1
	FAKE_RUNC_EXIT=255 run -255 wrapper create --bundle "$a" c2
	[ "$(pool_json | jq length)" = 0 ]
}

# fd_list FILE: the "FD -> TARGET" lines of a fake runc fd record, sorted.
fd_list() {
	awk '$(NF-1) == "->" {print $(NF-2), "->", $NF}' "$1" | sort -n
}

@test "inherited fds and LISTEN_FDS reach runc; none of ours does (but a pool create's in-flight marker)" {
	use_fake_runc
	b=$(setup_bundle c1)
	a=$(pooled_bundle c2)
	three=$TESTDIR/three four=$TESTDIR/four
	# What the fake sees when called directly, with the same fds.
	LISTEN_FDS=1 LISTEN_PID=4242 \
		"$FAKE_RUNC" --root "$RUNC_ROOT" exec --preserve-fds 2 c1 true </dev/null >"$TESTDIR/out" 2>"$TESTDIR/err" 3>"$three" 4>"$four"
	fd_list "$FAKE_RUNC_LOG.fds" >"$TESTDIR/direct.fds"
	grep -qxF "3 -> $three" "$TESTDIR/direct.fds"
	grep -qxF "4 -> $four" "$TESTDIR/direct.fds"
	for argv in "exec --preserve-fds 2 c1 true" \
		"create --preserve-fds 2 --bundle $b c1" \
		"run -d --preserve-fds=2 --bundle $b c1" \
		"create --preserve-fds 2 --bundle $a c2" \
		"delete --force c1"; do
		# shellcheck disable=SC2086 # split on purpose
		LISTEN_FDS=1 LISTEN_PID=4242 "$WRAPPER" --root "$RUNC_ROOT" --log "$TESTDIR/log" --log-format json $argv \
			</dev/null >"$TESTDIR/out" 2>"$TESTDIR/err" 3>"$three" 4>"$four"
		[ "$(fake_runc_fd 3)" = "$three" ]
		[ "$(fake_runc_fd 4)" = "$four" ]
		[ "$(fake_runc_env LISTEN_FDS)" = 1 ]
		[ "$(fake_runc_env LISTEN_PID)" = 4242 ]
		# Exactly the fds the caller had: no log file, lock or spec of ours;
		# except, for the pool pod, its in-flight marker, which runc must
		# inherit (pool/doc.go), and stdin, a host device node, replaced by
		# a private node of the same device (SECURITY.md).
		fd_list "$FAKE_RUNC_LOG.fds" >"$TESTDIR/got.fds"
		cp "$TESTDIR/direct.fds" "$TESTDIR/want.fds"
		if [[ $argv == *" $a "* ]]; then
			grep -q "^[0-9]* -> $STATE_DIR/inflight/[0-9a-f]*-c2\$" "$TESTDIR/got.fds"
			sed -i "\| -> $STATE_DIR/inflight/|d" "$TESTDIR/got.fds"
			# The private node lives on a tmpfs that is never attached
			# (fsmount): the kernel names it by the tmpfs's own root,
			# /runc-userns-stdio-0, not the host's /dev/null.
			sed -i 's|^0 -> /dev/null$|0 -> /runc-userns-stdio-0|' "$TESTDIR/want.fds"
		fi
		diff -u --label direct --label "runc-userns $argv" "$TESTDIR/want.fds" "$TESTDIR/got.fds"
	done
}

@test "the environment reaches runc unchanged" {
	use_fake_runc
	b=$(setup_bundle c1)
	a=$(pooled_bundle c2)
	export FOO='bar baz' EMPTY= MULTI=$'line1\nline2=x' UNICODE='ü日本'
	"$FAKE_RUNC" state c1 </dev/null >/dev/null
	cp "$FAKE_RUNC_LOG.env" "$TESTDIR/direct.env"
	for argv in "state c1" "create --bundle $b c1" "create --bundle $a c2" "delete c1" "--version"; do
		# shellcheck disable=SC2086 # split on purpose
		"$WRAPPER" --root "$RUNC_ROOT" $argv </dev/null >/dev/null 2>"$TESTDIR/err"
		[ "$(fake_runc_env FOO)" = 'bar baz' ]
		[ "$(fake_runc_env EMPTY)" = '' ]
		[ "$(fake_runc_env MULTI)" = $'line1\nline2=x' ]
		[ "$(fake_runc_env UNICODE)" = 'ü日本' ]
		# All of it, nothing added or dropped.
		diff -u --label direct --label "runc-userns $argv" \
			<(sort -z "$TESTDIR/direct.env" | tr '\0\n' '\n ') <(sort -z "$FAKE_RUNC_LOG.env" | tr '\0\n' '\n ')
	done
	# An empty environment stays empty (what podman does for delete).
	env -i FAKE_RUNC_LOG="$FAKE_RUNC_LOG" RUNC_USERNS_CONFIG="$RUNC_USERNS_CONFIG" "$WRAPPER" --root "$RUNC_ROOT" state c1
	[ "$(sort -z "$FAKE_RUNC_LOG.env" | grep -zv '^\(PWD\|SHLVL\|_\)=' | tr '\0' ' ')" = "FAKE_RUNC_LOG=$FAKE_RUNC_LOG RUNC_USERNS_CONFIG=$RUNC_USERNS_CONFIG " ]
}

@test "a config whose runtime is the wrapper itself is refused" {
	b=$(setup_bundle c1)
	ln -s "$WRAPPER" "$TESTDIR/runc"
	# A hard link is the same file too. One of the wrapper itself needs the
	# test dir on the wrapper's filesystem: a copy in the test dir, run as
	# the wrapper, and a hard link of it beside it, on any filesystem.
	cp "$WRAPPER" "$TESTDIR/wrapper-copy"
	ln "$TESTDIR/wrapper-copy" "$TESTDIR/hardlink"
	for case in "$WRAPPER:$WRAPPER" "$WRAPPER:$TESTDIR/runc" "$TESTDIR/wrapper-copy:$TESTDIR/hardlink"; do
		self=${case%%:*} rt=${case#*:}
		write_config "$(jq -n --arg rt "$rt" '{runtime: $rt}')"
		for argv in "state c1" "create --bundle $b c1" "delete c1" "--version" "features"; do
			# shellcheck disable=SC2086 # split on purpose
			run -1 --separate-stderr "$self" --root "$RUNC_ROOT" $argv
			[[ "$stderr" == *"refusing to run runc-userns as the real runc"* ]]
			[[ "$stderr" == *"$rt"* ]]
		done
	done
	[ ! -e "$RUNC_ROOT/c1" ]
}

# expected_fallback: the first of the wrapper's fallback runcs that exists.
expected_fallback() {
	local p
	for p in /usr/local/sbin/runc /usr/local/bin/runc /usr/sbin/runc /usr/bin/runc /sbin/runc /bin/runc; do
		if [ -x "$p" ] && [ ! "$p" -ef "$WRAPPER" ]; then
			echo "$p"
			return 0
		fi
	done
	fail "no runc in the fallback paths"
	return 1
}

@test "no runtime configured, PATH has only a runc that is the wrapper: it skips itself" {
	jq 'del(.runtime)' "$RUNC_USERNS_CONFIG" >"$TESTDIR/c.json"
	mv "$TESTDIR/c.json" "$RUNC_USERNS_CONFIG"
	mkdir "$TESTDIR/bin"
	ln -s "$WRAPPER" "$TESTDIR/bin/runc"
	want=$(expected_fallback)
	"$want" --version >"$TESTDIR/want"
	for how in "$WRAPPER" runc; do
		run -0 --separate-stderr env PATH="$TESTDIR/bin" "$how" --version
		[ -z "$stderr" ]
		diff -u "$TESTDIR/want" <(echo "$output" | head -n -1)
		[[ "$(echo "$output" | tail -n 1)" == "runc-userns: "*"(real runtime $want)" ]]
	done
	# The first runc on PATH that is not the wrapper wins over the fallbacks.
	mkdir "$TESTDIR/fake"
	ln -s "$FAKE_RUNC" "$TESTDIR/fake/runc"
	run -0 env PATH="$TESTDIR/bin:$TESTDIR/fake" runc --version
	[ "$(echo "$output" | head -n 1)" = "runc version 1.1.5" ]
	[[ "$(echo "$output" | tail -n 1)" == *"(real runtime $TESTDIR/fake/runc)" ]]
	# Real work through the symlink: a container, created and deleted.
	b=$(setup_bundle c1)
	update_config "$b" '.process.args = ["true"]'
	run -0 env PATH="$TESTDIR/bin" runc --root "$RUNC_ROOT" run --bundle "$b" c1 </dev/null
	[ ! -e "$RUNC_ROOT/c1" ]
}

# run_in_background OUT ARGS...: the wrapper with ARGS in the background,
# stdout and stderr in OUT.{out,err}; sets BG_PID to the wrapper's PID.
run_in_background() {
	local out=$1
	shift
	"$WRAPPER" --root "$RUNC_ROOT" "$@" </dev/null >"$out.out" 2>"$out.err" 3>&- &
	BG_PID=$!
}

# wait_exit PID SECONDS: wait for a background job to end, at most SECONDS;
# sets BG_STATUS. Kills it (and fails) if it does not end.
wait_exit() {
	local i
	for i in $(seq $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1"
		wait "$1" || true
		fail "process $1 did not end within $2 s"
		return 1
	fi
	BG_STATUS=0
	wait "$1" || BG_STATUS=$?
}

@test "SIGTERM and SIGALRM to a foreground run reach the container; the wrapper exits with runc's status" {
	# A foreground run forwards every signal (create and delete forward
	# only the usual few: internal/runc/exec_linux.go); SIGALRM is not one
	# of those few.
	for mode in none auto; do
		for sig in TERM:42 ALRM:43; do
			name="fg-$mode-${sig%%:*}"
			b=$(setup_bundle "$name")
			[ "$mode" = none ] || annotate "$b" runc-userns.io/userns auto
			# The init of a PID namespace ignores signals it has no
			# handler for, so sleep as init would never end: trap the
			# signal, and say when the trap is in place. Its own exit
			# status (not the 128+N of a process killed by the signal)
			# tells that runc's status came back.
			update_config "$b" ".process.args = [\"sh\", \"-c\", \"trap \\\"exit ${sig#*:}\\\" ${sig%%:*}; touch /ready; sleep infinity & wait\"]"
			run_in_background "$TESTDIR/$name" run --bundle "$b" "$name"
			for i in $(seq 100); do
				[ -e "$b/rootfs/ready" ] && break
				sleep 0.1
			done
			[ -e "$b/rootfs/ready" ] || {
				kill -KILL "$BG_PID"
				cat "$TESTDIR/$name.err"
				fail "$name did not start"
			}
			[ "$(plain_runc state "$name" | jq -r .status)" = running ]
			kill "-${sig%%:*}" "$BG_PID"
			wait_exit "$BG_PID" 10
			echo "$name: status $BG_STATUS; stderr: $(cat "$TESTDIR/$name.err")"
			[ "$BG_STATUS" = "${sig#*:}" ]
			# runc deleted the foreground container; we gave back its range.
			[ ! -e "$RUNC_ROOT/$name" ]
			pool_empty
			[ -z "$(staging_mounts)" ]
		done
	done
}

@test "a foreground run: stdin, stdout and stderr are the container's" {
	for mode in none auto; do
		b=$(setup_bundle "io-$mode")
		[ "$mode" = none ] || annotate "$b" runc-userns.io/userns auto
		update_config "$b" '.process.args = ["sh", "-c", "read l; echo \"out $l\"; echo \"err $l\" >&2; exit 5"]'
		status=0
		echo "hello $mode" | wrapper run --bundle "$b" "io-$mode" >"$TESTDIR/out" 2>"$TESTDIR/err" || status=$?
		[ "$status" = 5 ]
		[ "$(cat "$TESTDIR/out")" = "out hello $mode" ]
		[ "$(cat "$TESTDIR/err")" = "err hello $mode" ]
		[ ! -e "$RUNC_ROOT/io-$mode" ]
	done
	[ "$(pool_json | jq length)" = 0 ]
}

@test "pool ls --json: an array of objects with owner, hostID, size, root, allocated" {
	run -0 pool_json
	[ "$(echo "$output" | jq -c .)" = '[]' ]
	b=$(pooled_bundle p1)
	before=$(date +%s)
	start_container "$b" p1
	run -0 --separate-stderr pool_json
	[ -z "$stderr" ]
	echo "$output" | jq -e 'type == "array" and length == 1 and (.[0] | type == "object")'
	[ "$(echo "$output" | jq -c '.[0] | keys - ["members"]')" = '["allocated","hostID","owner","root","size"]' ]
	[ "$(echo "$output" | jq -c '.[0] | [.owner, .hostID, .size, .root, .members]')" = \
		"[\"p1\",$POOL_BASE,65536,\"$RUNC_ROOT\",[\"p1\"]]" ]
	allocated=$(echo "$output" | jq -r '.[0].allocated')
	[[ "$allocated" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$ ]]
	t=$(date -d "$allocated" +%s)
	[ "$t" -ge $((before - 1)) ]
	[ "$t" -le $(($(date +%s) + 1)) ]
}

@test "an admin verb after runc's global flags: our error, not runc's" {
	# The runtime is the fake runc, which records every call: none may come.
	use_fake_runc
	for verb in pool doctor; do
		run -1 --separate-stderr "$WRAPPER" --root "$RUNC_ROOT" --debug "$verb" ls
		[[ "$stderr" == *"$verb is runc-userns's own command, not runc's"*"run \`runc-userns $verb ...\`"* ]]
	done
	[ "$(fake_runc_calls)" = 0 ]
	[ ! -e "$FAKE_RUNC_LOG" ]
	# The check can fail: the same global flags before a runc command do
	# reach the fake runc.
	run -0 "$WRAPPER" --root "$RUNC_ROOT" --debug list
	[ "$(fake_runc_calls)" = 1 ]
}

@test "pool ls: a header, then one line per range" {
	run -0 --separate-stderr "$WRAPPER" pool ls
	[ "${#lines[@]}" = 1 ]
	[[ "${lines[0]}" == OWNER*HOST*SIZE*ROOT*ALLOCATED* ]]
	b=$(pooled_bundle p1)
	start_container "$b" p1
	run -0 --separate-stderr "$WRAPPER" pool ls
	[ -z "$stderr" ]
	[ "${#lines[@]}" = 2 ]
	[[ "${lines[0]}" == OWNER*HOST*SIZE*ROOT*ALLOCATED* ]]
	read -r owner ids size _ <<<"${lines[1]}"
	[ "$owner" = p1 ]
	[ "$ids" = "$POOL_BASE-$((POOL_BASE + 65535))" ]
	[ "$size" = 65536 ]
	[[ "${lines[1]}" == *" $RUNC_ROOT "* ]]
}

@test "pool release OWNER returns the range and unpins the pod, refused while it runs unless --force; an unknown owner is fine" {
	run -0 "$WRAPPER" pool release nosuchowner
	b=$(pooled_bundle p1)
	start_container "$b" p1
	[ -e "$STATE_DIR/pods/p1" ]
	run -0 "$WRAPPER" pool release nosuchowner
	[ "$(pool_json | jq -r '.[].owner')" = p1 ]
	# p1 runs: its range is its own.
	run -1 "$WRAPPER" pool release p1
	[[ "$output" == *"owner p1: its containers p1 (runc root $RUNC_ROOT) are alive and use host IDs $POOL_BASE-$((POOL_BASE + 65535))"*"delete them first (or use --force)"* ]]
	[ "$(pool_json | jq -r '.[].owner')" = p1 ]
	[ -e "$STATE_DIR/pods/p1/userns" ]
	run -0 "$WRAPPER" pool release --force p1
	[ "$(pool_json | jq length)" = 0 ]
	[ ! -e "$STATE_DIR/pods/p1" ]
	run -0 "$WRAPPER" pool release p1
	# The container itself still deletes cleanly afterwards.
	run -0 wrapper delete --force p1
	[ ! -e "$RUNC_ROOT/p1" ]
	# And its range is free for the next pod.
	b2=$(pooled_bundle p2)
	start_container "$b2" p2
	[ "$(pool_json | jq -r '.[0].hostID')" = "$POOL_BASE" ]
	# Usage errors are errors.
	run -1 "$WRAPPER" pool release
	run -1 "$WRAPPER" pool release a b
}
