package timeline

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/iopath/iopath/tracer"
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
	w         *bufio.Writer
	enc       *json.Encoder
	first     bool
	err       error
	summaries []*tracer.Summary
}

// NewChrome returns an Output writing a Chrome JSON trace to w (not closed by Close).
func NewChrome(w io.Writer) *Chrome {
	bw := bufio.NewWriterSize(w, 64<<10)
	c := &Chrome{w: bw, enc: json.NewEncoder(bw), first: true}
	_, c.err = bw.WriteString(`{"displayTimeUnit":"ns","traceEvents":[` + "\n")
	return c
}

type metaEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Pid  uint32         `json:"pid"`
	Tid  uint32         `json:"tid"`
	Args map[string]any `json:"args"`
}

type sliceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  uint32         `json:"pid"`
	Tid  uint32         `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

type flowEvent struct {
	Name string  `json:"name"`
	Cat  string  `json:"cat"`
	Ph   string  `json:"ph"`
	ID   uint64  `json:"id"`
	Ts   float64 `json:"ts"`
	Pid  uint32  `json:"pid"`
	Tid  uint32  `json:"tid"`
	Bp   string  `json:"bp,omitempty"`
}

// us converts ns to the format's µs; float64 holds CLOCK_MONOTONIC µs with
// all three decimals exactly (< 2^53 ns), and encoding/json prints the
// shortest decimal that reads back as the same float: the ns-exact value.
func us(ns uint64) float64 { return float64(ns) / 1000 }

func (c *Chrome) event(v any) {
	if c.err != nil {
		return
	}
	if !c.first {
		if c.err = c.w.WriteByte(','); c.err != nil {
			return
		}
	}
	c.first = false
	c.err = c.enc.Encode(v)
}

// Track writes the names and sort order of a new track (and of its process).
func (c *Chrome) Track(t *Track) {
	if t.NewProc {
		c.event(&metaEvent{Name: "process_name", Ph: "M", Pid: t.Pid, Args: map[string]any{"name": t.Process}})
		c.event(&metaEvent{Name: "process_sort_index", Ph: "M", Pid: t.Pid, Args: map[string]any{"sort_index": t.Sort}})
	}
	c.event(&metaEvent{Name: "thread_name", Ph: "M", Pid: t.Pid, Tid: t.Tid, Args: map[string]any{"name": t.Thread}})
	c.event(&metaEvent{Name: "thread_sort_index", Ph: "M", Pid: t.Pid, Tid: t.Tid, Args: map[string]any{"sort_index": t.Index}})
}

// Slice writes an "X" event.
func (c *Chrome) Slice(s *Slice) {
	c.event(&sliceEvent{Name: s.Name, Cat: s.Cat, Ph: "X", Ts: us(s.StartNs), Dur: us(s.DurNs),
		Pid: s.Track.Pid, Tid: s.Track.Tid, Args: s.Args})
}

// Flow writes "s", "t"…, "f" events sharing the flow's id.
func (c *Chrome) Flow(f *Flow) {
	for i, p := range f.Points {
		e := flowEvent{Name: flowName, Cat: flowName, Ph: "t", ID: f.ID, Ts: us(p.TsNs), Pid: p.Track.Pid, Tid: p.Track.Tid}
		switch i {
		case 0:
			e.Ph = "s"
		case len(f.Points) - 1:
			e.Ph, e.Bp = "f", "e"
		}
		c.event(&e)
	}
}

// Summary keeps the summary for the trace's otherData.
func (c *Chrome) Summary(s *tracer.Summary) { c.summaries = append(c.summaries, s) }

// Close ends the event array and writes otherData: the layout's counts and
// the summaries.
func (c *Chrome) Close(st Stats) error {
	if c.err != nil {
		return c.err
	}
	if _, err := c.w.WriteString("],\n\"otherData\":"); err != nil {
		return err
	}
	other := map[string]any{"source": "iopath", "layout": st}
	if len(c.summaries) > 0 {
		other["summaries"] = c.summaries
	}
	if err := c.enc.Encode(other); err != nil {
		return err
	}
	if _, err := c.w.WriteString("}\n"); err != nil {
		return err
	}
	return c.w.Flush()
}
