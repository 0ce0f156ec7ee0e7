package logging

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/sirupsen/logrus"
)

// Sink sends log lines where runc sends its own: runc's --log file in
// runc's --log-format, else stderr. Lines below error level are held back
// until the call succeeds: containerd shows the last error line of a failed
// call, and podman (conmon) parses the whole --log file of a failed call as
// one JSON object, so a failed call must leave exactly one line, the error.
type Sink struct {
	out      io.Writer
	held     bytes.Buffer
	holding  bool
	toStderr bool // no --log: out is stderr
}

func (s *Sink) Write(p []byte) (int, error) {
	if s.holding {
		return s.held.Write(p)
	}
	return s.out.Write(p)
}

// Held reports whether lines are held back, waiting for Commit or Discard.
func (s *Sink) Held() bool {
	return s.held.Len() > 0
}

// Commit writes the held lines: the call succeeded.
func (s *Sink) Commit() {
	if s.held.Len() > 0 {
		_, _ = s.out.Write(s.held.Bytes())
		s.held.Reset()
	}
	s.holding = false
}

// Discard drops the held lines: the call failed and its error is the line
// that must be left.
func (s *Sink) Discard() {
	s.held.Reset()
	s.holding = false
}

// New configures logrus as runc's configLogrus does: --log opened with
// O_APPEND|O_SYNC, --log-format text or json, --debug for debug level.
// Without a log file only warnings reach stderr: whatever a successful
// create prints shows up in the container's logs under podman.
func New(logPath, format string, debug bool) (*logrus.Logger, *Sink, error) {
	sink := &Sink{out: os.Stderr, holding: !debug, toStderr: logPath == ""}
	l := logrus.New()
	l.SetOutput(sink)
	switch format {
	case "", "text":
	case "json":
		l.SetFormatter(new(logrus.JSONFormatter))
	default:
		return nil, nil, fmt.Errorf("invalid log-format: %s", format)
	}
	l.SetLevel(logrus.WarnLevel)
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_SYNC, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("open log file: %w", err)
		}
		sink.out, sink.toStderr = f, false
		l.SetLevel(logrus.InfoLevel)
	}
	if debug {
		l.SetLevel(logrus.DebugLevel)
	}
	return l, sink, nil
}

// Fatal reports err as runc's fatal() does, the error in the log and on
// stderr, and returns 1, the exit status. Without --log the log is stderr
// too, where runc would print the error twice (a logfmt line, then the
// message): there it is printed once, as the message, which is what
// CRI-O (no --log) shows its user. The held lines are dropped first: the
// error is the one line a failed call leaves.
func Fatal(l *logrus.Logger, sink *Sink, err error) int {
	sink.Discard()
	if !sink.toStderr {
		l.Error(err)
	}
	fmt.Fprintln(os.Stderr, err)
	return 1
}
