package pool

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseState(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantErr   string // substring; "" for success
		wantOwner []string
	}{
		{name: "empty pool", in: `{"version":1,"slotSize":65536,"allocations":[]}`},
		{name: "null allocations", in: `{"version":1,"slotSize":65536,"allocations":null}`},
		{name: "sorted on read", in: `{"version":1,"slotSize":10,"allocations":[
			{"owner":"b","hostID":20,"size":10,"root":"/r","allocated":"2025-01-01T00:00:00Z","members":["b"]},
			{"owner":"a","hostID":10,"size":10,"root":"/r","allocated":"2025-01-01T00:00:00Z"}]}`, wantOwner: []string{"a", "b"}},
		{name: "unknown fields ignored", in: `{"version":1,"slotSize":10,"extra":true,"allocations":[]}`},
		{name: "empty file", in: ``, wantErr: "EOF"},
		{name: "not json", in: `hello`, wantErr: "invalid character"},
		{name: "trailing data", in: `{"version":1,"slotSize":1,"allocations":[]} {}`, wantErr: "data after the JSON object"},
		{name: "null", in: `null`, wantErr: "version 0"},
		{name: "future version", in: `{"version":2,"slotSize":1,"allocations":[]}`, wantErr: "version 2"},
		{name: "slot size 0", in: `{"version":1,"slotSize":0,"allocations":[{"owner":"a","hostID":1,"size":0}]}`, wantErr: "slotSize 0"},
		{name: "no owner", in: `{"version":1,"slotSize":10,"allocations":[{"owner":"","hostID":10,"size":10}]}`, wantErr: "no owner"},
		{name: "size not slot", in: `{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":10,"size":20}]}`, wantErr: "size 20 is not the slot size 10"},
		{name: "reaches (uid_t)-1", in: `{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":4294967290,"size":10}]}`, wantErr: "reach past"},
		{name: "hostID too big", in: `{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":4294967296,"size":10}]}`, wantErr: "cannot unmarshal"},
		{name: "duplicate owner", in: `{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":10,"size":10},{"owner":"a","hostID":30,"size":10}]}`, wantErr: "owner a has two allocations"},
		{name: "overlap", in: `{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":10,"size":10},{"owner":"b","hostID":15,"size":10}]}`, wantErr: "owners a (10+10) and b (15+10) share host IDs"},
		{name: "duplicate member", in: `{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":10,"size":10,"members":["x","x"]}]}`, wantErr: `member "x" listed twice`},
		{name: "empty member", in: `{"version":1,"slotSize":10,"allocations":[{"owner":"a","hostID":10,"size":10,"members":[""]}]}`, wantErr: "empty member"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := parseState([]byte(tc.in))
			if expectCorrupt(t, err, tc.wantErr) {
				return
			}
			var owners []string
			for _, a := range st.Allocations {
				owners = append(owners, a.Owner)
			}
			if !reflect.DeepEqual(owners, tc.wantOwner) {
				t.Errorf("owners = %v, want %v", owners, tc.wantOwner)
			}
		})
	}
}

// expectCorrupt fails t unless err is an ErrCorruptState whose message
// contains want, or nil when want is "". It reports whether an error was
// expected.
func expectCorrupt(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}
	if !errors.Is(err, ErrCorruptState) {
		t.Errorf("%v is not ErrCorruptState", err)
	}
	return true
}

func TestStateRoundTrip(t *testing.T) {
	at := time.Date(2025, 11, 22, 10, 50, 0, 0, time.UTC)
	st := &state{Version: 1, SlotSize: 65536, Allocations: []Allocation{
		{Owner: "pod-b", HostID: 1<<31 + 65536, Size: 65536, Root: "/run/runc", Allocated: at, Members: []string{"pod-b", "app"}},
		{Owner: "pod-a", HostID: 1 << 31, Size: 65536, Root: "/run/containerd/runc/k8s.io", Allocated: at},
	}}
	data, err := encodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version": 1`, `"slotSize": 65536`, `"hostID": 2147483648`, `"allocated": "2025-11-22T10:50:00Z"`, `"members": [`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("encoded state lacks %s:\n%s", want, data)
		}
	}
	if strings.Count(string(data), `"members"`) != 1 {
		t.Errorf("empty members should be omitted:\n%s", data)
	}
	got, err := parseState(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Allocation{st.Allocations[1], st.Allocations[0]} // by host ID
	if !reflect.DeepEqual(got.Allocations, want) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got.Allocations, want)
	}
	empty, err := encodeState(&state{SlotSize: 65536})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(empty), `"allocations": []`) {
		t.Errorf("an empty pool must list [] (tools count .allocations):\n%s", empty)
	}
}
