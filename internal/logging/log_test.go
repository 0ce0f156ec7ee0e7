package logging

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// withStderr points os.Stderr at a file for the test's duration and
// returns a reader of what was written to it.
func withStderr(t *testing.T) func() string {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "stderr"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = f
	t.Cleanup(func() { os.Stderr = old; f.Close() })
	return func() string {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestNewLevelAndFormat(t *testing.T) {
	tests := []struct {
		name    string
		logFile bool
		format  string
		debug   bool
		level   logrus.Level
		json    bool
		wantErr string
	}{
		{name: "stderr: warnings only", level: logrus.WarnLevel},
		{name: "stderr, debug", debug: true, level: logrus.DebugLevel},
		{name: "log file: info", logFile: true, format: "text", level: logrus.InfoLevel},
		{name: "log file, json", logFile: true, format: "json", level: logrus.InfoLevel, json: true},
		{name: "log file, debug", logFile: true, debug: true, level: logrus.DebugLevel},
		{name: "unknown format, runc's words", format: "xml", wantErr: "invalid log-format: xml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var path string
			if tt.logFile {
				path = filepath.Join(t.TempDir(), "log")
			}
			l, sink, err := New(path, tt.format, tt.debug)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("New: err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.GetLevel() != tt.level {
				t.Errorf("level %v, want %v", l.GetLevel(), tt.level)
			}
			if _, ok := l.Formatter.(*logrus.JSONFormatter); ok != tt.json {
				t.Errorf("JSON formatter %v, want %v", ok, tt.json)
			}
			if sink.holding == tt.debug {
				t.Errorf("holding %v with debug %v: a debug run holds nothing", sink.holding, tt.debug)
			}
		})
	}
}

// Without --log (CRI-O's create, and a shell's), a failed call prints its
// error on stderr once, not as a log line and then again.
func TestFatalWithoutLog(t *testing.T) {
	for _, debug := range []bool{false, true} {
		stderr := withStderr(t)
		l, sink, err := New("", "text", debug)
		if err != nil {
			t.Fatal(err)
		}
		l.Warn("a warning")
		if status := Fatal(l, sink, errors.New("container c1: it broke")); status != 1 {
			t.Errorf("Fatal returned %d, want 1", status)
		}
		got := stderr()
		if debug {
			got = got[strings.Index(got, "\n")+1:] // the warning, not held with --debug
		}
		if got != "container c1: it broke\n" {
			t.Errorf("debug %v: stderr %q, want the error once", debug, got)
		}
	}
}

func TestNewOpenError(t *testing.T) {
	_, _, err := New(filepath.Join(t.TempDir(), "no", "such", "dir", "log"), "json", false)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "open log file: ") {
		t.Fatalf("New with a log file in a missing directory: %v", err)
	}
}

// TestSink: a call that succeeds writes what it held; a call that fails
// leaves exactly one line, its error, in the log and prints it on stderr.
func TestSink(t *testing.T) {
	tests := []struct {
		name   string
		format string
		debug  bool
		fail   bool
		want   []string // level of each line left in the log
	}{
		{name: "success: held lines written", format: "json", want: []string{"warning", "info"}},
		{name: "failure: the error only", format: "json", fail: true, want: []string{"error"}},
		{name: "failure, text: the error only", format: "text", fail: true, want: []string{"error"}},
		{name: "debug: nothing held", format: "json", debug: true, fail: true, want: []string{"warning", "info", "debug", "error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stderr := withStderr(t)
			path := filepath.Join(t.TempDir(), "log")
			l, sink, err := New(path, tt.format, tt.debug)
			if err != nil {
				t.Fatal(err)
			}
			l.Warn("a warning")
			l.Info("an info")
			l.Debug("a debug")
			if !tt.debug {
				if !sink.Held() {
					t.Fatal("nothing held before the call's outcome")
				}
				if lines := readLines(t, path); len(lines) != 0 {
					t.Fatalf("written before the call's outcome: %q", lines)
				}
			}
			if tt.fail {
				if status := Fatal(l, sink, errors.New("container c1: it broke")); status != 1 {
					t.Errorf("Fatal returned %d, want 1", status)
				}
				if got := stderr(); got != "container c1: it broke\n" {
					t.Errorf("stderr %q, want the error", got)
				}
			} else {
				sink.Commit()
			}
			if sink.Held() {
				t.Error("lines still held after the outcome")
			}
			lines := readLines(t, path)
			if len(lines) != len(tt.want) {
				t.Fatalf("log lines %q, want levels %q", lines, tt.want)
			}
			for i, line := range lines {
				level := levelOf(t, tt.format, line)
				if level != tt.want[i] {
					t.Errorf("line %d %q: level %q, want %q", i, line, level, tt.want[i])
				}
			}
			if tt.fail && !strings.Contains(lines[len(lines)-1], "container c1: it broke") {
				t.Errorf("last line %q does not carry the error", lines[len(lines)-1])
			}
		})
	}
}

func levelOf(t *testing.T, format, line string) string {
	t.Helper()
	if format == "json" {
		var v struct{ Level, Msg, Time string }
		if err := json.Unmarshal([]byte(line), &v); err != nil || v.Time == "" {
			t.Fatalf("line %q: not runc's JSON (%v)", line, err)
		}
		return v.Level
	}
	for _, f := range strings.Fields(line) {
		if level, ok := strings.CutPrefix(f, "level="); ok {
			return level
		}
	}
	t.Fatalf("line %q has no level=", line)
	return ""
}

// TestDiscard: a call that fails without Fatal (runc's own failure, runc
// wrote the error) drops what it held and writes nothing after.
func TestDiscard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, sink, err := New(path, "json", false)
	if err != nil {
		t.Fatal(err)
	}
	l.Warn("a warning")
	sink.Discard()
	sink.Commit()
	if lines := readLines(t, path); len(lines) != 0 {
		t.Fatalf("discarded lines written: %q", lines)
	}
	l.Warn("after the outcome")
	if lines := readLines(t, path); len(lines) != 1 {
		t.Fatalf("a line after the outcome is written at once, have %q", lines)
	}
}
