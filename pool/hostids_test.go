package pool

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCheckHost(t *testing.T) {
	pool := []Range{{HostID: 1 << 31, Size: 4 * 65536}}
	tests := []struct {
		name    string
		h       HostIDs
		wantErr string // substring; "" for success
	}{
		{name: "clean host", h: HostIDs{
			Users:   []NamedID{{"root", 0}, {"nobody", 65534}, {"alice", 1000}},
			Groups:  []NamedID{{"root", 0}, {"nogroup", 65534}},
			SubUIDs: []OwnedRange{{"alice", Range{100000, 65536}}},
			SubGIDs: []OwnedRange{{"alice", Range{100000, 65536}}},
		}},
		{name: "range just below", h: HostIDs{SubUIDs: []OwnedRange{{"bob", Range{1<<31 - 65536, 65536}}}}},
		{name: "id just after", h: HostIDs{Users: []NamedID{{"edge", 1<<31 + 4*65536}}}},
		{name: "user inside", h: HostIDs{Users: []NamedID{{"ldapuser", 1<<31 + 2}}},
			wantErr: "pool range 2147483648+262144 holds uid 2147483650 of user ldapuser"},
		{name: "first id of the pool", h: HostIDs{Users: []NamedID{{"edge", 1 << 31}}},
			wantErr: "holds uid 2147483648 of user edge"},
		{name: "group inside", h: HostIDs{Groups: []NamedID{{"biggroup", 1<<31 + 65536}}},
			wantErr: "pool range 2147483648+262144 holds gid 2147549184 of group biggroup"},
		{name: "subuid overlap", h: HostIDs{SubUIDs: []OwnedRange{{"podman", Range{1<<31 - 10, 100}}}},
			wantErr: "pool range 2147483648+262144 overlaps the subordinate uids 2147483638+100 of podman (/etc/subuid) from ID 2147483648"},
		{name: "subgid overlap", h: HostIDs{SubGIDs: []OwnedRange{{"1001", Range{1<<31 + 65536, 65536}}}},
			wantErr: "overlaps the subordinate gids 2147549184+65536 of 1001 (/etc/subgid) from ID 2147549184"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckHost(pool, tc.h)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("CheckHost = %v\nwant it to contain %q", err, tc.wantErr)
			}
			if !errors.Is(err, ErrHostConflict) {
				t.Errorf("%v is not ErrHostConflict", err)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadHostIDs(t *testing.T) {
	dir := t.TempDir()
	passwd := writeFile(t, dir, "passwd", `root:x:0:0:root:/root:/bin/bash
runc-userns:x:999:999::/nonexistent:/usr/sbin/nologin
+nisuser::::::
broken line
bad:x:notanumber:0::/:/bin/sh
toolarge:x:4294967296:0::/:/bin/sh
alice:x:1000:1000:Alice:/home/alice:/bin/bash
`)
	group := writeFile(t, dir, "group", "root:x:0:\n# a comment\n\nusers:x:100:alice\n")
	subuid := writeFile(t, dir, "subuid", "alice:100000:65536\nrunc-userns:2147483648:67108864\n999:3000000000:65536\ngarbage\n")
	subgid := writeFile(t, dir, "subgid", "alice:100000:65536\nrunc-userns:2147483648:67108864\n")

	t.Run("all files", func(t *testing.T) {
		h, err := ReadHostIDs(passwd, group, subuid, subgid, "runc-userns")
		if err != nil {
			t.Fatal(err)
		}
		want := HostIDs{
			Users:   []NamedID{{"root", 0}, {"runc-userns", 999}, {"alice", 1000}},
			Groups:  []NamedID{{"root", 0}, {"users", 100}},
			SubUIDs: []OwnedRange{{"alice", Range{100000, 65536}}},
			SubGIDs: []OwnedRange{{"alice", Range{100000, 65536}}},
		}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("ReadHostIDs =\n%+v\nwant\n%+v", h, want)
		}
	})
	t.Run("self by uid", func(t *testing.T) {
		h, err := ReadHostIDs(passwd, group, subuid, subgid, "999")
		if err != nil {
			t.Fatal(err)
		}
		if len(h.SubUIDs) != 1 || h.SubUIDs[0].Owner != "alice" {
			t.Errorf("SubUIDs = %+v, want only alice's", h.SubUIDs)
		}
	})
	t.Run("missing files are empty", func(t *testing.T) {
		h, err := ReadHostIDs(filepath.Join(dir, "none1"), "", filepath.Join(dir, "none3"), filepath.Join(dir, "none4"), "x")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(h, HostIDs{}) {
			t.Errorf("got %+v, want empty", h)
		}
	})
	t.Run("unreadable file names its path", func(t *testing.T) {
		// A directory cannot be read as a file, even by root.
		_, err := ReadHostIDs(passwd, dir, subuid, subgid, "x")
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("err = %v, want one naming %s", err, dir)
		}
	})
}

func TestParseSubidFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []subidLine // err compared as nil / non-nil
	}{
		{name: "empty"},
		{name: "one", in: "runc-userns:100000:65536\n", want: []subidLine{{n: 1, owner: "runc-userns", r: Range{100000, 65536}}}},
		{name: "comments blanks crlf", in: "# c\n\n  alice:1:2\r\n", want: []subidLine{{n: 3, owner: "alice", r: Range{1, 2}}}},
		{name: "count 0 dropped", in: "a:5:0\n"},
		{name: "numeric owner", in: "1000:100000:65536", want: []subidLine{{n: 1, owner: "1000", r: Range{100000, 65536}}}},
		{name: "too few fields", in: "a:1\n", want: []subidLine{{n: 1, owner: "a", err: errors.New("x")}}},
		{name: "too many fields", in: "a:1:2:3\n", want: []subidLine{{n: 1, owner: "a", err: errors.New("x")}}},
		{name: "not numbers", in: "a:x:2\nb:1:-2\n", want: []subidLine{{n: 1, owner: "a", err: errors.New("x")}, {n: 2, owner: "b", err: errors.New("x")}}},
		{name: "past (uid_t)-1", in: "a:4294967295:1\nb:4294967294:1\n", want: []subidLine{{n: 1, owner: "a", err: errors.New("x")}, {n: 2, owner: "b", r: Range{4294967294, 1}}}},
		{name: "64-bit values", in: "a:18446744073709551615:18446744073709551615\n", want: []subidLine{{n: 1, owner: "a", err: errors.New("x")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseSubidFile([]byte(tc.in))
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if g.n != w.n || g.owner != w.owner || (g.err == nil) != (w.err == nil) || (g.err == nil && g.r != w.r) {
					t.Errorf("entry %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestParseGetsubids(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []OwnedRange
		wantErr bool
	}{
		{name: "empty"},
		{name: "debian 12 output", in: "0: runc-userns 100000 65536\n", want: []OwnedRange{{"runc-userns", Range{100000, 65536}}}},
		{name: "two ranges", in: "0: u 100000 65536\n1: u 2147483648 131072\n", want: []OwnedRange{{"u", Range{100000, 65536}}, {"u", Range{2147483648, 131072}}}},
		{name: "zero count skipped", in: "0: u 5 0\n"},
		{name: "no colon", in: "0 u 1 2\n", wantErr: true},
		{name: "bad index", in: "x: u 1 2\n", wantErr: true},
		{name: "three fields", in: "0: u 1\n", wantErr: true},
		{name: "error text", in: "Error fetching ranges\n", wantErr: true},
		{name: "negative", in: "0: u -1 2\n", wantErr: true},
		{name: "too big", in: "0: u 4294967295 65536\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGetsubids([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseIDFile(t *testing.T) {
	in := "root:x:0:0:root:/root:/bin/bash\n-neg:x:5:5::/:\n:x:6:6::/:\nshort:x\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	want := []NamedID{{"root", 0}, {"nobody", 65534}}
	if got := parseIDFile([]byte(in)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
