package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/sirupsen/logrus"
)

// logSink sends log lines where runc sends its own: runc's --log file in
// runc's --log-format, else stderr. Lines below error level are held back
// until the call succeeds: containerd shows the last error line of a failed
// call, and podman (conmon) parses the whole --log file of a failed call as
// one JSON object, so a failed call must leave exactly one line, the error.
type logSink struct {
	out     io.Writer
	held    bytes.Buffer
	holding bool
}

func (s *logSink) Write(p []byte) (int, error) {
	if s.holding {
		return s.held.Write(p)
	}
	return s.out.Write(p)
}

// commit writes the held lines: the call succeeded.
func (s *logSink) commit() {
	if s.held.Len() > 0 {
		_, _ = s.out.Write(s.held.Bytes())
		s.held.Reset()
	}
	s.holding = false
}

// discard drops the held lines: the call failed and its error is the line
// that must be left.
func (s *logSink) discard() {
	s.held.Reset()
	s.holding = false
}

// newLogger configures logrus as runc's configLogrus does: --log opened with
// O_APPEND|O_SYNC, --log-format text or json, --debug for debug level.
// Without a log file only warnings reach stderr: whatever a successful
// create prints shows up in the container's logs under podman.
func newLogger(logPath, format string, debug bool) (*logrus.Logger, *logSink, error) {
	sink := &logSink{out: os.Stderr, holding: !debug}
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
		sink.out = f
		l.SetLevel(logrus.InfoLevel)
	}
	if debug {
		l.SetLevel(logrus.DebugLevel)
	}
	return l, sink, nil
}

// fatal reports err as runc's fatal() does (the error in the log, and on
// stderr, so twice on stderr without --log, as runc does) and returns 1.
func fatal(l *logrus.Logger, sink *logSink, err error) int {
	sink.discard()
	l.Error(err)
	fmt.Fprintln(os.Stderr, err)
	return 1
}
