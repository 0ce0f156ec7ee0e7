package procfs

import (
	"bytes"
	"fmt"
	"strconv"
)

// Stat is what this module reads of /proc/<pid>/stat: whether a process
// has exited, and whether a PID still names the process runc recorded.
type Stat struct {
	// State is field 3: R, S, D, Z (zombie), X (dead), T, t, I, ...
	State byte
	// StartTime is field 22: clock ticks since boot, what runc records as
	// init_process_start.
	StartTime uint64
}

// ParseStat parses /proc/<pid>/stat. Field 2 is the command name in
// parentheses, which may itself hold blanks and parentheses (a process
// can name itself "a) (b"): the fields are counted from the last ')'.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("parse stat %.80q: no (comm)", b)
	}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3; field 22 is f[19].
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("parse stat %.80q: %d fields after comm, want at least 20", b, len(f))
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("parse stat %.80q: state %q is not one letter", b, f[0])
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("parse stat %.80q: start time: %w", b, err)
	}
	return Stat{State: f[0][0], StartTime: start}, nil
}

// Exited reports whether the process has exited (a zombie awaiting its
// reaper, or dead). A container's init that has exited leaves a PID
// namespace that takes no new members.
func (s Stat) Exited() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }
