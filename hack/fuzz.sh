#!/usr/bin/env bash
# fuzz.sh TIME: runs every Go fuzz target of the module for TIME each.
# Their seed corpora and any input the fuzzer found interesting live in
# the packages' testdata/fuzz directories.
set -euo pipefail
time=${1:-5s}
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz: $pkg $target ($time)"
		go test -run='^$' -fuzz="^${target}\$" -fuzztime="$time" "$pkg" >/dev/null
	done
done
