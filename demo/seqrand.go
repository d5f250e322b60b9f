package demo

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/workloads"
)

func init() {
	register(&Demo{Name: "seq-vs-rand", Run: runSeqRand,
		Short: "16 MiB in 4 KiB reads of a cold 64 MiB file, in order vs at random offsets: what readahead does"})
}

// Sizes of the seq-vs-rand demo, in bytes.
const (
	seqRandFileSize = 64 << 20 // each run's fresh file
	seqRandBS       = 4 << 10  // bytes per read
	seqRandBytes    = 16 << 20 // bytes read by each run
)

// CallStats sums what a run's calls on its file did, from their records.
type CallStats struct {
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

// CallStatsOf computes CallStats from a run's syscall records.
func CallStatsOf(calls []*record.Syscall) CallStats {
	var s CallStats
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
func (s *CallStats) meanDur() uint64 { return mean(s.DurNs) }

// quantileDur is the duration, in ns, at quantile q (0..1) of the calls.
func (s *CallStats) quantileDur(q float64) uint64 { return quantile(s.DurNs, q) }

// mean is the mean of xs (0 when empty).
func mean(xs []uint64) uint64 {
	var t uint64
	for _, x := range xs {
		t += x
	}
	return div(t, uint64(len(xs)))
}

// quantile is the value at quantile q (0..1) of sorted xs (0 when empty).
func quantile(sorted []uint64, q float64) uint64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
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
func raCell(s *CallStats) string {
	if s.RA == 0 {
		return "none"
	}
	return fmt.Sprintf("%d (%d sync, %d async), largest window %s", s.RA, s.RASync, s.RAAsync, render.Count(uint64(s.RAMaxPages), "page"))
}

// Run is what a demo shows of one traced workload run.
type Run struct {
	Stats CallStats        // from its syscall records (demos that stream every call)
	Rec   *record.Workload // from the summary, with the workload's report
}

// SeqRandTable is the seq-vs-rand comparison; every cell comes from the
// runs' records, summary and reports.
func SeqRandTable(seq, rnd *Run) string {
	row := func(name string, f func(r *Run) string) []string { return []string{name, f(seq), f(rnd)} }
	return demoTable([][]string{
		{"", "sequential", "random"},
		row("read calls", func(r *Run) string { return fmt.Sprint(r.Stats.Calls) }),
		row("bytes requested", func(r *Run) string { return render.Bytes(r.Stats.BytesReq) }),
		row("page-cache hits", func(r *Run) string {
			return fmt.Sprintf("%d of %d pages", r.Stats.Hits, r.Stats.PagesReq)
		}),
		row("pages added to the cache", func(r *Run) string { return fmt.Sprint(r.Stats.Added) }),
		row("readahead decisions", func(r *Run) string { return raCell(&r.Stats) }),
		row("disk requests", func(r *Run) string {
			return fmt.Sprintf("%d (%s)", r.Stats.Requests, render.Count(uint64(r.Stats.Bios), "bio"))
		}),
		row("average request size", func(r *Run) string {
			return render.Bytes(div(r.Stats.RequestBytes, uint64(r.Stats.Requests)))
		}),
		row("disk bytes read", func(r *Run) string { return render.Bytes(r.Stats.DiskBytes) }),
		row("calls that slept on IO", func(r *Run) string { return fmt.Sprint(r.Stats.Waited) }),
		row("time asleep on IO", func(r *Run) string { return render.Duration(r.Stats.BlockedNs) }),
		row("duration (workload)", func(r *Run) string { return render.Duration(uint64(r.Rec.Report.Runtime)) }),
		row("IOPS (workload)", func(r *Run) string { return fmt.Sprintf("%.0f", r.Rec.Report.IOPS) }),
	})
}

// SeqRandWhy explains the table with its own numbers.
func SeqRandWhy(seq, rnd *Run) string {
	var b strings.Builder
	s, r := &seq.Stats, &rnd.Stats
	fmt.Fprintf(&b, "Why: the same %s was asked for in %d-byte reads both times.\n", render.Bytes(s.BytesReq), seqRandBS)
	fmt.Fprintf(&b, "  In order, each read continued the previous one, so the kernel's readahead kept reading ahead\n")
	fmt.Fprintf(&b, "  (%d decisions, %d of them async, windows up to %s): the disk got %d requests averaging %s,\n",
		s.RA, s.RAAsync, render.Bytes(uint64(s.RAMaxPages)*4096), s.Requests, render.Bytes(div(s.RequestBytes, uint64(s.Requests))))
	fmt.Fprintf(&b, "  %.0f calls per request, and %d of %d pages were already cached when asked for; only %s slept (%s in all).\n",
		fdiv(float64(s.Calls), float64(s.Requests)), s.Hits, s.PagesReq, render.Count(uint64(s.Waited), "call"), render.Duration(s.BlockedNs))
	fmt.Fprintf(&b, "  At random offsets there was no pattern to follow: readahead windows averaged %.1f pages over %d decisions,\n",
		fdiv(float64(r.RAPages), float64(r.RA)), r.RA)
	fmt.Fprintf(&b, "  requests averaged %s, %d requests for %d calls; %d calls slept on the device (%s in all, %s each on average)\n",
		render.Bytes(div(r.RequestBytes, uint64(r.Requests))), r.Requests, r.Calls, r.Waited, render.Duration(r.BlockedNs), render.Duration(div(r.BlockedNs, uint64(r.Waited))))
	fmt.Fprintf(&b, "  and %d of %d pages were hits (pages an earlier random read had already brought in).\n", r.Hits, r.PagesReq)
	fmt.Fprintf(&b, "  So the sequential run did %.0f IOPS and the random one %.0f: %.1fx, for the same bytes requested;\n",
		seq.Rec.Report.IOPS, rnd.Rec.Report.IOPS, fdiv(seq.Rec.Report.IOPS, rnd.Rec.Report.IOPS))
	fmt.Fprintf(&b, "  the sequential run read %s from disk (readahead also read past the last page asked for), the random one %s.\n",
		render.Bytes(s.DiskBytes), render.Bytes(r.DiskBytes))
	return b.String()
}

func runSeqRand(o *Options) error {
	ws, err := setupFiles(o, "its reads never reach a disk",
		workloads.Spec{Kind: workloads.KindSeqRead, FileSize: seqRandFileSize, Cold: true},
		workloads.Spec{Kind: workloads.KindRandRead, FileSize: seqRandFileSize, Cold: true})
	if err != nil {
		return err
	}
	defer ws.close()
	files := ws.files
	count := fmt.Sprintf("--count=%d", seqRandBytes/seqRandBS)
	bs := fmt.Sprintf("--bs=%d", seqRandBS)
	runs := []*session.WorkloadRun{
		{Args: []string{workloads.KindSeqRead, bs, count}, File: files[0]},
		{Args: []string{workloads.KindRandRead, bs, count}, File: files[1]},
	}
	tr, res, err := traceWorkloads(o, tracer.Options{All: true}, runs)
	if err != nil {
		return err
	}
	recs, sum, hooks := tr.recs, tr.sum, tr.hooks
	views, wrecs, err := runViews(tr, res, runs, false)
	if err != nil {
		return err
	}
	w := o.Out
	fmt.Fprintf(w, "iopath demo seq-vs-rand: %s in %s reads of a cold %s file, in order vs at random offsets\n\n",
		render.Bytes(seqRandBytes), render.Bytes(seqRandBS), render.Bytes(seqRandFileSize))
	fmt.Fprint(w, ws.coldFilesLine(seqRandFileSize))
	tracedLines(w, runs, wrecs)
	fmt.Fprintf(w, "hooks: vfs_read=%s, readahead=%s, block_rq_issue=%s\n\n", mech(hooks, "vfs_read"), mech(hooks, "readahead"), mech(hooks, "block_rq_issue"))
	fmt.Fprint(w, SeqRandTable(views[0], views[1]))
	fmt.Fprintln(w)
	fmt.Fprint(w, SeqRandWhy(views[0], views[1]))
	lostWarning(w, sum)
	if o.JSON {
		printJSON(w, recs, sum, wrecs)
	}
	return nil
}

// coldLine says how cold a run's file was when it started.
func coldLine(r *record.Workload) string {
	if r.Report == nil || r.Report.Cache == nil {
		return "file not dropped from the cache"
	}
	c := r.Report.Cache
	return fmt.Sprintf("%d of %d pages cached at start, %s", c.CachedPages, c.TotalPages, c.Method)
}
