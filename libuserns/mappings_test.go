package libuserns

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func m(containerID, hostID, size uint32) specs.LinuxIDMapping {
	return specs.LinuxIDMapping{ContainerID: containerID, HostID: hostID, Size: size}
}

// lines makes n uid_map lines of one ID each.
func lines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%10d %10d %10d\n", i, 100000+i, 1)
	}
	return b.String()
}

func TestParseMappings(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []specs.LinuxIDMapping
		wantErr string // "" means no error
	}{
		{name: "initial user namespace", in: "         0          0 4294967295\n", want: []specs.LinuxIDMapping{m(0, 0, 4294967295)}},
		{name: "pod range as the kernel prints it", in: "         0 3000000000      65536\n", want: []specs.LinuxIDMapping{m(0, 3000000000, 65536)}},
		{
			name: "several lines",
			in:   "         0       1000          1\n         1     100000      65536\n     65537 4294901760      65535\n",
			want: []specs.LinuxIDMapping{m(0, 1000, 1), m(1, 100000, 65536), m(65537, 4294901760, 65535)},
		},
		{name: "single spaces, no final newline", in: "0 1000 1", want: []specs.LinuxIDMapping{m(0, 1000, 1)}},
		{name: "tabs and blank lines", in: "\n\t0\t1000\t1\t\n\n  \n1 2 3\n", want: []specs.LinuxIDMapping{m(0, 1000, 1), m(1, 2, 3)}},
		{name: "CRLF", in: "0 1000 1\r\n", want: []specs.LinuxIDMapping{m(0, 1000, 1)}},
		{name: "leading zeros", in: "00 0100 001", want: []specs.LinuxIDMapping{m(0, 100, 1)}},
		{name: "empty (a namespace with no map yet)", in: "", want: nil},
		{name: "340 lines", in: lines(340), want: func() []specs.LinuxIDMapping {
			var out []specs.LinuxIDMapping
			for i := range uint32(340) {
				out = append(out, m(i, 100000+i, 1))
			}
			return out
		}()},
		{name: "341 lines", in: lines(341), wantErr: "more than 340 lines"},
		{name: "garbage", in: "a b c\n", wantErr: `"a b c"`},
		{name: "words", in: "not an id map\n", wantErr: "want 3 fields, have 4"},
		{name: "4 fields", in: "0 1000 1 1\n", wantErr: "want 3 fields, have 4"},
		{name: "2 fields", in: "0 1000\n", wantErr: "want 3 fields, have 2"},
		{name: "garbage after a good line", in: "0 1000 1\nx\n", wantErr: `"x"`},
		{name: "count 0", in: "0 1000 0\n", wantErr: "count is 0"},
		{name: "negative", in: "0 -1 1\n", wantErr: "invalid syntax"},
		{name: "plus sign", in: "0 +1 1\n", wantErr: "invalid syntax"},
		{name: "hex", in: "0 0x10 1\n", wantErr: "invalid syntax"},
		{name: "host ID overflow", in: "0 4294967296 1\n", wantErr: "out of range"},
		{name: "count overflow", in: "0 0 4294967296\n", wantErr: "out of range"},
		{name: "container ID overflow", in: "18446744073709551616 0 1\n", wantErr: "out of range"},
		{name: "line too long", in: strings.Repeat(" ", 70000) + "0 0 1\n", wantErr: "read id map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseMappings(strings.NewReader(c.in))
			if c.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseMappings = %v, want an error", got)
				}
				if !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("error %q does not mention %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMappings: %v", err)
			}
			if !Equal(got, c.want) {
				t.Errorf("ParseMappings = %v, want %v", got, c.want)
			}
		})
	}
}

func TestFormatMappings(t *testing.T) {
	cases := []struct {
		name string
		in   []specs.LinuxIDMapping
		want string
	}{
		{"none", nil, ""},
		{"pod", PodMappings(3000000000, 65536), "0 3000000000 65536\n"},
		{"largest", []specs.LinuxIDMapping{m(4294967295, 4294967295, 4294967295)}, "4294967295 4294967295 4294967295\n"},
		{"two", []specs.LinuxIDMapping{m(0, 1000, 1), m(1, 100000, 65536)}, "0 1000 1\n1 100000 65536\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := FormatMappings(c.in)
			if got != c.want {
				t.Errorf("FormatMappings = %q, want %q", got, c.want)
			}
			back, err := ParseMappings(strings.NewReader(got))
			if err != nil {
				t.Fatalf("ParseMappings(%q): %v", got, err)
			}
			if !Equal(back, c.in) {
				t.Errorf("round trip = %v, want %v", back, c.in)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	a := []specs.LinuxIDMapping{m(0, 1000, 1), m(1, 2000, 10)}
	cases := []struct {
		name string
		x, y []specs.LinuxIDMapping
		want bool
	}{
		{"both nil", nil, nil, true},
		{"nil and empty", nil, []specs.LinuxIDMapping{}, true},
		{"same", a, []specs.LinuxIDMapping{m(0, 1000, 1), m(1, 2000, 10)}, true},
		{"other order", a, []specs.LinuxIDMapping{m(1, 2000, 10), m(0, 1000, 1)}, false},
		{"prefix", a, a[:1], false},
		{"nil and one", nil, a[:1], false},
		{"container ID differs", []specs.LinuxIDMapping{m(0, 1, 1)}, []specs.LinuxIDMapping{m(1, 1, 1)}, false},
		{"host ID differs", []specs.LinuxIDMapping{m(0, 1, 1)}, []specs.LinuxIDMapping{m(0, 2, 1)}, false},
		{"size differs", []specs.LinuxIDMapping{m(0, 1, 1)}, []specs.LinuxIDMapping{m(0, 1, 2)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Equal(c.x, c.y); got != c.want {
				t.Errorf("Equal(%v, %v) = %v, want %v", c.x, c.y, got, c.want)
			}
			if got := Equal(c.y, c.x); got != c.want {
				t.Errorf("Equal(%v, %v) = %v, want %v (not symmetric)", c.y, c.x, got, c.want)
			}
		})
	}
}

func TestMapsHostRoot(t *testing.T) {
	cases := []struct {
		name string
		in   []specs.LinuxIDMapping
		want bool
	}{
		{"none", nil, false},
		{"identity", []specs.LinuxIDMapping{m(0, 0, 4294967295)}, true},
		{"pod range", PodMappings(3000000000, 65536), false},
		{"host 1 up", []specs.LinuxIDMapping{m(0, 1, 65536)}, false},
		{"host 0 to container 1000", []specs.LinuxIDMapping{m(1000, 0, 1)}, true},
		{"host 0 in a later line", []specs.LinuxIDMapping{m(0, 100000, 1000), m(1000, 0, 1)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MapsHostRoot(c.in); got != c.want {
				t.Errorf("MapsHostRoot(%v) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func TestPodMappings(t *testing.T) {
	got := PodMappings(2147483648, 65536)
	if want := []specs.LinuxIDMapping{m(0, 2147483648, 65536)}; !Equal(got, want) {
		t.Errorf("PodMappings = %v, want %v", got, want)
	}
}

// FuzzParseMappings: ParseMappings never panics, and what it accepts
// survives FormatMappings.
func FuzzParseMappings(f *testing.F) {
	for _, s := range []string{
		"         0          0 4294967295\n",
		"0 3000000000 65536\n1 2 3\n",
		"\n\t0\t1\t1\r\n",
		"0 0 0\n",
		"0 4294967296 1",
		"a b c",
		lines(3), // small seeds: the fuzzer minimizes what it finds from them quickly
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseMappings(strings.NewReader(string(in)))
		if err != nil {
			return
		}
		if len(got) > maxMapLines {
			t.Fatalf("accepted %d lines", len(got))
		}
		for _, e := range got {
			if e.Size == 0 {
				t.Fatalf("accepted a count of 0: %v", got)
			}
		}
		text := FormatMappings(got)
		back, err := ParseMappings(strings.NewReader(text))
		if err != nil {
			t.Fatalf("ParseMappings(FormatMappings(%v)) = %v", got, err)
		}
		if !Equal(back, got) {
			t.Fatalf("round trip %v -> %q -> %v", got, text, back)
		}
		if again := FormatMappings(back); again != text {
			t.Fatalf("FormatMappings not stable: %q then %q", text, again)
		}
	})
}

func TestParseNamespaceMaps(t *testing.T) {
	cases := []struct {
		name          string
		uidMap        string
		gidMap        string
		wantUID       []specs.LinuxIDMapping
		wantGID       []specs.LinuxIDMapping
		wantErr       string // "" means no error
		wantNoMapping bool   // the error wraps ErrNoMapping
	}{
		{name: "pod range", uidMap: "         0 3000000000      65536\n", gidMap: "         0 3000000000      65536\n",
			wantUID: []specs.LinuxIDMapping{m(0, 3000000000, 65536)}, wantGID: []specs.LinuxIDMapping{m(0, 3000000000, 65536)}},
		{name: "uid and gid maps differ", uidMap: "0 100000 65536\n", gidMap: "0 200000 1000\n1000 5 1\n",
			wantUID: []specs.LinuxIDMapping{m(0, 100000, 65536)}, wantGID: []specs.LinuxIDMapping{m(0, 200000, 1000), m(1000, 5, 1)}},
		{name: "340 lines", uidMap: lines(340), gidMap: lines(1),
			wantUID: func() []specs.LinuxIDMapping {
				var out []specs.LinuxIDMapping
				for i := range uint32(340) {
					out = append(out, m(i, 100000+i, 1))
				}
				return out
			}(), wantGID: []specs.LinuxIDMapping{m(0, 100000, 1)}},
		{name: "empty uid_map", uidMap: "", gidMap: "0 1 1\n", wantErr: "uid_map: empty: no mapping was written", wantNoMapping: true},
		{name: "empty gid_map", uidMap: "0 1 1\n", gidMap: "\n", wantErr: "gid_map: empty: no mapping was written", wantNoMapping: true},
		{name: "both empty", wantErr: "uid_map: empty", wantNoMapping: true},
		{name: "more than 340 uid lines", uidMap: lines(341), gidMap: lines(1), wantErr: "uid_map: id map has more than 340 lines"},
		{name: "more than 340 gid lines", uidMap: lines(1), gidMap: lines(341), wantErr: "gid_map: id map has more than 340 lines"},
		{name: "garbage gid_map", uidMap: "0 1 1\n", gidMap: "0 1\n", wantErr: "gid_map: id map line \"0 1\": want 3 fields, have 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			uid, gid, err := ParseNamespaceMaps([]byte(c.uidMap), []byte(c.gidMap))
			if c.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseNamespaceMaps = %v, %v, want an error", uid, gid)
				}
				if !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("error %q does not mention %q", err, c.wantErr)
				}
				if got := errors.Is(err, ErrNoMapping); got != c.wantNoMapping {
					t.Errorf("errors.Is(%v, ErrNoMapping) = %v, want %v", err, got, c.wantNoMapping)
				}
				if uid != nil || gid != nil {
					t.Errorf("mappings %v, %v returned with the error", uid, gid)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNamespaceMaps: %v", err)
			}
			if !Equal(uid, c.wantUID) || !Equal(gid, c.wantGID) {
				t.Errorf("ParseNamespaceMaps = %v, %v, want %v, %v", uid, gid, c.wantUID, c.wantGID)
			}
		})
	}
}

// FuzzParseNamespaceMaps: ParseNamespaceMaps never panics, and what it
// accepts is two non-empty maps that ParseMappings reads alike.
func FuzzParseNamespaceMaps(f *testing.F) {
	f.Add([]byte("0 3000000000 65536\n"), []byte("0 3000000000 65536\n"))
	f.Add([]byte(""), []byte("0 1 1\n"))
	f.Add([]byte("0 1 1\n"), []byte("0 1 0\n"))
	f.Add([]byte(lines(3)), []byte("a b c"))
	f.Fuzz(func(t *testing.T, uidMap, gidMap []byte) {
		uid, gid, err := ParseNamespaceMaps(uidMap, gidMap)
		if err != nil {
			return
		}
		if len(uid) == 0 || len(gid) == 0 {
			t.Fatalf("accepted an empty map: %v, %v", uid, gid)
		}
		for _, c := range []struct {
			in  []byte
			got []specs.LinuxIDMapping
		}{{uidMap, uid}, {gidMap, gid}} {
			want, err := ParseMappings(strings.NewReader(string(c.in)))
			if err != nil || !Equal(want, c.got) {
				t.Fatalf("ParseNamespaceMaps gave %v for %q; ParseMappings %v, %v", c.got, c.in, want, err)
			}
		}
	})
}
