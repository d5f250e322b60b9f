package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
	"github.com/spf13/cobra"
)

func init() {
	demos["seq-vs-rand"] = struct {
		short string
		run   func(cmd *cobra.Command, f *demoFlags, args []string) error
	}{"16 MiB in 4 KiB reads of a cold 64 MiB file, in order vs at random offsets: what readahead does", runDemoSeqRand}
}

// Sizes of the seq-vs-rand demo, in bytes.
const (
	seqRandFileSize = 64 << 20 // each run's fresh file
	seqRandBS       = 4 << 10  // bytes per read
	seqRandBytes    = 16 << 20 // bytes read by each run
)

// callStats sums what a run's calls on its file did, from their records.
type callStats struct {
	Calls    int
	BytesReq uint64 // bytes the calls requested
	// Page cache, in 4 KiB pages: requested = hit + missed; added includes readahead.
	PagesReq, Hits, Missed, Added uint64
	// Readahead decisions, and the largest window in pages.
	RA, RASync, RAAsync int
	RAPages             uint64 // window pages, summed
	RAMaxPages          uint32
	Bios                int    // bios the calls queued
	DiskBytes           uint64 // their bytes
	// Requests are the distinct device requests the bios went in (merged
	// bios share one), told apart by device and issue time; RequestBytes is
	// their total size in bytes.
	Requests     int
	RequestBytes uint64
	Waited       int      // calls that slept on IO (blocked_ns > 0)
	BlockedNs    uint64   // time the calls slept on IO, ns
	DurNs        []uint64 // each call's duration, ns, sorted
	D2CNs        uint64   // device time of the completed bios, ns, summed
	D2CBios      int      // bios with a completion
}

// callStatsOf computes callStats from a run's syscall records.
func callStatsOf(calls []*record.Syscall) callStats {
	var s callStats
	type rqKey struct {
		dev   string
		issue uint64
	}
	rqs := map[rqKey]bool{}
	for _, c := range calls {
		s.Calls++
		s.BytesReq += c.RequestedBytes
		s.PagesReq += c.Cache.PagesRequested
		s.Hits += c.Cache.PagesHit
		s.Missed += c.Cache.PagesMissed
		s.Added += c.Cache.PagesAdded
		for _, ra := range c.Cache.Readahead {
			s.RA++
			switch ra.Kind {
			case "sync":
				s.RASync++
			case "async":
				s.RAAsync++
			}
			s.RAPages += uint64(ra.Pages)
			s.RAMaxPages = max(s.RAMaxPages, ra.Pages)
		}
		for _, b := range c.Bios {
			s.Bios++
			s.DiskBytes += uint64(b.Bytes)
			if b.CompleteNs != 0 {
				s.D2CNs += b.D2CNs
				s.D2CBios++
			}
			if k := (rqKey{b.Dev, b.IssueNs}); b.IssueNs != 0 && !rqs[k] {
				rqs[k] = true
				s.Requests++
				s.RequestBytes += uint64(b.RequestBytes)
			}
		}
		if c.BlockedNs > 0 {
			s.Waited++
		}
		s.BlockedNs += c.BlockedNs
		s.DurNs = append(s.DurNs, c.DurationNs)
	}
	slices.Sort(s.DurNs)
	return s
}

// meanDur is the mean call duration in ns (0 without calls).
func (s *callStats) meanDur() uint64 {
	var t uint64
	for _, d := range s.DurNs {
		t += d
	}
	return div(t, uint64(len(s.DurNs)))
}

// quantileDur is the duration, in ns, at quantile q (0..1) of the calls.
func (s *callStats) quantileDur(q float64) uint64 {
	if len(s.DurNs) == 0 {
		return 0
	}
	return s.DurNs[min(len(s.DurNs)-1, int(q*float64(len(s.DurNs))))]
}

// div is a/b, 0 when b is 0.
func div(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// fdiv is a/b as a float, 0 when b is 0.
func fdiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// demoTable renders rows of cells as an aligned table, first row the header.
func demoTable(rows [][]string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 3, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	return b.String()
}

// raCell describes the readahead decisions of a run.
func raCell(s *callStats) string {
	if s.RA == 0 {
		return "none"
	}
	return fmt.Sprintf("%d (%d sync, %d async), largest window %s", s.RA, s.RASync, s.RAAsync, pl(uint64(s.RAMaxPages), "page"))
}

// demoRun is what a demo shows of one traced workload run.
type demoRun struct {
	stats callStats       // from its syscall records (demos that stream every call)
	rec   *workloadRecord // from the summary, with the workload's report
}

// seqRandTable is the seq-vs-rand comparison; every cell comes from the
// runs' records, summary and reports.
func seqRandTable(seq, rnd *demoRun) string {
	row := func(name string, f func(r *demoRun) string) []string { return []string{name, f(seq), f(rnd)} }
	return demoTable([][]string{
		{"", "sequential", "random"},
		row("read calls", func(r *demoRun) string { return fmt.Sprint(r.stats.Calls) }),
		row("bytes requested", func(r *demoRun) string { return human(r.stats.BytesReq) }),
		row("page-cache hits", func(r *demoRun) string {
			return fmt.Sprintf("%d of %d pages", r.stats.Hits, r.stats.PagesReq)
		}),
		row("pages added to the cache", func(r *demoRun) string { return fmt.Sprint(r.stats.Added) }),
		row("readahead decisions", func(r *demoRun) string { return raCell(&r.stats) }),
		row("disk requests", func(r *demoRun) string {
			return fmt.Sprintf("%d (%s)", r.stats.Requests, pl(uint64(r.stats.Bios), "bio"))
		}),
		row("average request size", func(r *demoRun) string {
			return human(div(r.stats.RequestBytes, uint64(r.stats.Requests)))
		}),
		row("disk bytes read", func(r *demoRun) string { return human(r.stats.DiskBytes) }),
		row("calls that slept on IO", func(r *demoRun) string { return fmt.Sprint(r.stats.Waited) }),
		row("time asleep on IO", func(r *demoRun) string { return dur(r.stats.BlockedNs) }),
		row("duration (workload)", func(r *demoRun) string { return dur(uint64(r.rec.Report.Runtime)) }),
		row("IOPS (workload)", func(r *demoRun) string { return fmt.Sprintf("%.0f", r.rec.Report.IOPS) }),
	})
}

// seqRandWhy explains the table with its own numbers.
func seqRandWhy(seq, rnd *demoRun) string {
	var b strings.Builder
	s, r := &seq.stats, &rnd.stats
	fmt.Fprintf(&b, "Why: the same %s was asked for in %d-byte reads both times.\n", human(s.BytesReq), seqRandBS)
	fmt.Fprintf(&b, "  In order, each read continued the previous one, so the kernel's readahead kept reading ahead\n")
	fmt.Fprintf(&b, "  (%d decisions, %d of them async, windows up to %s): the disk got %d requests averaging %s,\n",
		s.RA, s.RAAsync, human(uint64(s.RAMaxPages)*4096), s.Requests, human(div(s.RequestBytes, uint64(s.Requests))))
	fmt.Fprintf(&b, "  %.0f calls per request, and %d of %d pages were already cached when asked for; only %s slept (%s in all).\n",
		fdiv(float64(s.Calls), float64(s.Requests)), s.Hits, s.PagesReq, pl(uint64(s.Waited), "call"), dur(s.BlockedNs))
	fmt.Fprintf(&b, "  At random offsets there was no pattern to follow: readahead windows averaged %.1f pages over %d decisions,\n",
		fdiv(float64(r.RAPages), float64(r.RA)), r.RA)
	fmt.Fprintf(&b, "  requests averaged %s, %d requests for %d calls; %d calls slept on the device (%s in all, %s each on average)\n",
		human(div(r.RequestBytes, uint64(r.Requests))), r.Requests, r.Calls, r.Waited, dur(r.BlockedNs), dur(div(r.BlockedNs, uint64(r.Waited))))
	fmt.Fprintf(&b, "  and %d of %d pages were hits (pages an earlier random read had already brought in).\n", r.Hits, r.PagesReq)
	fmt.Fprintf(&b, "  So the sequential run did %.0f IOPS and the random one %.0f: %.1fx, for the same bytes requested;\n",
		seq.rec.Report.IOPS, rnd.rec.Report.IOPS, fdiv(seq.rec.Report.IOPS, rnd.rec.Report.IOPS))
	fmt.Fprintf(&b, "  the sequential run read %s from disk (readahead also read past the last page asked for), the random one %s.\n",
		human(s.DiskBytes), human(r.DiskBytes))
	return b.String()
}

func runDemoSeqRand(cmd *cobra.Command, f *demoFlags, _ []string) error {
	dir, fs, cleanup, err := demoSetup(f)
	if err != nil {
		return err
	}
	defer cleanup()
	files, closeFiles, err := demoFiles(dir, f.keep,
		workloads.Spec{Kind: workloads.KindSeqRead, FileSize: seqRandFileSize, Cold: true},
		workloads.Spec{Kind: workloads.KindRandRead, FileSize: seqRandFileSize, Cold: true})
	if err != nil {
		return err
	}
	defer closeFiles()
	count := fmt.Sprintf("--count=%d", seqRandBytes/seqRandBS)
	bs := fmt.Sprintf("--bs=%d", seqRandBS)
	runs := []*workloadRun{
		{args: []string{workloads.KindSeqRead, bs, count}, file: files[0]},
		{args: []string{workloads.KindRandRead, bs, count}, file: files[1]},
	}
	recs, sum, hooks, err := traceWorkloads(tracer.Options{All: true}, runs)
	if err != nil {
		return err
	}
	views := make([]*demoRun, len(runs))
	wrecs := make([]*workloadRecord, len(runs))
	for i, r := range runs {
		wrecs[i] = r.record(recs, sum, nil)
		views[i] = &demoRun{stats: callStatsOf(fileRecords(recs, r.file.dev, r.file.ino)), rec: wrecs[i]}
		if views[i].stats.Calls == 0 {
			return fmt.Errorf("saw no traced read of %s (lost events: %d): run `iopath doctor`", r.file.path, sum.LostEvents)
		}
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "iopath demo seq-vs-rand: %s in %s reads of a cold %s file, in order vs at random offsets\n\n",
		human(seqRandBytes), human(seqRandBS), human(seqRandFileSize))
	fmt.Fprintf(w, "files: two fresh %s files in %s, %s on %s (disk %s, read_ahead_kb=%d), each dropped from the page cache\n",
		human(seqRandFileSize), dir, fs.fsType, kernel.Dev(fs.dev), fs.disk, fs.readAheadKB)
	for i, r := range runs {
		fmt.Fprintf(w, "traced: iopath workload %s (pid %d, %s)\n", strings.Join(r.args, " "), r.pid, coldLine(wrecs[i]))
	}
	fmt.Fprintf(w, "hooks: vfs_read=%s, readahead=%s, block_rq_issue=%s\n\n", mech(hooks, "vfs_read"), mech(hooks, "readahead"), mech(hooks, "block_rq_issue"))
	fmt.Fprint(w, seqRandTable(views[0], views[1]))
	fmt.Fprintln(w)
	fmt.Fprint(w, seqRandWhy(views[0], views[1]))
	if sum.LostEvents > 0 {
		fmt.Fprintf(w, "\nwarning: %d events were lost; the numbers above may be incomplete\n", sum.LostEvents)
	}
	if f.json {
		demoJSON(w, recs, sum, wrecs)
	}
	return nil
}

// coldLine says how cold a run's file was when it started.
func coldLine(r *workloadRecord) string {
	if r.Report == nil || r.Report.Cache == nil {
		return "file not dropped from the cache"
	}
	c := r.Report.Cache
	return fmt.Sprintf("%d of %d pages cached at start, %s", c.CachedPages, c.TotalPages, c.Method)
}
