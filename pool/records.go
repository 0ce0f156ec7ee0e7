package pool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// RecordDir, under the state directory, holds one file per allocation,
// named recordName(hostID, owner): a readdir alone gives the used slots and
// which file is whose, so that a call reads only the record it needs.
const RecordDir = "pool.d"

// maxOwnerLen is the longest owner whose record's temporary name
// (tempName: '.', the host ID of up to 10 digits, '-', the owner, ".tmp")
// fits in NAME_MAX (255 bytes): 239.
const maxOwnerLen = 255 - len(".4294967295-") - len(".tmp")

// ownerRule returns the rule owner breaks, or "". An owner is a runc
// container ID (the pod sandbox's), the same rule as runc's: it becomes a
// file name component in RecordDir, so the pool checks it itself rather
// than trust its caller.
func ownerRule(owner string) string {
	switch {
	case owner == "":
		return "empty owner: each range needs an owner (the pod sandbox ID)"
	case len(owner) > maxOwnerLen:
		return fmt.Sprintf("owner %.20q...: %d bytes, an owner is at most %d", owner, len(owner), maxOwnerLen)
	case owner == "." || owner == "..":
		return fmt.Sprintf("owner %q: not a container ID (\".\" and \"..\" name directories)", owner)
	}
	for i := 0; i < len(owner); i++ {
		if !idByte(owner[i]) {
			return fmt.Sprintf("owner %q: not a container ID: only letters, digits and _ + . - are allowed", owner)
		}
	}
	return ""
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+.-", c) >= 0
}

// checkOwner is ownerRule as an ErrInvalidConfig, for the callers' owners.
func checkOwner(owner string) error {
	if rule := ownerRule(owner); rule != "" {
		return errorf(ErrInvalidConfig, "%s", rule)
	}
	return nil
}

// recordName is the file name of owner's record: the decimal host ID, '-',
// the owner. The host ID comes first so that the name parses whatever
// dashes the owner holds.
func recordName(hostID uint32, owner string) string {
	return strconv.FormatUint(uint64(hostID), 10) + "-" + owner
}

// tempName is where a record is written before it is renamed to name. It
// starts with a dot, which no record name does (they start with a digit):
// "<name>.tmp" would be the record of an owner ending in ".tmp", a valid
// container ID.
func tempName(name string) string { return "." + name + ".tmp" }

// isTempName tells a temporary file (left by a crash during a write) from
// a record.
func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp")
}

// parseRecordName splits a record's file name. Only the canonical form is
// a record name (no sign, no leading zero): one owner and host ID have one
// name, so two files can never hold the same record.
func parseRecordName(name string) (hostID uint32, owner string, err error) {
	digits, owner, ok := strings.Cut(name, "-")
	if !ok || digits == "" {
		return 0, "", fmt.Errorf("file name %q is not a record name (<hostID>-<owner>)", name)
	}
	n, perr := strconv.ParseUint(digits, 10, 32)
	if perr != nil || digits[0] < '1' && digits != "0" {
		return 0, "", fmt.Errorf("file name %q: %q is not a host ID in decimal", name, digits)
	}
	if rule := ownerRule(owner); rule != "" {
		return 0, "", fmt.Errorf("file name %q: %s", name, rule)
	}
	return uint32(n), owner, nil
}

// encodeRecord is a record file's content: the allocation as JSON on one
// line (the field names of the version 1 state file), newline-terminated.
func encodeRecord(a Allocation) ([]byte, error) {
	data, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// decodeRecord reads the record in the file called name. Anything may be
// in RecordDir, so every failure is ErrCorruptState: a record that does
// not decode, disagrees with its name, or breaks checkRecord at its own
// size (whether that is the pool's slot size is for the caller to say).
func decodeRecord(name string, data []byte) (Allocation, error) {
	hostID, owner, err := parseRecordName(name)
	if err != nil {
		return Allocation{}, fmt.Errorf("%w: %v", ErrCorruptState, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var a Allocation
	if err := dec.Decode(&a); err != nil {
		return Allocation{}, fmt.Errorf("%w: %v", ErrCorruptState, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Allocation{}, fmt.Errorf("%w: data after the JSON object", ErrCorruptState)
	}
	switch {
	case a.Owner != owner || a.HostID != hostID:
		return Allocation{}, fmt.Errorf("%w: the record of owner %q at host ID %d is in the file of owner %s at host ID %d", ErrCorruptState, a.Owner, a.HostID, owner, hostID)
	case a.Size == 0:
		return Allocation{}, fmt.Errorf("%w: owner %s: size 0", ErrCorruptState, owner)
	}
	if err := checkRecord(a, a.Size); err != nil {
		return Allocation{}, fmt.Errorf("%w: %v", ErrCorruptState, err)
	}
	return a, nil
}
