#!/usr/bin/env bats
# Pass-through parity: every command runc-userns does not act on behaves as
# plain runc, on the same containers and the same --root: same stdout, same
# stderr (runc's log times aside), same exit status.

load helpers

setup() {
	requires root
	setup_env
}

teardown() {
	teardown_env
}

# two_containers: c1 (no annotation) and c2 (a pool user namespace), running.
two_containers() {
	local b
	b=$(setup_bundle c1)
	start_container "$b" c1
	b=$(pooled_bundle c2)
	start_container "$b" c2
}

@test "list, list -q and list --format json are runc's" {
	two_containers
	same_as_runc list
	[ "$(awk 'NR > 1 {print $1}' "$TESTDIR/wrapper.out" | sort | xargs)" = "c1 c2" ]
	same_as_runc list -q
	same_as_runc list --format json
	same_as_runc list --format=json
	# The same containers, the same created times.
	[ "$(jq -c 'map({id, status, created}) | sort_by(.id)' "$TESTDIR/wrapper.out")" = \
		"$(plain_runc list --format json | jq -c 'map({id, status, created}) | sort_by(.id)')" ]
	[ "$(jq -r 'map(.status) | unique | .[]' "$TESTDIR/wrapper.out")" = running ]
}

@test "state and ps are runc's" {
	two_containers
	for id in c1 c2; do
		same_as_runc state "$id"
		[ "$(jq -r .id "$TESTDIR/wrapper.out")" = "$id" ]
		# ps -ef's C column is the CPU share over the process's lifetime,
		# which drifts between the two calls right after the container
		# started (5 vs 4 seen): blank it, compare the rest byte for byte.
		capture runc "$REAL_RUNC" --root "$RUNC_ROOT" ps "$id"
		capture wrapper "$WRAPPER" --root "$RUNC_ROOT" ps "$id"
		for f in runc wrapper; do
			awk 'NR > 1 {$4 = "-"} {print}' "$TESTDIR/$f.out" >"$TESTDIR/$f.out.c" && mv "$TESTDIR/$f.out.c" "$TESTDIR/$f.out"
		done
		same_capture runc wrapper
		[ "$(sed -n 2p "$TESTDIR/wrapper.out" | awk '{print $2}')" = "$(plain_runc state "$id" | jq .pid)" ]
		same_as_runc ps -- "$id" -o pid
		# ps(1) without -e lists only the caller's uid: c2's init is not root.
		same_as_runc ps -- "$id" -e -o pid
		[ "$(sed 1d "$TESTDIR/wrapper.out" | xargs)" = "$(plain_runc state "$id" | jq .pid)" ]
		same_as_runc ps "$id" -o pid,args
		same_as_runc ps --format json "$id"
		# runc hands "--" on to ps(1), which refuses it: so must we.
		same_as_runc ps "$id" -- -o pid
	done
}

@test "exec: stdout, stderr and exit status are runc's" {
	two_containers
	for id in c1 c2; do
		same_as_runc exec "$id" sh -c 'echo out; echo err >&2; exit 7'
		[ "$(cat "$TESTDIR/wrapper.out")" = out ]
		[ "$(cat "$TESTDIR/wrapper.err")" = err ]
		[ "$(cat "$TESTDIR/wrapper.rc")" = 7 ]
		same_as_runc exec --env 'A=b c' --cwd /tmp "$id" sh -c 'echo "$A"; pwd'
		[ "$(cat "$TESTDIR/wrapper.out" | xargs)" = "b c /tmp" ]
	done
	# exec's stdin reaches the process.
	run -0 sh -c "echo hello | '$WRAPPER' --root '$RUNC_ROOT' exec c1 cat"
	[ "$output" = hello ]
}

@test "kill ID KILL through the wrapper ends a container running sleep infinity" {
	two_containers
	for id in c1 c2; do
		run -0 --separate-stderr wrapper kill "$id" KILL
		[ -z "$output" ]
		[ -z "$stderr" ]
		wait_status "$id" stopped
	done
	# Killing a stopped container: runc's error, runc's status.
	same_as_runc kill c1 KILL
	[ "$(cat "$TESTDIR/wrapper.rc")" != 0 ]
}

@test "events --stats is runc's" {
	two_containers
	for id in c1 c2; do
		run -0 --separate-stderr wrapper events --stats "$id"
		echo "$output" | jq -e --arg id "$id" '.type == "stats" and .id == $id'
		# The numbers move between two calls; the shape does not.
		[ "$(echo "$output" | jq -c '[paths | map(tostring) | join(".")] | sort')" = \
			"$(plain_runc events --stats "$id" | jq -c '[paths | map(tostring) | join(".")] | sort')" ]
	done
}

@test "pause and resume (cgroup v1 freezer) are runc's" {
	[ -d /sys/fs/cgroup/freezer ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || skip "no freezer cgroup"
	two_containers
	for id in c1 c2; do
		run -0 --separate-stderr wrapper pause "$id"
		[ -z "$output$stderr" ]
		wait_status "$id" paused
		same_as_runc state "$id"
		run -0 --separate-stderr wrapper resume "$id"
		[ -z "$output$stderr" ]
		wait_status "$id" running
		run -0 cexec "$id" true
	done
	# Resuming a running container: runc's error, runc's status.
	same_as_runc resume c1
	[ "$(cat "$TESTDIR/wrapper.rc")" != 0 ]
	same_as_runc pause nosuchid
}

@test "failing commands: runc's stdout, stderr and exit status" {
	b=$(setup_bundle c1)
	start_container "$b" c1
	same_as_runc state nosuchid
	grep -q 'container does not exist' "$TESTDIR/wrapper.err"
	same_as_runc delete nosuchid
	same_as_runc delete --force nosuchid
	same_as_runc kill nosuchid
	same_as_runc kill nosuchid KILL
	same_as_runc exec nosuchid true
	same_as_runc nosuchsubcommand
	[ "$(cat "$TESTDIR/wrapper.rc")" = 3 ]
	same_as_runc --nosuchflag list
	same_as_runc list --nosuchflag
	same_as_runc_argv --nosuchflag=1 list
	same_as_runc state
	same_as_runc state c1 c1
	# create with no ID: runc's usage and its error, which names argv[0]:
	# the caller's, as runc would have had it.
	same_as_runc create
	grep -qF "$WRAPPER: \\\"create\\\" requires exactly 1 argument(s)" "$TESTDIR/wrapper.err"
	same_as_runc create --bundle "$b"
	same_as_runc run
	same_as_runc delete
	same_as_runc delete c1 c1
	# A running container without --force.
	same_as_runc delete c1
	[ "$(cat "$TESTDIR/wrapper.rc")" != 0 ]
	wait_status c1 running
	# Bad IDs runc refuses before looking.
	same_as_runc state ../c1
	same_as_runc delete ../c1
}

# The README: a pod that does not ask for anything is a plain exec of runc.
@test "create and run with an ID runc refuses, of a bundle that asks for nothing: runc's error" {
	b=$(setup_bundle c1)
	sum=$(sha256sum <"$b/config.json")
	same_as_runc create --bundle "$b" ../escape
	same_as_runc run --bundle "$b" 'a b'
	[ "$(sha256sum <"$b/config.json")" = "$sum" ]
	[ -z "$(ls -A "$RUNC_ROOT" 2>/dev/null)" ]
}

@test "global flags work in both --flag value and --flag=value forms" {
	b=$(setup_bundle c1)
	start_container "$b" c1
	same_as_runc_argv --root="$RUNC_ROOT" state c1
	same_as_runc_argv --root="$RUNC_ROOT" list -q
	[ "$(cat "$TESTDIR/wrapper.out")" = c1 ]
	same_as_runc_argv -root "$RUNC_ROOT" state c1
	same_as_runc_argv -root="$RUNC_ROOT" state c1
	same_as_runc_argv --debug --root "$RUNC_ROOT" state c1
	same_as_runc_argv --root "$RUNC_ROOT" --log-format=json state nosuchid
	same_as_runc_argv --root "$RUNC_ROOT" --log-format json state nosuchid
	jq -e '.level == "error"' "$TESTDIR/wrapper.err"
	same_as_runc_argv --root "$RUNC_ROOT" --log-format=text state nosuchid
	same_as_runc_argv --root "$RUNC_ROOT" --log-format=bogus state c1
	same_as_runc_argv --root "$RUNC_ROOT" --log "$TESTDIR" state c1

	# --log: the same lines in each one's file.
	local form
	for form in sep eq; do
		for who in runc wrapper; do
			local bin=$REAL_RUNC
			[ "$who" = runc ] || bin=$WRAPPER
			if [ "$form" = eq ]; then
				capture "$who" "$bin" --root="$RUNC_ROOT" --log="$TESTDIR/$who-$form.log" --log-format=json kill nosuchid
			else
				capture "$who" "$bin" --root "$RUNC_ROOT" --log "$TESTDIR/$who-$form.log" --log-format json kill nosuchid
			fi
		done
		same_capture runc wrapper
		[ "$(cat "$TESTDIR/wrapper.rc")" = 1 ]
		diff -u <(normalise_time <"$TESTDIR/runc-$form.log") <(normalise_time <"$TESTDIR/wrapper-$form.log")
		[ "$(wc -l <"$TESTDIR/wrapper-$form.log")" = 1 ]
		jq -e '.level == "error" and .msg == "container does not exist"' "$TESTDIR/wrapper-$form.log"
	done
	# delete is ours (it releases what a container held): runc's lines only.
	for argv in "delete nosuchid" "delete --force nosuchid" "delete ../c1"; do
		rm -f "$TESTDIR/runc.log" "$TESTDIR/wrapper.log"
		# shellcheck disable=SC2086 # split on purpose
		capture runc "$REAL_RUNC" --root "$RUNC_ROOT" --log "$TESTDIR/runc.log" --log-format json $argv
		# shellcheck disable=SC2086
		capture wrapper "$WRAPPER" --root "$RUNC_ROOT" --log "$TESTDIR/wrapper.log" --log-format json $argv
		same_capture runc wrapper
		diff -u <(normalise_time <"$TESTDIR/runc.log" 2>/dev/null) <(normalise_time <"$TESTDIR/wrapper.log" 2>/dev/null)
	done
	# A successful call with --log leaves the file as runc leaves it.
	capture runc "$REAL_RUNC" --root="$RUNC_ROOT" --log="$TESTDIR/runc-ok.log" --log-format=json state c1
	capture wrapper "$WRAPPER" --root="$RUNC_ROOT" --log="$TESTDIR/wrapper-ok.log" --log-format=json state c1
	same_capture runc wrapper
	diff -u <(normalise_time <"$TESTDIR/runc-ok.log") <(normalise_time <"$TESTDIR/wrapper-ok.log")
}

@test "--version: runc's lines unchanged, then exactly one line of ours; --help: runc's, then what runc-userns adds" {
	for argv in "--version" "-v" "--root $RUNC_ROOT --version" "--version=true"; do
		# shellcheck disable=SC2086 # split on purpose
		capture runc "$REAL_RUNC" $argv
		# shellcheck disable=SC2086
		capture wrapper "$WRAPPER" $argv
		[ "$(cat "$TESTDIR/wrapper.rc")" = 0 ]
		[ -s "$TESTDIR/runc.out" ]
		cmp "$TESTDIR/runc.err" "$TESTDIR/wrapper.err"
		[ "$(wc -l <"$TESTDIR/wrapper.out")" = $(($(wc -l <"$TESTDIR/runc.out") + 1)) ]
		diff -u "$TESTDIR/runc.out" <(head -n -1 "$TESTDIR/wrapper.out")
		tail -n 1 "$TESTDIR/wrapper.out" | grep -q '^runc-userns: '
	done
	# --help is runc's (it names the real runc's version), then what
	# runc-userns adds: its commands, its annotations, where to read more.
	for argv in --help -h help "--root $RUNC_ROOT help"; do
		# shellcheck disable=SC2086 # split on purpose
		capture runc as_argv0 "$WRAPPER" "$REAL_RUNC" $argv
		# shellcheck disable=SC2086
		capture wrapper "$WRAPPER" $argv
		[ "$(cat "$TESTDIR/wrapper.rc")" = 0 ]
		cmp "$TESTDIR/runc.err" "$TESTDIR/wrapper.err"
		n=$(wc -l <"$TESTDIR/runc.out")
		[ "$n" -gt 20 ]
		diff -u "$TESTDIR/runc.out" <(head -n "$n" "$TESTDIR/wrapper.out")
		tail -n +$((n + 1)) "$TESTDIR/wrapper.out" >"$TESTDIR/ours"
		grep -q '^RUNC-USERNS:$' "$TESTDIR/ours"
		grep -q '^   runc-userns pool gc ' "$TESTDIR/ours"
		grep -q '^   runc-userns doctor \[PATH...\] ' "$TESTDIR/ours"
		grep -q 'runc-userns.io/userns=auto|host' "$TESTDIR/ours"
	done
	# Help on one of runc's commands is runc's alone.
	same_as_runc_argv help state
	same_as_runc_argv state --help
	same_as_runc_argv create --help
	same_as_runc_argv delete -h
}

@test "the real runtime gets the caller's argv[0], also when it is installed under another name" {
	mkdir -p "$TESTDIR/sbin" "$TESTDIR/alias"
	cp "$REAL_RUNC" "$TESTDIR/sbin/runc-1.5"
	write_config '{"runtime": "'"$TESTDIR/sbin/runc-1.5"'"}'
	ln -s "$WRAPPER" "$TESTDIR/alias/runc"
	# Called as runc, the wrapper prints what runc called as runc prints.
	capture runc as_argv0 runc "$REAL_RUNC" checkpoint -h
	capture wrapper as_argv0 runc "$WRAPPER" checkpoint -h
	same_capture runc wrapper
	grep -q '^   runc checkpoint ' "$TESTDIR/wrapper.out"
	! grep -q 'runc-1.5' "$TESTDIR/wrapper.out"
	# By its own path: that path.
	capture wrapper "$TESTDIR/alias/runc" checkpoint -h
	grep -q "^   runc checkpoint " "$TESTDIR/wrapper.out"
	capture wrapper "$WRAPPER" checkpoint -h
	grep -q "^   runc-userns checkpoint " "$TESTDIR/wrapper.out"
	# A create that runs runc as a child (a pool container): runc's init
	# is named after the caller's argv[0] too, as runc names it.
	b=$(pooled_bundle a)
	"$TESTDIR/alias/runc" --root "$RUNC_ROOT" create --bundle "$b" a </dev/null >/dev/null
	pid=$(plain_runc state a | jq .pid)
	[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "$TESTDIR/alias/runc init " ]
	# A create runc-userns leaves to runc (exec) likewise.
	b=$(setup_bundle p)
	as_argv0 runc "$WRAPPER" --root "$RUNC_ROOT" create --bundle "$b" p </dev/null >/dev/null
	pid=$(plain_runc state p | jq .pid)
	[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "runc init " ]
}

@test "kill -a KILL of a host-PID-namespace container whose init is gone ends every process, as runc does" {
	b=$(setup_bundle hp)
	update_config "$b" '.linux.namespaces |= map(select(.type != "pid"))'
	start_container "$b" hp
	for _ in 1 2 3; do
		wrapper exec -d hp sleep 600 </dev/null >/dev/null
	done
	init=$(plain_runc state hp | jq .pid)
	pids=$(plain_runc ps --format json hp | jq -r '.[]' | grep -vx "$init")
	[ "$(wc -w <<<"$pids")" = 3 ]
	kill -9 "$init"
	for _ in $(seq 50); do kill -0 "$init" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$init" 2>/dev/null
	wrapper kill -a hp KILL
	# runc's own test allows 10 x 0.2 s: they are gone by then (or
	# zombies: this machine's PID 1 reaps when it will).
	for _ in $(seq 10); do
		left=$(for p in $pids; do if grep -qs '^State:[[:space:]]*[^Z[:space:]]' "/proc/$p/status"; then echo "$p"; fi; done)
		[ -z "$left" ] && break
		sleep 0.2
	done
	[ -z "$left" ] || fail "still running after kill -a: $left"
	wrapper delete --force hp
}

# podman runs state, kill and delete with no environment at all: no PATH
# and no RUNC_USERNS_CONFIG, so the wrapper reads the operator config at its
# default path and, with no runtime named there, finds runc at the usual
# absolute paths (here /usr/sbin/runc, whichever runc created the
# container: runc 1.1.5 reads and signals runc 1.5's containers too). The
# config at the default path is the test's (envless_wrapper's private
# /etc), without a runtime, whatever the host's /etc holds.
@test "state and kill with an empty environment" {
	two_containers
	jq 'del(.runtime)' "$RUNC_USERNS_CONFIG" >"$TESTDIR/no-runtime.json"
	for id in c1 c2; do
		RUNC_USERNS_CONFIG=$TESTDIR/no-runtime.json run -0 --separate-stderr envless_wrapper state "$id"
		[ -z "$stderr" ]
		[ "$output" = "$(plain_runc state "$id")" ]
		RUNC_USERNS_CONFIG=$TESTDIR/no-runtime.json run -0 --separate-stderr envless_wrapper kill "$id" KILL
		[ -z "$output$stderr" ]
		wait_status "$id" stopped
	done
	RUNC_USERNS_CONFIG=$TESTDIR/no-runtime.json run -1 --separate-stderr envless_wrapper state nosuchid
	[[ "$stderr" == *"container does not exist"* ]]
	# --version names the runc it found.
	RUNC_USERNS_CONFIG=$TESTDIR/no-runtime.json run -0 envless_wrapper --version
	[[ "$(echo "$output" | tail -n 1)" == "runc-userns: "*"/usr/sbin/runc"* ]]
}
