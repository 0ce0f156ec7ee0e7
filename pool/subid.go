package pool

import (
	"fmt"
	"strconv"
	"strings"
)

// This file parses what the host says about its IDs: /etc/passwd,
// /etc/group, /etc/subuid, /etc/subgid and getsubids' output. Every parser
// takes bytes and does no I/O, so they can be fuzzed; they read files that
// other tools write, so any input is possible and none may panic.

// NamedID is a user or group of the host.
type NamedID struct {
	Name string
	ID   uint32
}

// OwnedRange is a subordinate ID range and its owner (a user name or a
// numeric uid, as written).
type OwnedRange struct {
	Owner string
	Range
}

// lines calls fn with each line of data that is not blank or a comment,
// without its surrounding white space, and its 1-based number.
func lines(data []byte, fn func(n int, line string)) {
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		fn(i+1, line)
	}
}

// parseIDFile reads /etc/passwd or /etc/group: the name is field 1 and the
// ID field 3 of each colon-separated line in both. Lines that do not parse
// are skipped, as glibc's files backend skips them: they are not users
// the system knows. NIS compat lines (+name, -name) are skipped too.
func parseIDFile(data []byte) []NamedID {
	var ids []NamedID
	lines(data, func(_ int, line string) {
		f := strings.Split(line, ":")
		if len(f) < 3 || f[0] == "" || f[0][0] == '+' || f[0][0] == '-' {
			return
		}
		id, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return
		}
		ids = append(ids, NamedID{Name: f[0], ID: uint32(id)})
	})
	return ids
}

// subidLine is one entry of /etc/subuid or /etc/subgid, "owner:start:count".
// err is set for a line that does not parse; owner is then its first field,
// so that a broken line of the pool's own user is reported rather than
// skipped.
type subidLine struct {
	n     int
	owner string
	r     Range
	err   error
}

// parseSubidFile reads /etc/subuid or /etc/subgid. Entries of count 0 are
// dropped: they give no IDs.
func parseSubidFile(data []byte) []subidLine {
	var out []subidLine
	lines(data, func(n int, line string) {
		f := strings.Split(line, ":")
		e := subidLine{n: n, owner: f[0]}
		if len(f) != 3 || f[0] == "" {
			e.err = fmt.Errorf("line %d: want owner:start:count, have %q", n, line)
			out = append(out, e)
			return
		}
		e.r, e.err = parseSubidRange(f[1], f[2])
		if e.err != nil {
			e.err = fmt.Errorf("line %d: %w", n, e.err)
		}
		if e.err == nil && e.r.Size == 0 {
			return
		}
		out = append(out, e)
	})
	return out
}

// parseSubidRange parses a start and a count, which shadow keeps as
// unsigned longs; a range must fit below (uid_t)-1.
func parseSubidRange(start, count string) (Range, error) {
	s, err := strconv.ParseUint(start, 10, 64)
	if err != nil {
		return Range{}, fmt.Errorf("start %q is not a number", start)
	}
	c, err := strconv.ParseUint(count, 10, 64)
	if err != nil {
		return Range{}, fmt.Errorf("count %q is not a number", count)
	}
	if s > maxID || c > maxID || s+c > maxID {
		return Range{}, fmt.Errorf("range %s+%s reaches past %d", start, count, uint64(maxID-1))
	}
	return Range{HostID: uint32(s), Size: uint32(c)}, nil
}

// parseGetsubids reads the output of `getsubids [-g] USER` (shadow >= 4.11):
// one line per range, "INDEX: OWNER START COUNT". It is a program's
// output, not a file people edit: any other line is an error.
func parseGetsubids(out []byte) ([]OwnedRange, error) {
	var ranges []OwnedRange
	var bad error
	lines(out, func(n int, line string) {
		if bad != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) != 4 || !strings.HasSuffix(f[0], ":") {
			bad = fmt.Errorf("line %d: want \"INDEX: OWNER START COUNT\", have %q", n, line)
			return
		}
		if _, err := strconv.ParseUint(strings.TrimSuffix(f[0], ":"), 10, 32); err != nil {
			bad = fmt.Errorf("line %d: index %q is not a number", n, f[0])
			return
		}
		r, err := parseSubidRange(f[2], f[3])
		if err != nil {
			bad = fmt.Errorf("line %d: %w", n, err)
			return
		}
		if r.Size > 0 {
			ranges = append(ranges, OwnedRange{Owner: f[1], Range: r})
		}
	})
	return ranges, bad
}

// aliases returns the names a subid file may use for user: the name
// itself and, per the passwd entries, its uid in decimal (or, when user
// is a uid, the names with that uid).
func aliases(user string, passwd []NamedID) map[string]bool {
	a := map[string]bool{user: true}
	for _, u := range passwd {
		if u.Name == user {
			a[strconv.FormatUint(uint64(u.ID), 10)] = true
		}
		if strconv.FormatUint(uint64(u.ID), 10) == user {
			a[u.Name] = true
		}
	}
	return a
}
