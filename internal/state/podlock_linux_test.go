package state

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// LockPods excludes: of goroutines that each hold it for a moment, never
// two at once; and it is made in a state dir that does not exist yet.
func TestLockPods(t *testing.T) {
	lay := Layout(t.TempDir() + "/state")
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := lay.LockPods()
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d holders at once, want 1", m)
	}
}
