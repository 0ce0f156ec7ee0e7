package netns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Record is a network namespace the wrapper entered for a container at
// create (runc < 1.3): the path the spec named it by and its identity
// then. Exec enters it again through the record, and only while the path
// still names that namespace. The zero Record is "none": runc runs where
// the wrapper is.
type Record struct {
	Path string
	ID   ID
}

// marshal is the record file's contents: "<dev> <ino> <path>\n".
func (r Record) marshal() []byte {
	return []byte(fmt.Sprintf("%d %d %s\n", r.ID.Dev, r.ID.Ino, r.Path))
}

// ReadRecord returns the record in file; found is false when there is
// none (the common case: one failed open).
func ReadRecord(file string) (r Record, found bool, err error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return Record{}, true, fmt.Errorf("network namespace record %s: %w", f.Name(), err)
	}
	r, err = parseRecord(line, f.Name())
	return r, true, err
}

// parseRecord reads a record file's line, newline and all, from file
// name: the path is the rest of the line, spaces and all, and absolute.
func parseRecord(line, name string) (Record, error) {
	fields := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 3)
	var dev, ino uint64
	var err error
	if len(fields) == 3 {
		dev, err = strconv.ParseUint(fields[0], 10, 64)
		if err == nil {
			ino, err = strconv.ParseUint(fields[1], 10, 64)
		}
	}
	if len(fields) != 3 || err != nil || !filepath.IsAbs(fields[2]) {
		return Record{}, fmt.Errorf("network namespace record %s: malformed %q", name, line)
	}
	return Record{Path: fields[2], ID: ID{Dev: dev, Ino: ino}}, nil
}
