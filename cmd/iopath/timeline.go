package main

import (
	"fmt"
	"io"

	"github.com/iopath/iopath/timeline"
	"github.com/spf13/pflag"
)

// timelineFlags are --timeline and --report (trace and demo).
type timelineFlags struct{ trace, report string }

func addTimelineFlags(fl *pflag.FlagSet, f *timelineFlags) {
	fl.StringVar(&f.trace, "timeline", "", "write a Chrome JSON trace of the calls, bios, writeback and arrows between them to `FILE` (open it in ui.perfetto.dev or chrome://tracing)")
	fl.StringVar(&f.report, "report", "", "write a self-contained HTML report (the same timeline, histograms, summary) to `FILE`")
}

// activeTimeline receives every record the tracer emits (tee) and the
// summaries; nil without --timeline/--report. One per process: set by the
// trace or demo command before tracing starts.
var activeTimeline *timeline.Files

// openTimeline creates the outputs f asks for (nil, nil if none), saying
// on notes which temp files of killed earlier runs it removed.
func openTimeline(f *timelineFlags, title string, notes io.Writer) (*timeline.Files, error) {
	o, err := timeline.OpenFiles(f.trace, f.report, title)
	if o != nil {
		for _, p := range o.Stale {
			fmt.Fprintf(notes, "iopath: removed %s, left by an iopath run that no longer runs\n", p)
		}
	}
	return o, err
}
