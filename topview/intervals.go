package topview

import (
	"time"

	"github.com/iopath/iopath/aggregate"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer"
)

// Intervals prints `trace --interval`'s summaries between the stories: the
// in-kernel aggregates (as `iopath top` shows them) every interval, on the
// tracer's reading goroutine (Tracer.Idle), so they never land inside a
// record. A busy ring buffer delays one until it is drained.
type Intervals struct {
	every time.Duration
	out   *render.Printer
	json  bool
	t     *tracer.Tracer
	rd    *aggregate.Reader
	prev  *aggregate.Snapshot
}

// NewIntervals returns nil for every == 0 (no interval summaries).
func NewIntervals(every time.Duration, out *render.Printer, asJSON bool) *Intervals {
	if every <= 0 {
		return nil
	}
	return &Intervals{every: every, out: out, json: asJSON}
}

// Start is called once the tracer is attached, before it reads.
func (iv *Intervals) Start(t *tracer.Tracer) {
	if iv == nil {
		return
	}
	iv.t, iv.rd = t, aggregate.NewReader(t.AggMaps())
	iv.prev, _ = iv.rd.Read()
}

// Idle returns the tracer's Idle function: a summary when one is due,
// then flush; it asks to be called again when the next one is due (the
// reader otherwise waits up to 100 ms: --interval 20ms gave one every
// ~100 ms).
func (iv *Intervals) Idle(flush func()) func() time.Time {
	if iv == nil {
		return func() time.Time { flush(); return time.Time{} }
	}
	return func() time.Time {
		if iv.prev == nil {
			flush()
			return time.Time{}
		}
		if time.Since(iv.prev.At) >= iv.every {
			cur, err := iv.rd.Read()
			if err != nil {
				flush()
				return time.Time{} // tried again at the next wait
			}
			iv.print(cur)
		}
		flush()
		return iv.prev.At.Add(iv.every)
	}
}

// Final prints the run's last, partial interval (from the last summary to
// the end), so that the intervals add up to the run as top's do; call it
// once the trace has ended, before the summary.
func (iv *Intervals) Final() {
	if iv == nil || iv.prev == nil {
		return
	}
	if cur, err := iv.rd.Read(); err == nil {
		iv.print(cur)
	}
}

// print writes the interval from iv.prev to cur.
func (iv *Intervals) print(cur *aggregate.Snapshot) {
	d := aggregate.Delta(iv.prev, cur)
	if iv.json {
		iv.out.WriteJSON(Build("interval", d, cur, SortDisk, 10, iv.t.Counters()["ringbuf_lost"], iv.t.MissedRuns()))
	} else {
		iv.out.WriteText("── " + Table(d, cur, ByProcess, SortDisk, 10) + "\n")
	}
	iv.prev = cur
}
