package tracer

import (
	"testing"
	"time"
)

// Run waits 100 ms for records, or less when Idle asks (trace --interval).
func TestWaitDeadline(t *testing.T) {
	now := time.Now()
	for _, c := range []struct{ wake, want time.Duration }{{0, 100 * time.Millisecond}, {20 * time.Millisecond, 20 * time.Millisecond}, {time.Second, 100 * time.Millisecond}} {
		var wake time.Time
		if c.wake > 0 {
			wake = now.Add(c.wake)
		}
		if got := waitDeadline(now, wake).Sub(now); got != c.want {
			t.Errorf("wake in %v: waits %v, want %v", c.wake, got, c.want)
		}
	}
}
