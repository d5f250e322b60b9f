package demo

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/workloads"
)

func init() {
	register(&Demo{Name: "iodepth", Run: runIODepth,
		Short: "4 KiB random O_DIRECT reads with libaio at iodepth 1 to 64: IOPS, requests at the device, latency, Little's law"})
}

// ioDepthCount is the reads per depth (of queueBS bytes: 32 MiB, on a
// file of queueFileSize bytes).
const ioDepthCount = 8192

// ioDepths are the depths of the sweep, doubling.
var ioDepths = []int{1, 2, 4, 8, 16, 32, 64}

// IODepthTable has a row per depth; every cell is measured: IOPS and
// latency by the workload, the rest from the traced bios.
func IODepthTable(runs []*QueueRun) string {
	rows := [][]string{{"iodepth", "IOPS", "latency (lat)", "p99", "at the device at issue", "time-averaged", "D2C", "Q2D", "IOPS × lat"}}
	for _, r := range runs {
		rep, q := r.Rec.Report, &r.Queue
		rows = append(rows, []string{fmt.Sprint(rep.IODepth), fmt.Sprintf("%.0f", rep.IOPS),
			render.Duration(uint64(rep.Latency.Mean)), render.Duration(uint64(rep.Latency.P99)),
			fmt.Sprintf("mean %.1f, max %d", q.MeanAtIssue, q.MaxAtIssue), fmt.Sprintf("%.1f", q.MeanAtDevice),
			render.Duration(q.MeanD2CNs()), render.Duration(q.MeanQ2DNs()), fmt.Sprintf("%.1f", littleL(r))})
	}
	return demoTable(rows)
}

// littleL is Little's law's L = λ·W from the workload's own numbers: IOPS
// × mean latency, the requests it had in flight on average.
func littleL(r *QueueRun) float64 { return r.Rec.Report.IOPS * r.Rec.Report.Latency.Mean / 1e9 }

// IODepthKnee is the index of the depth from which on every doubling
// made latency grow by a larger factor than IOPS: where IOPS stops growing
// and latency grows instead (Little's law: the two factors multiply to
// about 2 per doubling). -1: the last doubling still gained more IOPS than
// latency.
func IODepthKnee(runs []*QueueRun) int {
	k := -1
	for i := len(runs) - 1; i >= 1; i-- {
		a, z := runs[i-1].Rec.Report, runs[i].Rec.Report
		if fdiv(z.IOPS, a.IOPS) >= fdiv(z.Latency.Mean, a.Latency.Mean) {
			break
		}
		k = i
	}
	return k
}

// IODepthWhy explains the sweep in words with its numbers.
func IODepthWhy(runs []*QueueRun) string {
	var b strings.Builder
	first, last := runs[0], runs[len(runs)-1]
	f, l := first.Rec.Report, last.Rec.Report
	fmt.Fprintf(&b, "Why: at iodepth %d the workload waits for each read before it sends the next: the device had %s\n", f.IODepth, atATime(first.Queue.MaxAtIssue))
	fmt.Fprintf(&b, "  at a time, and %.0f IOPS is 1 / %s, the latency of one read.\n", f.IOPS, render.Duration(uint64(f.Latency.Mean)))
	k := IODepthKnee(runs)
	grow := runs
	if k > 0 {
		grow = runs[:k]
	}
	if len(grow) > 1 {
		g := grow[len(grow)-1].Rec.Report
		if dips := iopsDips(grow); dips != "" {
			fmt.Fprintf(&b, "  From iodepth %d to %d more requests in flight meant more IOPS overall (%.0f, %.1fx), though not at every\n",
				f.IODepth, g.IODepth, g.IOPS, fdiv(g.IOPS, f.IOPS))
			fmt.Fprintf(&b, "  doubling (%s), for a latency that %s\n", dips, latencyChange(f.Latency.Mean, g.Latency.Mean))
		} else {
			fmt.Fprintf(&b, "  Up to iodepth %d more requests in flight meant more IOPS (%.0f, %.1fx) for a latency that %s\n",
				g.IODepth, g.IOPS, fdiv(g.IOPS, f.IOPS), latencyChange(f.Latency.Mean, g.Latency.Mean))
		}
		fmt.Fprintf(&b, "  (%s): the device served requests side by side (time-averaged %.1f of them at the device).\n",
			render.Duration(uint64(g.Latency.Mean)), grow[len(grow)-1].Queue.MeanAtDevice)
	}
	if k > 0 {
		a := runs[k-1].Rec.Report
		fmt.Fprintf(&b, "  From iodepth %d on, each doubling made latency grow more than IOPS: IOPS went from %.0f to %.0f (%.2fx),\n",
			a.IODepth, a.IOPS, l.IOPS, fdiv(l.IOPS, a.IOPS))
		fmt.Fprintf(&b, "  latency from %s to %s (%.1fx). The device was saturated: a request added to the queue mostly waits.\n",
			render.Duration(uint64(a.Latency.Mean)), render.Duration(uint64(l.Latency.Mean)), fdiv(l.Latency.Mean, a.Latency.Mean))
	} else {
		fmt.Fprintf(&b, "  At the last doubling, to iodepth %d, IOPS still grew more than latency: this device did not saturate here.\n", l.IODepth)
	}
	fmt.Fprintf(&b, "  Little's law: requests in flight = throughput × time each spends in flight (L = λW). At iodepth %d the\n", l.IODepth)
	fmt.Fprintf(&b, "  workload measured %.0f IOPS × %s = %.1f in flight on average of the %d it keeps; so once λ stops\n",
		l.IOPS, render.Duration(uint64(l.Latency.Mean)), littleL(last), l.IODepth)
	fmt.Fprintf(&b, "  growing, W = L / λ grows with every request added. Where the time went: D2C (at the device) %s → %s,\n",
		render.Duration(first.Queue.MeanD2CNs()), render.Duration(last.Queue.MeanD2CNs()))
	fmt.Fprintf(&b, "  Q2D (block layer, before the device) %s → %s from iodepth %d to %d; the device had %.1f of the\n",
		render.Duration(first.Queue.MeanQ2DNs()), render.Duration(last.Queue.MeanQ2DNs()), f.IODepth, l.IODepth, last.Queue.MeanAtDevice)
	fmt.Fprintf(&b, "  workload's requests on average (its IOPS × D2C; %.1f when one was issued, at most %d), the rest\n",
		last.Queue.MeanAtIssue, last.Queue.MaxAtIssue)
	fmt.Fprintf(&b, "  (%s of each request's latency) were being submitted or were done and not yet reaped.\n", render.Duration(outsideNs(last)))
	b.WriteString(sourcesNote(runs))
	return b.String()
}

// atATime is "1 request" or "N requests".
func atATime(n int) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// latencyChange says how mean latency went from a to z (ns): "grew 2.0x",
// "fell to 0.6x", or "stayed the same" (within 5%).
func latencyChange(a, z float64) string {
	r := fdiv(z, a)
	switch {
	case r > 1.05:
		return fmt.Sprintf("grew %.1fx", r)
	case r < 0.95:
		return fmt.Sprintf("fell to %.1fx", r)
	}
	return fmt.Sprintf("stayed about the same (%.2fx)", r)
}

// iopsDips lists the doublings of runs at which IOPS fell instead of
// growing ("IOPS fell from 41000 at iodepth 4 to 39000 at iodepth 8"), ""
// when it grew at every one: a sweep that is not monotonic must not be
// told as if each added request had paid.
func iopsDips(runs []*QueueRun) string {
	var p []string
	for i := 1; i < len(runs); i++ {
		a, z := runs[i-1].Rec.Report, runs[i].Rec.Report
		if z.IOPS < a.IOPS {
			p = append(p, fmt.Sprintf("IOPS fell from %.0f at iodepth %d to %.0f at iodepth %d", a.IOPS, a.IODepth, z.IOPS, z.IODepth))
		}
	}
	return strings.Join(p, "; ")
}

func runIODepth(o *Options) error {
	ws, err := setupFiles(o, "its reads never reach a disk",
		workloads.Spec{Kind: workloads.KindRandRead, FileSize: queueFileSize})
	if err != nil {
		return err
	}
	defer ws.close()
	var runs []*session.WorkloadRun
	var labels []string
	for _, d := range ioDepths {
		runs = append(runs, &session.WorkloadRun{File: ws.files[0],
			Args: queueArgs(workloads.KindRandRead, ioDepthCount, "--engine=libaio", fmt.Sprintf("--iodepth=%d", d))})
		labels = append(labels, fmt.Sprintf("iodepth %d", d))
	}
	return runQueueDemo(o, ws, queueDemo{runs: runs, labels: labels,
		title: fmt.Sprintf("iopath demo iodepth: %d random %s O_DIRECT reads with libaio at each iodepth from %d to %d",
			ioDepthCount, render.Bytes(queueBS), ioDepths[0], ioDepths[len(ioDepths)-1]),
		fileSize: queueFileSize, files: 1, hooks: []string{"block_bio_queue", "block_rq_issue", "block_rq_complete"},
		table: IODepthTable, why: IODepthWhy})
}
