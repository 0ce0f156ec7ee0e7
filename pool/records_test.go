package pool

import (
	"strings"
	"testing"
)

func TestParseRecordName(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		wantHostID uint32
		wantOwner  string
		wantErr    string // substring; "" for success
	}{
		{name: "plain", in: "2147483648-pod", wantHostID: 1 << 31, wantOwner: "pod"},
		{name: "dashes in the owner", in: "0-a-b--c", wantHostID: 0, wantOwner: "a-b--c"},
		{name: "largest host ID", in: "4294967295-x", wantHostID: 1<<32 - 1, wantOwner: "x"},
		{name: "owner ending in .tmp", in: "1-x.tmp", wantHostID: 1, wantOwner: "x.tmp"},
		{name: "no dash", in: "2147483648", wantErr: "not a record name"},
		{name: "no host ID", in: "-pod", wantErr: "not a record name"},
		{name: "leading zero", in: "01-pod", wantErr: "not a host ID in decimal"},
		{name: "sign", in: "+1-pod", wantErr: "not a host ID in decimal"},
		{name: "past uint32", in: "4294967296-pod", wantErr: "not a host ID in decimal"},
		{name: "hex", in: "0x10-pod", wantErr: "not a host ID in decimal"},
		{name: "no owner", in: "1-", wantErr: "empty owner"},
		{name: "dot owner", in: "1-..", wantErr: `".." name directories`},
		{name: "bad byte", in: "1-a:b", wantErr: "only letters, digits"},
		{name: "owner too long", in: "1-" + strings.Repeat("a", maxOwnerLen+1), wantErr: "at most 239"},
		{name: "temporary file", in: ".1-pod.tmp", wantErr: "not a host ID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hostID, owner, err := parseRecordName(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || hostID != tc.wantHostID || owner != tc.wantOwner {
				t.Fatalf("= %d, %q, %v; want %d, %q", hostID, owner, err, tc.wantHostID, tc.wantOwner)
			}
			if back := recordName(hostID, owner); back != tc.in {
				t.Errorf("recordName = %q, want %q", back, tc.in)
			}
		})
	}
}

func TestTempName(t *testing.T) {
	for _, name := range []string{"1-pod", "1-x.tmp", "4294967295-" + strings.Repeat("a", maxOwnerLen)} {
		tmp := tempName(name)
		if !isTempName(tmp) || isTempName(name) {
			t.Errorf("%q: isTempName(%q) = %v, isTempName(record) = %v", name, tmp, isTempName(tmp), isTempName(name))
		}
		if _, _, err := parseRecordName(tmp); err == nil {
			t.Errorf("temporary name %q parses as a record name", tmp)
		}
		if len(tmp) > 255 {
			t.Errorf("%q: %d bytes, past NAME_MAX", tmp, len(tmp))
		}
	}
}

func TestDecodeRecord(t *testing.T) {
	const name = "2147483648-pod"
	good := `{"owner":"pod","hostID":2147483648,"size":65536,"root":"/r","allocated":"2025-01-01T00:00:00Z","members":["pod"]}`
	tests := []struct {
		name    string
		file    string
		in      string
		wantErr string // substring; "" for success
	}{
		{name: "record", in: good + "\n"},
		{name: "no final newline", in: good},
		{name: "unknown fields ignored", in: strings.Replace(good, `{`, `{"extra":1,`, 1)},
		{name: "empty", in: "", wantErr: "EOF"},
		{name: "truncated", in: good[:40], wantErr: "unexpected EOF"},
		{name: "null", in: "null", wantErr: `the record of owner ""`},
		{name: "trailing data", in: good + "\n{}", wantErr: "data after the JSON object"},
		{name: "other owner", in: strings.Replace(good, `"owner":"pod"`, `"owner":"pod2"`, 1), wantErr: `owner "pod2"`},
		{name: "other host ID", in: strings.Replace(good, `2147483648`, `2147549184`, 1), wantErr: "at host ID 2147549184"},
		{name: "size 0", in: strings.Replace(good, `65536`, `0`, 1), wantErr: "size 0"},
		{name: "reaches (uid_t)-1", file: "4294967290-pod", in: strings.Replace(good, `2147483648`, `4294967290`, 1), wantErr: "reach past"},
		{name: "duplicate member", in: strings.Replace(good, `["pod"]`, `["pod","pod"]`, 1), wantErr: "listed twice"},
		{name: "bad file name", file: "pod", in: good, wantErr: "not a record name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = name
			}
			a, err := decodeRecord(file, []byte(tc.in))
			if expectCorrupt(t, err, tc.wantErr) {
				return
			}
			if a.Owner != "pod" || a.HostID != 1<<31 || a.Size != 65536 {
				t.Errorf("decoded %+v", a)
			}
		})
	}
}
