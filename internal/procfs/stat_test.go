package procfs

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// statLine makes a /proc/<pid>/stat line as the kernel prints it (52
// fields, Linux >= 5.x), with the given comm, state and start time.
func statLine(comm string, state byte, start uint64) string {
	rest := make([]string, 0, 49)
	for i := 4; i <= 52; i++ {
		v := fmt.Sprint(i * 7)
		if i == 22 {
			v = fmt.Sprint(start)
		}
		rest = append(rest, v)
	}
	return fmt.Sprintf("4242 (%s) %c %s\n", comm, state, strings.Join(rest, " "))
}

func TestParseStat(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Stat
		wantErr string
	}{
		{name: "plain", in: statLine("sleep", 'S', 1306530), want: Stat{'S', 1306530}},
		{name: "comm with blanks", in: statLine("my sleep 1 2 3", 'R', 7), want: Stat{'R', 7}},
		{name: "comm with parentheses", in: statLine("a) (b", 'S', 99), want: Stat{'S', 99}},
		{name: "comm ending in a parenthesis", in: statLine("x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20)", 'S', 5), want: Stat{'S', 5}},
		{name: "comm of parentheses only", in: statLine(")))", 'S', 5), want: Stat{'S', 5}},
		{name: "empty comm", in: statLine("", 'S', 5), want: Stat{'S', 5}},
		{name: "comm with a newline", in: statLine("a\nb", 'D', 5), want: Stat{'D', 5}},
		{name: "zombie", in: statLine("sleep", 'Z', 5), want: Stat{'Z', 5}},
		{name: "largest start time", in: statLine("x", 'S', 18446744073709551615), want: Stat{'S', 18446744073709551615}},
		{name: "exactly 22 fields", in: "1 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 77", want: Stat{'S', 77}},
		{name: "21 fields", in: "1 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21", wantErr: "19 fields after comm"},
		{name: "no comm", in: "1 x S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 77", wantErr: "no (comm)"},
		{name: "closing parenthesis only", in: "1 x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 77", wantErr: "no (comm)"},
		{name: "empty", in: "", wantErr: "no (comm)"},
		{name: "state of two letters", in: "1 (x) SS 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 77", wantErr: "not one letter"},
		{name: "start time not a number", in: "1 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 x7", wantErr: "start time"},
		{name: "negative start time", in: "1 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 -7", wantErr: "start time"},
		{name: "start time overflow", in: "1 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 18446744073709551616", wantErr: "out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseStat([]byte(c.in))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ParseStat = %+v, %v; want an error mentioning %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseStat: %v", err)
			}
			if got != c.want {
				t.Errorf("ParseStat = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseStatOfThisProcess(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("needs /proc: %v", err)
	}
	got, err := ParseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	// /proc/self is the thread group leader, which may sleep while
	// another thread reads.
	if got.StartTime == 0 || got.Exited() {
		t.Errorf("ParseStat(/proc/self/stat) = %+v, want a live process with a start time", got)
	}
}

// FuzzParseStat: ParseStat never panics on any input, and recovers state
// and start time from a kernel-shaped line whatever the comm holds.
func FuzzParseStat(f *testing.F) {
	f.Add("sleep", byte('S'), uint64(1306530), []byte("1 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 77"))
	f.Add("a) (b", byte('Z'), uint64(0), []byte(""))
	f.Add(") S 1 2 3", byte('R'), uint64(1<<63), []byte("1 ()) S"))
	f.Fuzz(func(t *testing.T, comm string, state byte, start uint64, raw []byte) {
		_, _ = ParseStat(raw)
		if state <= ' ' || state == ')' || state > '~' {
			return // the kernel's state is a printable letter
		}
		got, err := ParseStat([]byte(statLine(comm, state, start)))
		if err != nil {
			t.Fatalf("ParseStat(comm %q): %v", comm, err)
		}
		if got.State != state || got.StartTime != start {
			t.Fatalf("ParseStat(comm %q) = %+v, want state %c start %d", comm, got, state, start)
		}
	})
}
