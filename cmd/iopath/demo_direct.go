package main

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
	"github.com/spf13/cobra"
)

func init() {
	demos["direct-vs-buffered"] = struct {
		short string
		run   func(cmd *cobra.Command, f *demoFlags, args []string) error
	}{"4 KiB sequential reads of a cold 4 MiB file with O_DIRECT vs through the page cache", runDemoDirect}
}

// Sizes of the direct-vs-buffered demo, in bytes.
const (
	directFileSize = 4 << 20 // each run's fresh file, read once from start to end
	directBS       = 4 << 10 // bytes per read
)

// directTable compares the two runs; every cell comes from the runs'
// syscall records, their workload records and reports.
func directTable(dio, buf *demoRun) string {
	row := func(name string, f func(r *demoRun) string) []string { return []string{name, f(dio), f(buf)} }
	return demoTable([][]string{
		{"", "O_DIRECT", "buffered"},
		row("read calls", func(r *demoRun) string { return fmt.Sprint(r.stats.Calls) }),
		row("pages added to the cache", func(r *demoRun) string { return fmt.Sprint(r.stats.Added) }),
		row("page-cache hits", func(r *demoRun) string {
			if r.rec.Report.Direct {
				return "- (bypassed)"
			}
			return fmt.Sprintf("%d of %d pages", r.stats.Hits, r.stats.PagesReq)
		}),
		row("readahead decisions", func(r *demoRun) string { return raCell(&r.stats) }),
		row("bios", func(r *demoRun) string {
			return fmt.Sprintf("%d (%.3f per call, %s average)", r.stats.Bios, fdiv(float64(r.stats.Bios), float64(r.stats.Calls)),
				human(div(r.stats.DiskBytes, uint64(r.stats.Bios))))
		}),
		row("disk bytes read", func(r *demoRun) string { return human(r.stats.DiskBytes) }),
		row("calls that slept on IO", func(r *demoRun) string { return fmt.Sprint(r.stats.Waited) }),
		row("call latency mean", func(r *demoRun) string { return dur(r.stats.meanDur()) }),
		row("call latency p50 / p99 / max", func(r *demoRun) string {
			return fmt.Sprintf("%s / %s / %s", dur(r.stats.quantileDur(0.5)), dur(r.stats.quantileDur(0.99)), dur(r.stats.quantileDur(1)))
		}),
		row("device time per bio (D2C)", func(r *demoRun) string { return dur(div(r.stats.D2CNs, uint64(r.stats.D2CBios))) }),
		row("total time (workload)", func(r *demoRun) string { return dur(uint64(r.rec.Report.Runtime)) }),
		row("file pages cached after", func(r *demoRun) string {
			if c := r.rec.CachedAfter; c != nil {
				return fmt.Sprintf("%d of %d (%s)", c.CachedPages, c.TotalPages, c.Method)
			}
			return "-"
		}),
	})
}

// directWhy explains the table with its own numbers.
func directWhy(dio, buf *demoRun) string {
	var b strings.Builder
	d, p := &dio.stats, &buf.stats
	fmt.Fprintf(&b, "Why: O_DIRECT hands the caller's buffer to the block layer: no page was added to the cache (%d), no readahead ran,\n", d.Added)
	fmt.Fprintf(&b, "  and each %s read became its own bio (%d bios for %d calls) that the call slept on (%d of %d calls slept),\n",
		human(directBS), d.Bios, d.Calls, d.Waited, d.Calls)
	fmt.Fprintf(&b, "  so every call cost about a device round trip: %s mean, for %s of device time per bio.\n",
		dur(d.meanDur()), dur(div(d.D2CNs, uint64(d.D2CBios))))
	fmt.Fprintf(&b, "  Buffered reads went through the page cache: readahead (%d decisions, windows up to %s) read the file in %d bios\n",
		p.RA, pl(uint64(p.RAMaxPages), "page"), p.Bios)
	fmt.Fprintf(&b, "  of %s on average, so %s of %d slept and %d of %d pages were hits: the median call took %s.\n",
		human(div(p.DiskBytes, uint64(p.Bios))), pl(uint64(p.Waited), "call"), p.Calls, p.Hits, p.PagesReq, dur(p.quantileDur(0.5)))
	fmt.Fprintf(&b, "  The whole pass took %s with O_DIRECT and %s buffered; the price of buffering is memory:\n",
		dur(uint64(dio.rec.Report.Runtime)), dur(uint64(buf.rec.Report.Runtime)))
	if dc, bc := dio.rec.CachedAfter, buf.rec.CachedAfter; dc != nil && bc != nil {
		fmt.Fprintf(&b, "  afterwards %d pages of the buffered file sit in the page cache, %d of the O_DIRECT one.\n", bc.CachedPages, dc.CachedPages)
	} else {
		fmt.Fprintf(&b, "  the buffered run added %d pages to the page cache, the O_DIRECT one %d.\n", p.Added, d.Added)
	}
	return b.String()
}

func runDemoDirect(cmd *cobra.Command, f *demoFlags, _ []string) error {
	dir, fs, cleanup, err := demoSetup(f)
	if err != nil {
		return err
	}
	defer cleanup()
	files, closeFiles, err := demoFiles(dir, f.keep,
		workloads.Spec{Kind: workloads.KindSeqRead, FileSize: directFileSize, BlockSize: directBS, Cold: true, Direct: true},
		workloads.Spec{Kind: workloads.KindSeqRead, FileSize: directFileSize, BlockSize: directBS, Cold: true})
	if err != nil {
		return err
	}
	defer closeFiles()
	bs := fmt.Sprintf("--bs=%d", directBS)
	runs := []*workloadRun{
		{args: []string{workloads.KindSeqRead, bs, "--direct"}, file: files[0]},
		{args: []string{workloads.KindSeqRead, bs}, file: files[1]},
	}
	recs, sum, hooks, err := traceWorkloads(tracer.Options{All: true}, runs)
	if err != nil {
		return err
	}
	views := make([]*demoRun, len(runs))
	wrecs := make([]*workloadRecord, len(runs))
	for i, r := range runs {
		wrecs[i] = r.record(recs, sum, r.file.cachedNow())
		views[i] = &demoRun{stats: callStatsOf(fileRecords(recs, r.file.dev, r.file.ino)), rec: wrecs[i]}
		if views[i].stats.Calls == 0 {
			return fmt.Errorf("saw no traced read of %s (lost events: %d): run `iopath doctor`", r.file.path, sum.LostEvents)
		}
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "iopath demo direct-vs-buffered: %s sequential reads of a cold %s file, with O_DIRECT vs through the page cache\n\n",
		human(directBS), human(directFileSize))
	fmt.Fprintf(w, "files: two fresh %s files in %s, %s on %s (disk %s, read_ahead_kb=%d), each dropped from the page cache\n",
		human(directFileSize), dir, fs.fsType, kernel.Dev(fs.dev), fs.disk, fs.readAheadKB)
	for i, r := range runs {
		fmt.Fprintf(w, "traced: iopath workload %s (pid %d, %s)\n", strings.Join(r.args, " "), r.pid, coldLine(wrecs[i]))
	}
	fmt.Fprintf(w, "hooks: vfs_read=%s, page_cache_add=%s, readahead=%s, block_rq_issue=%s, iowait=%s\n\n", mech(hooks, "vfs_read"),
		mech(hooks, "page_cache_add"), mech(hooks, "readahead"), mech(hooks, "block_rq_issue"), mech(hooks, "iowait"))
	fmt.Fprint(w, directTable(views[0], views[1]))
	fmt.Fprintln(w)
	fmt.Fprint(w, directWhy(views[0], views[1]))
	if sum.LostEvents > 0 {
		fmt.Fprintf(w, "\nwarning: %d events were lost; the numbers above may be incomplete\n", sum.LostEvents)
	}
	if f.json {
		demoJSON(w, recs, sum, wrecs)
	}
	return nil
}
