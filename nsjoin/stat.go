package nsjoin

import (
	"bytes"
	"fmt"
	"strconv"
)

// procStat is what Resolve needs of /proc/<pid>/stat.
type procStat struct {
	// State is field 3: R, S, D, Z (zombie), X (dead), T, t, I, ...
	State byte
	// StartTime is field 22: clock ticks since boot, what runc records as
	// init_process_start.
	StartTime uint64
}

// parseStat parses /proc/<pid>/stat. Field 2 is the command name in
// parentheses, which may itself hold blanks and parentheses (a process
// can name itself "a) (b"): the fields are counted from the last ')'.
func parseStat(b []byte) (procStat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("parse stat %.80q: no (comm)", b)
	}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3; field 22 is f[19].
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("parse stat %.80q: %d fields after comm, want at least 20", b, len(f))
	}
	if len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("parse stat %.80q: state %q is not one letter", b, f[0])
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parse stat %.80q: start time: %w", b, err)
	}
	return procStat{State: f[0][0], StartTime: start}, nil
}

// exited reports whether the process has exited (a zombie awaiting its
// reaper, or dead): its PID namespace takes no new members any more.
func (s procStat) exited() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }
