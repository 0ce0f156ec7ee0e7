package pool

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	const slot = 65536
	tests := []struct {
		name    string
		ranges  []Range
		slot    uint32
		wantErr string // exact message; "" for success
	}{
		{name: "default", ranges: DefaultRanges(), slot: slot},
		{name: "two ranges", ranges: []Range{{100000, 2 * slot}, {1 << 31, slot}}, slot: slot},
		{name: "adjacent ranges", ranges: []Range{{1 << 31, slot}, {1<<31 + slot, slot}}, slot: slot},
		{name: "highest possible range", ranges: []Range{{maxID - slot, slot}}, slot: slot},
		{name: "small slots", ranges: []Range{{1000, 10}}, slot: 5},
		{
			name: "not a multiple", ranges: []Range{{2147483648, 100000}}, slot: slot,
			wantErr: "range 2147483648+100000: size 100000 is not a multiple of the slot size 65536",
		},
		{
			name: "zero size", ranges: []Range{{2147483648, 0}}, slot: slot,
			wantErr: "range 2147483648+0: size 0: a range must hold at least one slot of 65536 IDs",
		},
		{
			name: "touches (uid_t)-1", ranges: []Range{{maxID - slot + 1, slot}}, slot: slot,
			wantErr: "range 4294901760+65536: its last ID 4294967295 must be below 4294967295, which the kernel reserves as (uid_t)-1",
		},
		{
			name: "overflows 32 bits", ranges: []Range{{maxID - 10, 4294901760}}, slot: slot,
			wantErr: "range 4294967285+4294901760: its last ID 8589869044 must be below 4294967295, which the kernel reserves as (uid_t)-1",
		},
		{
			name: "smaller than a slot", ranges: []Range{{1 << 31, 1000}}, slot: slot,
			wantErr: "range 2147483648+1000: size 1000 is smaller than the slot size 65536",
		},
		{
			name: "overlap", ranges: []Range{{1<<31 + slot, 2 * slot}, {1 << 31, 2 * slot}}, slot: slot,
			wantErr: "ranges 2147483648+131072 and 2147549184+131072 overlap: a host ID may belong to one range only",
		},
		{
			name: "duplicate", ranges: []Range{{1 << 31, slot}, {1 << 31, slot}}, slot: slot,
			wantErr: "ranges 2147483648+65536 and 2147483648+65536 overlap: a host ID may belong to one range only",
		},
		{
			name: "slot size 0", ranges: DefaultRanges(), slot: 0,
			wantErr: "slot size 0: each owner needs at least one ID (the default is 65536)",
		},
		{
			name: "no ranges", slot: slot,
			wantErr: "no ranges: the pool needs at least one range of host IDs",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.ranges, tc.slot)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("Validate = %v\nwant %s", err, tc.wantErr)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%v is not ErrInvalidConfig", err)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{name: "defaults slot size", cfg: Config{Ranges: DefaultRanges(), StateDir: "/nonexistent"}},
		{name: "no state dir", cfg: Config{Ranges: DefaultRanges()}, wantErr: true},
		{name: "bad range", cfg: Config{Ranges: []Range{{1 << 31, 100000}}, StateDir: "/x"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.cfg)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("New = %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Capacity() != 1024 {
				t.Errorf("Capacity = %d, want 1024", p.Capacity())
			}
		})
	}
}
