package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// failAfter fails every write after the first n bytes.
type failAfter struct {
	buf bytes.Buffer
	n   int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.buf.Len()+len(p) > f.n {
		return 0, errors.New("no space left on device")
	}
	return f.buf.Write(p)
}

// TestDrainWriter: runc's log is read to its end whatever the log file
// does, and what the file took before it failed is the lines before.
func TestDrainWriter(t *testing.T) {
	lines := []string{"{\"msg\":\"one\"}\n", "{\"msg\":\"two\"}\n", "{\"msg\":\"three\"}\n"}
	for _, tc := range []struct {
		name    string
		room    int
		written string
		failed  bool
	}{
		{"room for all", 1 << 10, strings.Join(lines, ""), false},
		{"room for one line", len(lines[0]), lines[0], true},
		{"no room", 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &failAfter{n: tc.room}
			d := &drainWriter{w: f}
			n, err := io.Copy(d, strings.NewReader(strings.Join(lines, "")))
			if err != nil || n != int64(len(strings.Join(lines, ""))) {
				t.Fatalf("io.Copy = %d, %v; want every byte read, no error", n, err)
			}
			// io.Copy from a strings.Reader writes in one go: feed line by
			// line too, as a FIFO hands them over.
			f2 := &failAfter{n: tc.room}
			d2 := &drainWriter{w: f2}
			for _, l := range lines {
				if m, err := d2.Write([]byte(l)); m != len(l) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", l, m, err)
				}
			}
			if f2.buf.String() != tc.written || (d2.err != nil) != tc.failed {
				t.Errorf("written %q, err %v; want %q, failed %v", f2.buf.String(), d2.err, tc.written, tc.failed)
			}
		})
	}
}
