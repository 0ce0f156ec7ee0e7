package logging

import (
	"regexp"
	"testing"
	"time"
)

func TestMs(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0.00 ms"},
		{1500 * time.Microsecond, "1.50 ms"},
		{1234567 * time.Nanosecond, "1.23 ms"},
		{2 * time.Second, "2000.00 ms"},
	}
	for _, tt := range tests {
		if got := ms(tt.d); got != tt.want {
			t.Errorf("ms(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestPhases(t *testing.T) {
	p := NewPhases()
	p.Mark("load")
	time.Sleep(time.Millisecond)
	p.Mark("runc")
	re := regexp.MustCompile(`^\d+\.\d\d ms: load \d+\.\d\d ms, runc \d+\.\d\d ms$`)
	if s := p.String(); !re.MatchString(s) {
		t.Fatalf("phases %q, want %v", s, re)
	}
	if p.last.Sub(p.start) < time.Millisecond {
		t.Errorf("total %v, shorter than the step slept", p.last.Sub(p.start))
	}
}
