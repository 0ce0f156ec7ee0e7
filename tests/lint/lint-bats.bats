#!/usr/bin/env bats
# hack/lint-bats.sh: each rule finds its pattern (the line and the rule
# named), and leaves alone what handles a failure. Needs no root.

bats_require_minimum_version 1.5.0

LINT=$BATS_TEST_DIRNAME/../../hack/lint-bats.sh

# sample NAME: stdin into $BATS_TEST_TMPDIR/NAME.bats; prints the path.
# A sample's tests are written TEST: bats would take @test for its own.
sample() {
	sed 's/^\(\t*\)TEST /\1@test /' >"$BATS_TEST_TMPDIR/$1.bats" || return 1
	echo "$BATS_TEST_TMPDIR/$1.bats"
}

# finds RULE LINE FILE: the lint fails on FILE, naming RULE at LINE, and
# reports nothing else.
finds() {
	run -1 "$LINT" "$3"
	echo "$output"
	[[ "$output" == "$3:$2: $1: "* ]]
	[ "${#lines[@]}" = 1 ]
}

@test "and-list: [ A ] && [ B ] as a statement, in a test or a helper, joined lines too" {
	f=$(sample mid <<-'EOF'
		TEST "x" {
			[ -e a ] && [ -e b ]
			true
		}
	EOF
	)
	finds and-list 2 "$f"
	f=$(sample helper <<-'EOF'
		check() {
			local x=1
			[[ $x == 1 ]] && [ -n "$x" ]
		}
	EOF
	)
	finds and-list 3 "$f"
	f=$(sample joined <<-'EOF'
		TEST "x" {
			true
			[ -e a ] &&
				[ -e b ]
		}
	EOF
	)
	finds and-list 3 "$f"
	f=$(sample negated <<-'EOF'
		TEST "x" {
			! [ -e a ] && [ -e b ]
		}
	EOF
	)
	finds and-list 2 "$f"
}

@test "and-list: what handles the failure, or is a condition, passes" {
	f=$(sample ok <<-'EOF'
		TEST "x" {
			[ -e a ] && [ -e b ] || fail "no a or b"
			if [ -e a ] && [ -e b ]; then true; fi
			while [ -e a ] && [ -e b ]; do break; done
			for i in 1 2; do
				[ -e "$i" ] && break
				[ -e "$i" ] && continue
			done
			[ -x a ] && [ -x b ] && {
				true
			}
			[[ "$output" == *"a && b"* ]]
			echo 'x && y'
			# [ -e a ] && [ -e b ]
		}
	EOF
	)
	run -0 "$LINT" "$f"
	[ -z "$output" ]
}

@test "run-status: run with no expected status and no \$status check" {
	f=$(sample last <<-'EOF'
		TEST "x" {
			run false
			[ -z "$output" ]
		}
	EOF
	)
	finds run-status 2 "$f"
	f=$(sample next <<-'EOF'
		TEST "x" {
			run false
			run -0 true
			[ "$status" = 0 ]
		}
	EOF
	)
	finds run-status 2 "$f"
	f=$(sample helper <<-'EOF'
		doctor() {
			run --separate-stderr doctor --json "$@"
		}
		TEST "x" {
			doctor
			[ "$status" = 0 ]
		}
	EOF
	)
	finds run-status 2 "$f"
	f=$(sample assign <<-'EOF'
		TEST "x" {
			TMPDIR=/x run true
		}
	EOF
	)
	finds run-status 2 "$f"
}

@test "run-status: run -N, run !, and a later look at \$status pass" {
	f=$(sample ok <<-'EOF'
		TEST "x" {
			run -0 true
			run -1 --separate-stderr false
			run ! false
			TMPDIR=/x run -0 true
			run "-$want" true
			run false
			echo "$output"
			[ "$status" != 0 ] || fail "status $status"
			run true
			[ "${status}" = 0 ]
			runner false
		}
	EOF
	)
	run -0 "$LINT" "$f"
	[ -z "$output" ]
}

@test "bare-wait: wait without a PID" {
	f=$(sample bare <<-'EOF'
		TEST "x" {
			sleep 1 &
			wait
		}
	EOF
	)
	finds bare-wait 3 "$f"
	f=$(sample inline <<-'EOF'
		TEST "x" {
			for i in 1 2; do sleep 1 & done; wait
		}
	EOF
	)
	finds bare-wait 2 "$f"
	f=$(sample ok <<-'EOF'
		TEST "x" {
			sleep 1 &
			pid=$!
			wait "$pid"
			update_config "$b" '.process.args = ["sh", "-c", "sleep 1 & wait; wait"]'
		}
	EOF
	)
	run -0 "$LINT" "$f"
}

@test "loop-local: a helper's loop variable that is not local" {
	f=$(sample helper <<-'EOF'
		hold() {
			local n=1
			for i in $(seq 100); do true; done
		}
	EOF
	)
	finds loop-local 3 "$f"
	f=$(sample ok <<-'EOF'
		hold() {
			local i
			for i in $(seq 100); do true; done
			for _ in 1 2; do true; done
		}
		other() { local p; for p in a; do true; done; }
		TEST "x" {
			for i in 1 2; do true; done
		}
	EOF
	)
	run -0 "$LINT" "$f"
	# A local of another function does not count.
	f=$(sample other <<-'EOF'
		a() {
			local i
			true
		}
		b() {
			for i in 1; do true; done
		}
	EOF
	)
	finds loop-local 6 "$f"
}

@test "here-documents are data; every file is read; usage" {
	f=$(sample heredoc <<-'EOF'
		TEST "x" {
			cat >script <<-SCRIPT
				[ -e a ] && [ -e b ]
				wait
			SCRIPT
			true
		}
	EOF
	)
	run -0 "$LINT" "$f"
	g=$(sample bad <<-'EOF'
		TEST "x" {
			wait
		}
	EOF
	)
	run -1 "$LINT" "$f" "$g"
	[ "$output" = "$g:2: bare-wait: \`wait\`: wait without a PID returns 0 whatever the jobs did" ]
	# A here-string is no here-document: what follows it is read.
	f=$(sample herestring <<-'EOF'
		TEST "x" {
			read -r a <<<"x"
			wait
		}
	EOF
	)
	finds bare-wait 3 "$f"
	run -2 "$LINT"
}

@test "the repository's own suites pass" {
	cd "$BATS_TEST_DIRNAME/../.."
	run -0 "$LINT" tests/integration/*.bats tests/integration/*.bash tests/lint/*.bats bench/*.bats
}
