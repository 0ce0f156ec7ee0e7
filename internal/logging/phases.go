package logging

import (
	"strconv"
	"strings"
	"time"
)

// Phases times the steps of one create or delete for a single debug line
// (`--debug`): where a slow pod start spends its time, read from
// containerd's log without a profiler.
type Phases struct {
	start, last time.Time
	parts       []string
}

// NewPhases starts the clock: the first step runs from now.
func NewPhases() *Phases {
	now := time.Now()
	return &Phases{start: now, last: now}
}

// Mark closes the step that ended now.
func (p *Phases) Mark(step string) {
	now := time.Now()
	p.parts = append(p.parts, step+" "+ms(now.Sub(p.last)))
	p.last = now
}

// String is "total: step ms, step ms, ...".
func (p *Phases) String() string {
	return ms(p.last.Sub(p.start)) + ": " + strings.Join(p.parts, ", ")
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + " ms"
}
