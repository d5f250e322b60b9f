package tracerun

import (
	"fmt"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/workloads"
)

// Workload is the workload of `trace --workload KIND -- FLAGS`.
type Workload struct {
	Spec workloads.Spec // validated; its file is prepared before the trace
	Args []string       // the traced child's `iopath workload` KIND and flags (the session adds --file and --json)
	// ReportJSON prints the workload's report as JSON (its --json); with
	// o.JSON the report is only in the workload record.
	ReportJSON bool
}

// RunWorkload prepares w's file in this untraced process (written,
// synced, dropped from the page cache with --cold), traces the workload
// child to its end, and prints its report, the summary and the workload
// record; the file is removed after (unless --keep). --duration and
// SIGINT/SIGTERM interrupt the workload (it still reports). A workload
// that exits 0 without a report is session.ErrNoReport.
func RunWorkload(sig *session.Signals, o Options, w Workload) (session.Result, error) {
	file, err := session.PrepareWorkFile(w.Spec, o.Notes)
	if err != nil {
		return session.Result{}, err
	}
	defer file.Cleanup(o.Notes)
	t, err := open(sig, &o, true) // the workload is a command
	if err != nil {
		return session.Result{}, err
	}
	defer t.end()
	res, err := t.s.TraceWorkload(session.WorkloadTrace{Args: w.Args, File: file, Duration: o.Duration, WaitWriteback: o.WaitWriteback, Stop: o.Out.Failed()})
	if err != nil {
		return res.Result, err
	}
	t.out.Flush() // the records before the report
	if res.Report != nil && !o.JSON {
		if w.ReportJSON {
			res.Report.WriteJSON(o.Out)
		} else {
			res.Report.WriteText(o.Out)
		}
	}
	o.Timeline.Summary(res.Summary)
	t.out.Summary(res.Summary)
	sayLosses(o.Notes, res.Summary)
	if o.JSON {
		t.out.WriteJSON(res.Record)
		t.out.Flush()
	} else {
		fmt.Fprint(o.Out, render.Workload(res.Record, o.WaitWriteback > 0))
	}
	if err := o.Out.Err(); err != nil {
		return res.Result, err
	}
	if res.Code == 0 && res.Report == nil {
		return res.Result, session.ErrNoReport
	}
	return res.Result, nil
}
