package libuserns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// PodMappings maps container IDs 0..size-1 to host IDs hostID.. for both
// uids and gids, the KEP-127 shape.
func PodMappings(hostID, size uint32) []specs.LinuxIDMapping {
	return []specs.LinuxIDMapping{{ContainerID: 0, HostID: hostID, Size: size}}
}

// FormatMappings renders mappings the way /proc/<pid>/uid_map is written.
func FormatMappings(m []specs.LinuxIDMapping) string {
	var b strings.Builder
	for _, e := range m {
		fmt.Fprintf(&b, "%d %d %d\n", e.ContainerID, e.HostID, e.Size)
	}
	return b.String()
}

// maxMapLines is the kernel's limit on lines in uid_map (Linux >= 4.15).
const maxMapLines = 340

// maxMapSize bounds a uid_map or gid_map read from the kernel: 340 lines
// of three 10-digit fields, as it prints them, take 11220 bytes.
const maxMapSize = 16 << 10

// ParseNamespaceMaps parses the uid_map and gid_map of a user namespace
// that a container joins (Mappings), and refuses what cannot describe
// it: a map that is not one, one of more than 340 lines (the kernel's
// limit, more than a namespace can have), an empty one (nothing was
// written to it yet: no ID, root included, is mapped, and neither an
// idmapped mount nor runc can use it).
func ParseNamespaceMaps(uidMap, gidMap []byte) (uid, gid []specs.LinuxIDMapping, err error) {
	for _, f := range []struct {
		name string
		in   []byte
		out  *[]specs.LinuxIDMapping
	}{{"uid_map", uidMap, &uid}, {"gid_map", gidMap, &gid}} {
		m, err := ParseMappings(bytes.NewReader(f.in))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if len(m) == 0 {
			return nil, nil, fmt.Errorf("%s: %w", f.name, ErrNoMapping)
		}
		*f.out = m
	}
	return uid, gid, nil
}

// ErrNoMapping: a user namespace whose uid_map or gid_map is empty.
var ErrNoMapping = errors.New("empty: no mapping was written to the namespace")

// ParseMappings reads /proc/<pid>/uid_map or gid_map contents: lines of
// "inside outside count", blank-separated.
func ParseMappings(r io.Reader) ([]specs.LinuxIDMapping, error) {
	var out []specs.LinuxIDMapping
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("id map line %q: want 3 fields, have %d", line, len(f))
		}
		var v [3]uint32
		for i := range f {
			n, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("id map line %q: %w", line, err)
			}
			v[i] = uint32(n)
		}
		if v[2] == 0 {
			return nil, fmt.Errorf("id map line %q: count is 0", line)
		}
		if len(out) == maxMapLines {
			return nil, fmt.Errorf("id map has more than %d lines", maxMapLines)
		}
		out = append(out, specs.LinuxIDMapping{ContainerID: v[0], HostID: v[1], Size: v[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read id map: %w", err)
	}
	return out, nil
}

// Equal reports whether two mapping lists are the same, in order.
func Equal(a, b []specs.LinuxIDMapping) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// MapsHostRoot reports whether any entry maps host uid/gid 0 into the
// container.
func MapsHostRoot(m []specs.LinuxIDMapping) bool {
	for _, e := range m {
		if e.HostID == 0 {
			return true
		}
	}
	return false
}
