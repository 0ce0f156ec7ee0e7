package netns

import (
	"fmt"
	"os"
	"strings"
)

// WriteRecord records the network namespace at path in file: it checks
// that path names a network namespace now, and has write put the record
// in place with mode 0600. write must replace file whole or not at all
// (the caller's atomic writer, which also makes file's directory).
func WriteRecord(file, path string, write func(file string, data []byte, mode os.FileMode) error) (Record, error) {
	if strings.ContainsRune(path, '\n') {
		return Record{}, fmt.Errorf("the path has a newline: name the network namespace by a path without one")
	}
	f, id, err := Open(path)
	if err != nil {
		return Record{}, err
	}
	f.Close()
	r := Record{Path: path, ID: id}
	if err := write(file, r.marshal(), 0o600); err != nil {
		return Record{}, err
	}
	return r, nil
}
