// Command lifecycle times runtimes, interleaved A/B/C/A/B/C after a
// warm-up, and prints a Markdown table (median, min, max, ratio of medians
// to the first variant) while writing every measurement as JSON lines to
// -raw.
//
// -mode lifecycle: each variant is NAME=RUNTIME=BUNDLE[=CONFIG[=STARTER]];
// a round is create, start, wait for the container's init to exit (a
// pidfd, not polling), delete. CONFIG sets RUNC_USERNS_CONFIG for that
// runtime. STARTER, if given, runs the start step instead of RUNTIME (same
// root and environment): two variants that differ only in it time `start`
// on the same kind of container, created and deleted alike. Every call
// gets what containerd's runc shim passes: --log <bundle>/log.json
// --log-format json, and create --pid-file <bundle>/init.pid.
//
// Besides the ratio of medians, each row has the paired difference: the
// median over rounds of the variant's time minus the first variant's in
// the same round, with a 95% confidence interval (stats.go).
//
// -step NAME makes the table of that step's times rather than of whole
// rounds (e.g. -step start).
//
// -mode cmd: each variant is NAME=ARGV (space-separated, no shell); a
// round is one run of it.
//
// -ref NAME adds a column with each variant's median minus NAME's (make
// bench: against execwrap, a Go program that only execs runc).
//
// -mode tsv reads rounds measured elsewhere (bench/cri.bats: "LABEL<tab>US..."
// lines, variants in turn) and tabulates column -col the same way.
//
// -mode gobench reads `go test -bench` output (several -count rounds) on
// stdin and prints, per benchmark and unit, median, min and max; -pair
// A=B adds for every benchmark whose name contains /A/ the ratio of the
// median of its /B/ twin to its own (e.g. chown time over idmap time).
//
// # Files and guarantees
//
// Rounds are interleaved and every variant gets the same number; the
// -warmup rounds are run and not counted. Each lifecycle round first
// writes the bundle's config.json back to the bytes it had when the
// program started (untimed), since runc-userns rewrites it; the last
// round's edits stay in the bundle. It also removes <bundle>/log.json
// (the calls' --log) first. Each call's stderr goes to a temporary file
// in $TMPDIR (not a pipe, which the container's init would hold open),
// removed after the round. The container is bench-<variant>-<round>
// (indexes from 0, warm-up rounds included); its init pid is read from
// <root>/<id>/state.json (init_process_pid). -raw appends to its file
// (made 0644 if missing) one JSON object a line per measured round:
// variant, i (the round), ms, and steps (ms by step name: create, start,
// wait, delete; null in -mode cmd). The first error ends the program with
// status 1 (2 for a variant or -step that does not fit the mode), leaving
// that round's container, if any, behind.
//
// Kernel requirement: pidfd_open(2) (Linux 5.3) and poll(2) on a pidfd.
package main
