package pool

import (
	"errors"
	"fmt"
	"os"
)

// HostIDs are the IDs the host already uses, which no pool range may hold.
type HostIDs struct {
	Users   []NamedID    // uids of /etc/passwd
	Groups  []NamedID    // gids of /etc/group
	SubUIDs []OwnedRange // /etc/subuid ranges of owners other than the pool's subid user
	SubGIDs []OwnedRange // /etc/subgid ranges of owners other than the pool's subid user
}

// ReadHostIDs reads the host's users, groups and subordinate ranges. A
// missing file is empty; an unreadable one is an error naming it. The
// ranges of self (the subid user whose own ranges may be the pool, by name
// or by uid) are left out. Lines that do not parse are skipped, as the
// system's own readers skip them.
func ReadHostIDs(passwdPath, groupPath, subuidPath, subgidPath, self string) (HostIDs, error) {
	var raw [4][]byte
	for i, path := range []string{passwdPath, groupPath, subuidPath, subgidPath} {
		data, err := readOptional(path)
		if err != nil {
			return HostIDs{}, err
		}
		raw[i] = data
	}
	h := HostIDs{Users: parseIDFile(raw[0]), Groups: parseIDFile(raw[1])}
	mine := aliases(self, h.Users)
	others := func(data []byte) []OwnedRange {
		var out []OwnedRange
		for _, e := range parseSubidFile(data) {
			if e.err == nil && !mine[e.owner] {
				out = append(out, OwnedRange{Owner: e.owner, Range: e.r})
			}
		}
		return out
	}
	h.SubUIDs, h.SubGIDs = others(raw[2]), others(raw[3])
	return h, nil
}

// readOptional reads a host file that may be absent.
func readOptional(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read host IDs: %w (runc-userns must read it to keep the pool clear of the host's IDs)", err)
	}
	return data, nil
}

// CheckHost refuses a pool whose ranges hold an ID the host uses: a user's
// uid, a group's gid (a pod's IDs map both), or part of another owner's
// subordinate range (rootless containers, podman). The first conflict is
// the error; it names the range, the ID and whose it is.
func CheckHost(ranges []Range, h HostIDs) error {
	const fix = "move the pool (userns.ranges in the runc-userns config, or the subid user's ranges) clear of it"
	for _, r := range ranges {
		for _, u := range h.Users {
			if r.contains(u.ID) {
				return errorf(ErrHostConflict, "pool range %s holds uid %d of user %s: %s", r, u.ID, u.Name, fix)
			}
		}
		for _, g := range h.Groups {
			if r.contains(g.ID) {
				return errorf(ErrHostConflict, "pool range %s holds gid %d of group %s: %s", r, g.ID, g.Name, fix)
			}
		}
		for _, s := range h.SubUIDs {
			if r.overlaps(s.Range) {
				return errorf(ErrHostConflict, "pool range %s overlaps the subordinate uids %s of %s (/etc/subuid) from ID %d: %s", r, s.Range, s.Owner, max(r.HostID, s.HostID), fix)
			}
		}
		for _, s := range h.SubGIDs {
			if r.overlaps(s.Range) {
				return errorf(ErrHostConflict, "pool range %s overlaps the subordinate gids %s of %s (/etc/subgid) from ID %d: %s", r, s.Range, s.Owner, max(r.HostID, s.HostID), fix)
			}
		}
	}
	return nil
}
