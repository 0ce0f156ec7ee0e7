// Package logging sets up the wrapper's log the way runc sets up its own
// (runc's configLogrus and fatal), because containerd and podman read the
// two through the same file: runc's --log, in runc's --log-format (text:
// logrus's logfmt lines; json: one JSON object a line), at info level with
// a file, warning level on stderr without one, debug level with --debug.
// The file is opened O_CREATE|O_WRONLY|O_APPEND|O_SYNC, mode 0644, as runc
// opens it, so the wrapper's lines and runc's interleave whole.
//
// Guarantees: a failed call leaves exactly one line, its error, at level
// error (containerd's getLastRuntimeError shows the last such line, and
// conmon parses the whole file of a failed call as one JSON object); lines
// below error level are held in memory until the caller commits them (the
// call succeeded) or discards them (it failed). With --debug nothing is
// held: a debug run is read for everything it did.
//
// Phases times the steps of one create or delete for a single --debug
// line, "<total> ms: <step> <ms> ms, ...": it lives here because that line
// is all it is for.
//
// Only package main and internal/create use this package: the others
// take a logrus.FieldLogger or return errors and never configure
// logging. No kernel requirement beyond open(2) with O_SYNC.
package logging
