package topview

import (
	"testing"
	"time"

	"github.com/iopath/iopath/aggregate"
)

// issue 10: trace --interval 20ms printed a summary every ~100 ms (the
// reader's wait); Idle now asks to be called when the next one is due.
func TestIntervalsIdleAsksForNextDue(t *testing.T) {
	at := time.Now()
	iv := NewIntervals(20*time.Millisecond, nil, true)
	iv.prev = &aggregate.Snapshot{At: at}
	flushed := 0
	idle := iv.Idle(func() { flushed++ })
	if got := idle(); !got.Equal(at.Add(20*time.Millisecond)) || flushed != 1 {
		t.Errorf("Idle before the interval is due: wake %v (want %v), flushed %d", got.Sub(at), 20*time.Millisecond, flushed)
	}
	var none *Intervals
	if got := none.Idle(func() { flushed++ })(); !got.IsZero() || flushed != 2 {
		t.Errorf("no --interval: wake %v, flushed %d", got, flushed)
	}
}
