package timeline

import (
	"io"
	"math"

	"github.com/iopath/iopath/record"
)

// Chrome writes the Chrome JSON trace event format (the "JSON Object
// Format" that ui.perfetto.dev and chrome://tracing open), streamed: each
// event is written as it is laid out, so a trace of millions of events
// needs no more memory than one.
//
// Events: "M" metadata (process_name, process_sort_index, thread_name,
// thread_sort_index), "X" complete slices, and flows "s" (start), "t" (step),
// "f" (finish, "bp":"e": bound to the slice enclosing its timestamp, like the
// others). Timestamps and durations are µs (the format's unit) as decimals
// with ns precision; pids and tids are the kernel's for traced threads and
// ≥ 2^23 for devices, workers and dirty-pages lanes.
type Chrome struct {
	out       *jsonArray
	summaries []*record.Summary
}

// NewChrome returns an Output writing a Chrome JSON trace to w (not closed by Close).
func NewChrome(w io.Writer) *Chrome {
	// No displayTimeUnit: Perfetto's importer reads "ns" there as the unit
	// of ts and dur (the format says µs, and chrome://tracing agrees).
	return &Chrome{out: newJSONArray(w, `{"traceEvents":[`+"\n")}
}

// Event is one trace event, as written and as read back. Only "X" slices
// have a duration; metadata events have no time.
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts,omitempty"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  uint32         `json:"pid"`
	Tid  uint32         `json:"tid"`
	ID   uint64         `json:"id,omitempty"`
	Bp   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// DurUs is the event's duration in µs (0 if it has none).
func (e *Event) DurUs() float64 {
	if e.Dur == nil {
		return 0
	}
	return *e.Dur
}

// Trace is a whole Chrome JSON trace, as read back (tests, tools).
type Trace struct {
	TraceEvents []Event        `json:"traceEvents"`
	OtherData   map[string]any `json:"otherData"`
}

// us converts ns to the format's µs. Viewers convert back by multiplying
// by 1000 and truncating (Perfetto's importer), so the float is the
// smallest one whose product with 1000 is not below ns: the product then
// truncates to ns exactly, and slices that end together (a bio and its
// D2C) still end together. Exact while ns < 2^52 (52 days of uptime); the
// format's µs floats cannot hold ns beyond.
func us(ns uint64) float64 {
	v := float64(ns) / 1000
	if math.FMA(v, 1000, -float64(ns)) < 0 {
		v = math.Nextafter(v, math.Inf(1))
	}
	return v
}

func meta(name string, pid, tid uint32, key string, v any) *Event {
	return &Event{Name: name, Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{key: v}}
}

// Track writes the names and sort order of a new track (and of its process).
func (c *Chrome) Track(t *Track) {
	if t.NewProc {
		c.out.add(meta("process_name", t.Pid, 0, "name", t.Process))
		c.out.add(meta("process_sort_index", t.Pid, 0, "sort_index", t.Sort))
	}
	c.out.add(meta("thread_name", t.Pid, t.Tid, "name", t.Thread))
	c.out.add(meta("thread_sort_index", t.Pid, t.Tid, "sort_index", t.Index))
}

// Slice writes an "X" event.
func (c *Chrome) Slice(s *Slice) {
	d := us(s.DurNs)
	c.out.add(&Event{Name: s.Name, Cat: s.Cat, Ph: "X", Ts: us(s.StartNs), Dur: &d, Pid: s.Track.Pid, Tid: s.Track.Tid, Args: s.Args})
}

// Flow writes "s", "t"…, "f" events sharing the flow's id.
func (c *Chrome) Flow(f *Flow) {
	for i, p := range f.Points {
		e := Event{Name: flowName, Cat: flowName, Ph: "t", ID: f.ID, Ts: us(p.TsNs), Pid: p.Track.Pid, Tid: p.Track.Tid}
		switch i {
		case 0:
			e.Ph = "s"
		case len(f.Points) - 1:
			e.Ph, e.Bp = "f", "e"
		}
		c.out.add(&e)
	}
}

// Summary keeps the summary for the trace's otherData.
func (c *Chrome) Summary(s *record.Summary) { c.summaries = append(c.summaries, s) }

// Close ends the event array and writes otherData: the layout's counts and
// the summaries.
func (c *Chrome) Close(st Stats) error {
	other := map[string]any{"source": "iopath", "layout": st}
	if len(c.summaries) > 0 {
		other["summaries"] = c.summaries
	}
	return c.out.end("],\n\"otherData\":", other, "}\n")
}
