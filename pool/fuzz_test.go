package pool

import (
	"bytes"
	"errors"
	"testing"
)

// The parsers read files and output that other programs (and people)
// write: whatever they are given, they must not panic, and what they
// accept must hold the invariants the pool relies on.

func FuzzParseSubidFile(f *testing.F) {
	for _, s := range []string{
		"",
		"runc-userns:100000:65536\n",
		"# comment\n\nalice:100000:65536\r\nbob:165536:65536\n1000:231072:65536",
		"a:1\nb:x:1\nc:1:2:3\n:1:2\n",
		"a:4294967295:1\na:18446744073709551615:1\na:-1:2\n",
		"root:x:0:0:root:/root:/bin/bash\n+nis::::::\n",
		"\x00:\xff:\n::::\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		last := 0
		for _, e := range parseSubidFile(data) {
			if e.n <= last {
				t.Fatalf("line numbers not increasing: %d after %d", e.n, last)
			}
			last = e.n
			if e.err == nil && (e.r.Size == 0 || e.r.end() > maxID) {
				t.Fatalf("accepted range %s", e.r)
			}
		}
		// The same host files feed the passwd and group parser.
		parseIDFile(data)
	})
}

func FuzzParseGetsubids(f *testing.F) {
	for _, s := range []string{
		"",
		"0: runc-userns 100000 65536\n",
		"0: u 100000 65536\n1: u 2147483648 131072\n",
		"Error fetching ranges\n",
		"0: u 4294967295 65536\n",
		"x: u 1 2\n0 u 1 2\n0: u 1\n",
		"0:  u\t1   2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ranges, err := parseGetsubids(data)
		if err != nil {
			return
		}
		for _, r := range ranges {
			if r.Size == 0 || r.end() > maxID || r.Owner == "" {
				t.Fatalf("accepted %+v", r)
			}
		}
	})
}

func FuzzParseState(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"slotSize":65536,"allocations":[]}`,
		`{"version":1,"slotSize":65536,"allocations":[{"owner":"8f2c61a7d3e4","hostID":2147483648,"size":65536,"root":"/run/containerd/runc/k8s.io","allocated":"2025-11-22T10:50:00Z","members":["8f2c61a7d3e4","b0d9e1f2a3c4"]}]}`,
		`{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":10,"size":10},{"owner":"b","hostID":15,"size":10}]}`,
		`{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":4294967280,"size":10,"allocated":"2025-01-01T00:00:00+05:30"}]}`,
		`{"version":2}`,
		`null`,
		`{"version":1,"slotSize":65536,"allocations":[]} trailing`,
		`{"version":1,"slotS`,
	} {
		f.Add([]byte(s))
	}
	l := newLayout(DefaultRanges(), DefaultSlotSize)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseState(data)
		if err != nil {
			return
		}
		for i, a := range st.Allocations {
			if checkRecord(a, st.SlotSize) != nil {
				t.Fatalf("accepted record %+v", a)
			}
			if i > 0 && st.Allocations[i-1].Range().overlaps(a.Range()) {
				t.Fatalf("accepted overlapping records %+v and %+v", st.Allocations[i-1], a)
			}
		}
		rebuild(l, st.Allocations) // must not panic, whatever the records
		// What we write, we read back as it was.
		out, err := encodeState(st)
		if err != nil {
			t.Fatalf("encode accepted state: %v", err)
		}
		st2, err := parseState(out)
		if err != nil {
			t.Fatalf("reparse %s: %v", out, err)
		}
		out2, err := encodeState(st2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the state:\n%s\n%s (%v)", out, out2, err)
		}
	})
}

// FuzzDecodeRecord: anything may be in RecordDir, under any name. What
// decodes is a record of its file's owner and host ID that passes
// checkRecord, and writing it gives a record that reads back the same.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range [][2]string{
		{"2147483648-8f2c61a7d3e4", `{"owner":"8f2c61a7d3e4","hostID":2147483648,"size":65536,"root":"/run/containerd/runc/k8s.io","allocated":"2025-11-22T10:50:00Z","members":["8f2c61a7d3e4","b0d9e1f2a3c4"]}` + "\n"},
		{"10-a-b", `{"owner":"a-b","hostID":10,"size":10,"allocated":"2025-01-01T00:00:00+05:30"}`},
		{"4294967280-x.tmp", `{"owner":"x.tmp","hostID":4294967280,"size":10}`},
		{".10-a.tmp", `{"owner":"a","hostID":10,"size":10}`},
		{"010-a", `{"owner":"a","hostID":10,"size":10}`},
		{"10-..", `{"owner":"..","hostID":10,"size":10}`},
		{"10-a", `{"owner":"b","hostID":10,"size":10}`},
		{"10-a", `{"owner":"a","hostID":10,"size":0,"members":[""]}`},
		{"10-a", `null`},
		{"10-a", `{"owner":"a","hostID":10,"si`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if hostID, owner, err := parseRecordName(name); err == nil {
			if recordName(hostID, owner) != name || isTempName(name) || ownerRule(owner) != "" {
				t.Fatalf("accepted name %q as %d, %q", name, hostID, owner)
			}
		}
		a, err := decodeRecord(name, data)
		if err != nil {
			if !errors.Is(err, ErrCorruptState) {
				t.Fatalf("error %v is not ErrCorruptState", err)
			}
			return
		}
		if recordName(a.HostID, a.Owner) != name || a.Size == 0 || checkRecord(a, a.Size) != nil {
			t.Fatalf("accepted %+v from %q", a, name)
		}
		out, err := encodeRecord(a)
		if err != nil {
			t.Fatalf("encode accepted record: %v", err)
		}
		if bytes.Count(out, []byte("\n")) != 1 || out[len(out)-1] != '\n' {
			t.Fatalf("record is not one line: %q", out)
		}
		b, err := decodeRecord(name, out)
		if err != nil {
			t.Fatalf("reread %s: %v", out, err)
		}
		if out2, err := encodeRecord(b); err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the record:\n%s\n%s (%v)", out, out2, err)
		}
	})
}
