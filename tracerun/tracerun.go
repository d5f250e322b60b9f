// Package tracerun is one `iopath trace` run from its flags to its end:
// the tracer loaded with a render.Printer as its output (and the
// --timeline/--report files as a tee), the interval summaries of
// --interval between the stories, --ready-file, the run (a command, -p,
// --comm or a workload), the workload's report and record, and the
// summary. The CLI checks the flags and opens the output; the exit status
// is the caller's (session.Result.Code).
package tracerun

import (
	"fmt"
	"io"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/timeline"
	"github.com/iopath/iopath/topview"
	"github.com/iopath/iopath/tracer"
)

// Options are a run's settings (trace's flags, checked).
type Options struct {
	// Tracer says what to trace and how; Run adds Agg for Interval.
	Tracer tracer.Options
	// Out receives the records, stories and summary (its first write
	// error stops the run); Shared is set when it is stdout shared with
	// the command (session.Output).
	Out    *session.Out
	Shared *session.SharedStdout
	// Notes receives iopath's own lines (stderr).
	Notes       io.Writer
	JSON, Quiet bool
	// FileRows caps the text summary's file tables (0: all files).
	FileRows int
	// Interval prints the in-kernel aggregates every Interval (0: never).
	Interval time.Duration
	// Settle is how long the end waits for bios still in flight.
	Settle time.Duration
	// ReadyFile is created once the hooks are attached ("": none).
	ReadyFile string
	// Timeline, if not nil, receives every record and the summary.
	Timeline *timeline.Files
	// Duration ends the run (0: no limit); WaitWriteback waits after the
	// command exited for its dirty pages to reach the disk.
	Duration, WaitWriteback time.Duration
}

// traced is a loaded tracer printing to out.
type traced struct {
	s   *session.Session
	out *render.Printer
	end func() // flush out, remove the ready file, unload the tracer
	iv  *topview.Intervals
}

// open loads the tracer with o's printer as its output, says on o.Notes
// how its hooks attached, and creates the ready file.
func open(sig *session.Signals, o *Options, withCommand bool) (*traced, error) {
	out := render.NewPrinter(o.Out, o.JSON, o.Quiet)
	out.SetFileRows(o.FileRows)
	session.SetChunk(out, o.Out, o.Shared)
	topts := o.Tracer
	iv := topview.NewIntervals(o.Interval, out, o.JSON)
	topts.Agg = iv != nil
	s, err := session.Open(sig, session.Options{Tracer: topts, Record: o.Timeline.Tee(out.Record), Idle: iv.Idle(out.Flush), Settle: o.Settle, Notes: o.Notes,
		PidsOnly: topts.Comm == "" && !withCommand,
		Attached: func(t *tracer.Tracer) { session.SayAttached(o.Notes, t.Hooks, topts.Force); iv.Start(t) }})
	if err != nil {
		return nil, err
	}
	removeReady, err := session.ReadyFile(o.ReadyFile, o.Notes)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &traced{s: s, out: out, iv: iv, end: func() {
		out.Flush()
		removeReady()
		s.Close()
	}}, nil
}

// Run traces command (nil: o.Tracer's pids or comm) to its end and prints
// the summary. A failed write to o.Out ends the run as --duration would (a
// command gets SIGTERM; without one the trace stops) and is the error
// returned, after the hooks detach: nothing more is traced into an output
// that cannot take it (`iopath trace … | head`, a full disk).
func Run(sig *session.Signals, o Options, command *session.Command) (session.Result, error) {
	t, err := open(sig, &o, command != nil)
	if err != nil {
		return session.Result{}, err
	}
	defer t.end()
	if len(o.Tracer.Pids) > 0 {
		fmt.Fprintln(o.Notes, session.PidNote(o.Tracer.Pids)) // -p follows only that process's future children
	}
	tr := session.Trace{Pids: o.Tracer.Pids, Duration: o.Duration, WaitWriteback: o.WaitWriteback, Command: command, Stop: o.Out.Failed()}
	if command != nil {
		tr.Pids = nil
		if o.Shared != nil {
			tr.Started = func(*session.Child) { o.Shared.Started() }
		}
	} else if o.Tracer.Comm != "" {
		tr.Pids = nil // --comm: new processes may come; run until stopped
	}
	res, err := t.s.Trace(tr)
	if err != nil {
		return res, err
	}
	t.iv.Final() // the last, partial interval
	o.Timeline.Summary(res.Summary)
	t.out.Summary(res.Summary)
	sayLosses(o.Notes, res.Summary)
	return res, o.Out.Err()
}

// sayLosses puts the run's losses on notes too (render.LossLines): the
// summary may be in an -o file.
func sayLosses(notes io.Writer, sum *record.Summary) {
	for _, l := range render.LossLines(sum) {
		fmt.Fprintln(notes, l)
	}
}
