package demo

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/workloads"
)

func init() {
	register(&Demo{Name: "direct-vs-buffered", Run: runDirect,
		Short: "4 KiB sequential reads of a cold 4 MiB file with O_DIRECT vs through the page cache"})
}

// Sizes of the direct-vs-buffered demo, in bytes.
const (
	directFileSize = 4 << 20 // each run's fresh file, read once from start to end
	directBS       = 4 << 10 // bytes per read
)

// DirectTable compares the two runs; every cell comes from the runs'
// syscall records, their workload records and reports.
func DirectTable(dio, buf *Run) string {
	row := func(name string, f func(r *Run) string) []string { return []string{name, f(dio), f(buf)} }
	return demoTable([][]string{
		{"", "O_DIRECT", "buffered"},
		row("read calls", func(r *Run) string { return fmt.Sprint(r.Stats.Calls) }),
		row("pages added to the cache", func(r *Run) string { return fmt.Sprint(r.Stats.Added) }),
		row("page-cache hits", func(r *Run) string {
			if r.Rec.Report.Direct {
				return "- (bypassed)"
			}
			return fmt.Sprintf("%d of %d pages", r.Stats.Hits, r.Stats.PagesReq)
		}),
		row("readahead decisions", func(r *Run) string { return raCell(&r.Stats) }),
		row("bios", func(r *Run) string {
			return fmt.Sprintf("%d (%.3f per call, %s average)", r.Stats.Bios, fdiv(float64(r.Stats.Bios), float64(r.Stats.Calls)),
				render.Bytes(div(r.Stats.DiskBytes, uint64(r.Stats.Bios))))
		}),
		row("disk bytes read", func(r *Run) string { return render.Bytes(r.Stats.DiskBytes) }),
		row("calls that slept on IO", func(r *Run) string { return fmt.Sprint(r.Stats.Waited) }),
		row("call latency mean", func(r *Run) string { return render.Duration(r.Stats.meanDur()) }),
		row("call latency p50 / p99 / max", func(r *Run) string {
			return fmt.Sprintf("%s / %s / %s", render.Duration(r.Stats.quantileDur(0.5)), render.Duration(r.Stats.quantileDur(0.99)), render.Duration(r.Stats.quantileDur(1)))
		}),
		row("device time per bio (D2C)", func(r *Run) string { return render.Duration(div(r.Stats.D2CNs, uint64(r.Stats.D2CBios))) }),
		row("total time (workload)", func(r *Run) string { return render.Duration(uint64(r.Rec.Report.Runtime)) }),
		row("file pages cached after", func(r *Run) string {
			if c := r.Rec.CachedAfter; c != nil {
				return fmt.Sprintf("%d of %d (%s)", c.CachedPages, c.TotalPages, c.Method)
			}
			return "-"
		}),
	})
}

// DirectWhy explains the table with its own numbers.
func DirectWhy(dio, buf *Run) string {
	var b strings.Builder
	d, p := &dio.Stats, &buf.Stats
	fmt.Fprintf(&b, "Why: O_DIRECT hands the caller's buffer to the block layer: no page was added to the cache (%d), no readahead ran,\n", d.Added)
	fmt.Fprintf(&b, "  and each %s read became its own bio (%d bios for %d calls) that the call slept on (%d of %d calls slept),\n",
		render.Bytes(directBS), d.Bios, d.Calls, d.Waited, d.Calls)
	fmt.Fprintf(&b, "  so every call cost about a device round trip: %s mean, for %s of device time per bio.\n",
		render.Duration(d.meanDur()), render.Duration(div(d.D2CNs, uint64(d.D2CBios))))
	fmt.Fprintf(&b, "  Buffered reads went through the page cache: readahead (%d decisions, windows up to %s) read the file in %d bios\n",
		p.RA, render.Count(uint64(p.RAMaxPages), "page"), p.Bios)
	fmt.Fprintf(&b, "  of %s on average, so %s of %d slept and %d of %d pages were hits: the median call took %s.\n",
		render.Bytes(div(p.DiskBytes, uint64(p.Bios))), render.Count(uint64(p.Waited), "call"), p.Calls, p.Hits, p.PagesReq, render.Duration(p.quantileDur(0.5)))
	fmt.Fprintf(&b, "  The whole pass took %s with O_DIRECT and %s buffered; the price of buffering is memory:\n",
		render.Duration(uint64(dio.Rec.Report.Runtime)), render.Duration(uint64(buf.Rec.Report.Runtime)))
	if dc, bc := dio.Rec.CachedAfter, buf.Rec.CachedAfter; dc != nil && bc != nil {
		fmt.Fprintf(&b, "  afterwards %d pages of the buffered file sit in the page cache, %d of the O_DIRECT one.\n", bc.CachedPages, dc.CachedPages)
	} else {
		fmt.Fprintf(&b, "  the buffered run added %d pages to the page cache, the O_DIRECT one %d.\n", p.Added, d.Added)
	}
	return b.String()
}

func runDirect(o *Options) error {
	ws, err := setupFiles(o, "its reads never reach a disk",
		workloads.Spec{Kind: workloads.KindSeqRead, FileSize: directFileSize, BlockSize: directBS, Cold: true, Direct: true},
		workloads.Spec{Kind: workloads.KindSeqRead, FileSize: directFileSize, BlockSize: directBS, Cold: true})
	if err != nil {
		return err
	}
	defer ws.close()
	files := ws.files
	bs := fmt.Sprintf("--bs=%d", directBS)
	runs := []*session.WorkloadRun{
		{Args: []string{workloads.KindSeqRead, bs, "--direct"}, File: files[0]},
		{Args: []string{workloads.KindSeqRead, bs}, File: files[1]},
	}
	tr, res, err := traceWorkloads(o, tracer.Options{All: true}, runs)
	if err != nil {
		return err
	}
	recs, sum, hooks := tr.recs, tr.sum, tr.hooks
	views, wrecs, err := runViews(tr, res, runs, true)
	if err != nil {
		return err
	}
	w := o.Out
	fmt.Fprintf(w, "iopath demo direct-vs-buffered: %s sequential reads of a cold %s file, with O_DIRECT vs through the page cache\n\n",
		render.Bytes(directBS), render.Bytes(directFileSize))
	fmt.Fprint(w, ws.coldFilesLine(directFileSize))
	tracedLines(w, runs, wrecs)
	fmt.Fprintf(w, "hooks: vfs_read=%s, page_cache_add=%s, readahead=%s, block_rq_issue=%s, iowait=%s\n\n", mech(hooks, "vfs_read"),
		mech(hooks, "page_cache_add"), mech(hooks, "readahead"), mech(hooks, "block_rq_issue"), mech(hooks, "iowait"))
	fmt.Fprint(w, DirectTable(views[0], views[1]))
	fmt.Fprintln(w)
	fmt.Fprint(w, DirectWhy(views[0], views[1]))
	lostWarning(w, sum)
	if o.JSON {
		printJSON(w, recs, sum, wrecs)
	}
	return nil
}
