package main

import (
	"strconv"
	"strings"
	"time"
)

// phases times the steps of one create or delete for a single debug line
// (`--debug`): where a slow pod start spends its time, read from
// containerd's log without a profiler.
type phases struct {
	start, last time.Time
	parts       []string
}

func newPhases() *phases {
	now := time.Now()
	return &phases{start: now, last: now}
}

// mark closes the step that ended now.
func (p *phases) mark(step string) {
	now := time.Now()
	p.parts = append(p.parts, step+" "+ms(now.Sub(p.last)))
	p.last = now
}

// String is "total: step ms, step ms, ...".
func (p *phases) String() string {
	return ms(p.last.Sub(p.start)) + ": " + strings.Join(p.parts, ", ")
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + " ms"
}
