#!/usr/bin/env bash
# fuzz.sh BUDGET: runs every Go fuzz target of the module for BUDGET each:
# a count of executions (50000x) or a duration (5s). make fuzz gives a
# count: a duration can fail with "context deadline exceeded" at its end
# and no input at fault (go.dev/issue/75804, Go < 1.27), three targets in
# one CI run on this machine.
# Their seed corpora and any input the fuzzer found interesting live in
# the packages' testdata/fuzz directories.
#
# A target that fails shows its output. A failure that wrote a failing
# input to testdata/fuzz is a bug in our parser and fails at once (the
# input reproduces it: go test -run=<target>/<file>). A failure that wrote
# none is the fuzzing engine's own (a worker it lost track of on a loaded
# machine, as seen once in CI): the target runs once more, and fails the
# build if it fails again.
set -euo pipefail
shopt -s nullglob
time=${1:-50000x}
# count TARGET-DIR: how many inputs its corpus holds (0 without one).
count() {
	local f=("$1"/*)
	echo "${#f[@]}"
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		for try in 1 2; do
			echo "fuzz: $pkg $target ($time, try $try)"
			before=$(count "$dir/testdata/fuzz/$target")
			# -parallel: the fuzzing workers, one a CPU.
			if go test -run='^$' -fuzz="^${target}\$" -fuzztime="$time" -parallel="$(nproc)" "$pkg" >"$log" 2>&1; then
				break
			fi
			cat "$log"
			after=$(count "$dir/testdata/fuzz/$target")
			if [ "$after" != "$before" ] || [ "$try" = 2 ]; then
				echo "fuzz: $target failed" >&2
				exit 1
			fi
			echo "fuzz: $target failed without a failing input: running it again"
		done
	done
done
