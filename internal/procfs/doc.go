// Package procfs parses what the wrapper reads of /proc/<pid>: the state
// and start time in /proc/<pid>/stat, for nsjoin's container:<id>
// resolution and the pool's reclaim of a dead container's range. It reads
// no file itself (callers open /proc as they must: through a pidfd's
// directory, or by path) and imports only the standard library.
//
// The parser takes untrusted input: field 2, the command name, is chosen
// by the process itself and may hold blanks, parentheses and newlines, so
// the fields are counted from the last ')'. FuzzParseStat holds it to that.
package procfs
