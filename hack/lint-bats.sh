#!/usr/bin/env bash
# lint-bats.sh FILE...: find in bats files (and the .bash files they load)
# the patterns that let a test pass when the code under test is wrong.
# bats runs a test with set -e, which bash does not apply everywhere:
#
#   and-list   `[ A ] && [ B ]` as a statement (or `[ A ] && cmd`): when A
#              fails, set -e ignores it and the test goes on. Write separate
#              assertions, an `if`, or end the list with `|| fail ...`. A
#              list that ends in break, continue or return (a wait loop's
#              `[ -e f ] && break`) is a condition and passes.
#   run-status `run CMD` with neither an expected status (`run -N`,
#              `run !`) nor a look at $status before the next `run` or the
#              end of the function: whatever CMD does, the test goes on.
#   bare-wait  `wait` without a PID: it returns 0 whatever the jobs did.
#              Wait for each PID and check its status.
#   loop-local `for V in` in a helper (any function but a @test) whose V is
#              not declared `local` in it: the loop overwrites the
#              caller's V (a test's own loop counter, say).
#
# Exit status 1 and one line per finding (FILE:LINE: RULE: text), or 0.
# Lines are read as bash would join them (a trailing \, &&, || or |
# continues the statement); quoted text is left out of the match.
set -euo pipefail

[ "$#" -gt 0 ] || {
	echo "usage: $0 FILE..." >&2
	exit 2
}

awk '
function report(rule, msg) {
	printf "%s:%d: %s: %s\n", FILENAME, stmt_line, rule, msg
	bad = 1
}

# unquote S: S with the text of its quoted strings removed (the quotes
# stay), and comments, so that an operator inside a string is not taken
# for one. uq_open is set when S ends inside a string.
function unquote(s,    out, i, c, q) {
	out = ""
	q = ""
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (q == "") {
			if (c == "\\") { out = out c substr(s, i + 1, 1); i++; continue }
			if (c == "#" && (i == 1 || substr(s, i - 1, 1) ~ /[ \t;\n]/)) {
				# A comment runs to the end of its line.
				while (i <= length(s) && substr(s, i, 1) != "\n") i++
				out = out "\n"
				continue
			}
			if (c == "\"" || c == "\047") q = c
			out = out c
		} else if (q == "\"" && c == "\\") {
			i++
		} else if (c == q) {
			q = ""
			out = out c
		}
	}
	uq_open = (q != "")
	return out
}

function end_function() {
	if (run_pending)
		report_at(run_file_line, "run-status", "`" run_text "`: no expected status (run -N) and no $status check before the end of " fname)
	run_pending = 0
	infunc = 0
	delete locals
}

function report_at(line, rule, msg,    save) {
	save = stmt_line
	stmt_line = line
	report(rule, msg)
	stmt_line = save
}

# statement S (unquoted, continuation lines joined) starting at stmt_line.
function statement(s, raw,    t, r, w, n, i, words, v) {
	t = s
	sub(/^[ \t]+/, "", t)
	r = raw
	sub(/^[ \t]+/, "", r)

	# A function starts: `name() {` at the start of a line; a @test too.
	if (t ~ /^@test /) { end_function(); infunc = 1; istest = 1; fname = "the test"; return }
	if (raw ~ /^[A-Za-z_][A-Za-z0-9_]*\(\)/) {
		end_function()
		fname = raw
		sub(/\(.*/, "", fname)
		infunc = 1
		istest = 0
		if (raw ~ /\}[ \t]*$/) end_function() # a one-line function
		return
	}
	if (raw ~ /^\}/) { end_function(); return }

	# and-list: a test, then &&, and nothing that handles its failure.
	# A list that ends in break, continue or return is a condition, not an
	# assertion (`[ -e f ] && break` in a wait loop).
	if (t ~ /^(\[\[?|!)[ \t]/ && t ~ /&&/ && t !~ /\|\|/ && t !~ /(\{|then|do)[ \t]*$/ &&
		t !~ /&&[ \t]*(break|continue|return)([ \t][^;&|]*)?[ \t]*;?[ \t]*(done)?[ \t]*$/)
		report("and-list", "`" raw "`: a failure left of && does not fail the test; use separate assertions")

	# Leading assignments (VAR=x run ...) do not change the command.
	while (t ~ /^[A-Za-z_][A-Za-z0-9_]*=[^ \t]*[ \t]+/) {
		sub(/^[A-Za-z_][A-Za-z0-9_]*=[^ \t]*[ \t]+/, "", t)
		sub(/^[A-Za-z_][A-Za-z0-9_]*=[^ \t]*[ \t]+/, "", r)
	}

	if (t ~ /^run([ \t]|$)/) {
		if (run_pending)
			report_at(run_file_line, "run-status", "`" run_text "`: no expected status (run -N) and no $status check before the next run")
		run_pending = 0
		# The expected status as written: run -1, run !, run "-$want".
		if (r !~ /^run[ \t]+(-[0-9]+|!|"-\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")([ \t]|$)/) {
			run_pending = 1
			run_file_line = stmt_line
			run_text = raw
		}
		return
	}
	if (run_pending && raw ~ /\$\{?status/) run_pending = 0

	if (t ~ /^wait[ \t]*(;|$)/ || t ~ /[;&][ \t]*wait[ \t]*(;|$)/)
		report("bare-wait", "`" raw "`: wait without a PID returns 0 whatever the jobs did")

	if (infunc && !istest) {
		if (t ~ /^(local|declare)[ \t]/) {
			n = split(t, words, /[ \t]+/)
			for (i = 2; i <= n; i++) {
				v = words[i]
				sub(/=.*/, "", v)
				locals[v] = 1
			}
		}
		if (match(t, /(^|[;{(][ \t]*|[ \t]do[ \t]+)for[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]+in([ \t]|$)/)) {
			w = substr(t, RSTART, RLENGTH)
			sub(/.*for[ \t]+/, "", w)
			sub(/[ \t].*/, "", w)
			if (w != "_" && !(w in locals))
				report("loop-local", "`" raw "`: loop variable " w " is not local to " fname)
		}
	}
}

FNR == 1 {
	if (NR > 1) end_function()
	joined = ""
	heredoc = ""
}

{
	line = $0
	# Here-documents: their text is data, not statements.
	if (heredoc != "") {
		t = line
		sub(/^\t+/, "", t)
		if (t == heredoc) heredoc = ""
		next
	}
	if (joined == "") {
		stmt_line = FNR
		joined = line
	} else {
		joined = joined "\n" line
	}
	u = unquote(joined)
	# (Read in the line as written: unquoting empties <<-'EOF'.)
	if (match(line, /(^|[^<])<<-?[ \t]*["\047]?[A-Za-z_]+/)) {
		h = substr(line, RSTART, RLENGTH)
		sub(/^[^<]?<<-?[ \t]*["\047]?/, "", h)
		heredoc = h
	}
	# A statement goes on after \, &&, || or | at the end of a line, and
	# inside a quoted string left open (a multi-line jq filter, say).
	if (uq_open || u ~ /(\\|&&|\|\||\|)[ \t]*\n?$/)
		next
	raw = joined
	joined = ""
	gsub(/\\\n/, " ", u)
	gsub(/\n/, " ", u)
	gsub(/\n/, " ", raw)
	statement(u, raw)
}

END {
	end_function()
	exit bad
}
' "$@"
