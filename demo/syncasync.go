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
	register(&Demo{Name: "sync-vs-async", Run: runSyncAsync,
		Short: "the same 4 KiB random O_DIRECT writes with pwrite(2) and with libaio at iodepth 32: calls per request, requests at the device, IOPS, latency"})
}

// The sync-vs-async demo's writes (of queueBS bytes, on files of
// queueFileSize bytes).
const (
	syncAsyncCount = 4096 // writes per run: 16 MiB
	syncAsyncDepth = 32   // libaio's requests in flight
)

// latCell is a latency summary's mean and p99, or "—" when the engine has none.
func latCell(l *workloads.Latency) string {
	if l == nil {
		return "—"
	}
	return fmt.Sprintf("%s (p99 %s)", render.Duration(uint64(l.Mean)), render.Duration(uint64(l.P99)))
}

// SyncAsyncTable compares the runs; every cell is measured: the workload's
// own counts and latencies, the traced bios' issue and completion times.
func SyncAsyncTable(runs []*QueueRun) string {
	rows := [][]string{append([]string{""}, mapRuns(runs, func(r *QueueRun) string { return r.Label })...)}
	row := func(name string, f func(r *QueueRun) string) {
		rows = append(rows, append([]string{name}, mapRuns(runs, f)...))
	}
	row("writes (workload)", func(r *QueueRun) string { return fmt.Sprint(r.Rec.Report.Ops) })
	row("system calls (workload's count)", func(r *QueueRun) string { return r.syscallCell() })
	row("system calls per request", func(r *QueueRun) string { return fmt.Sprintf("%.2f", r.SyscallsPerRequest()) })
	row("calls traced on the file", func(r *QueueRun) string { return fmt.Sprint(r.TracedCalls) })
	row("device requests (traced bios)", func(r *QueueRun) string {
		return fmt.Sprintf("%d (%s)", r.Queue.Requests, render.Count(uint64(r.Queue.Bios), "bio"))
	})
	row("in flight at the device at issue", func(r *QueueRun) string {
		return fmt.Sprintf("mean %.1f, max %d", r.Queue.MeanAtIssue, r.Queue.MaxAtIssue)
	})
	row("time-averaged at the device", func(r *QueueRun) string { return fmt.Sprintf("%.1f", r.Queue.MeanAtDevice) })
	row("IOPS (workload)", func(r *QueueRun) string { return fmt.Sprintf("%.0f", r.Rec.Report.IOPS) })
	row("latency (workload: lat)", func(r *QueueRun) string { return latCell(&r.Rec.Report.Latency) })
	row("  submission (slat)", func(r *QueueRun) string { return latCell(r.Rec.Report.SubmitLatency) })
	row("  completion (clat)", func(r *QueueRun) string { return latCell(r.Rec.Report.CompletionLatency) })
	row("  at the device (D2C, traced)", func(r *QueueRun) string {
		return fmt.Sprintf("%s (p99 %s)", render.Duration(r.Queue.MeanD2CNs()), render.Duration(r.Queue.QuantileD2CNs(0.99)))
	})
	row("  before the device (Q2D, traced)", func(r *QueueRun) string { return render.Duration(r.Queue.MeanQ2DNs()) })
	return demoTable(rows)
}

// outsideNs is the part of the workload's mean latency that is neither
// at the device (D2C) nor before it in the block layer (Q2D): the system
// calls' own time, the completion's way back and the wait to be reaped, ns.
func outsideNs(r *QueueRun) uint64 {
	return sub(uint64(r.Rec.Report.Latency.Mean), r.Queue.MeanD2CNs()+r.Queue.MeanQ2DNs())
}

// mapRuns applies f to each run.
func mapRuns(runs []*QueueRun, f func(r *QueueRun) string) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}

// SyncAsyncWhy explains the table with its numbers: psync, libaio with
// one request per io_submit, libaio with batches.
func SyncAsyncWhy(runs []*QueueRun) string {
	var b strings.Builder
	p, a, bt := runs[0], runs[1], runs[2]
	pr, ar, br := p.Rec.Report, a.Rec.Report, bt.Rec.Report
	fmt.Fprintf(&b, "Why: with pwrite(2) the thread is inside the call until its request completes, so it never has two:\n")
	fmt.Fprintf(&b, "  %.2f system calls per request (iopath traced %d pwrite64 calls, each with its bio), and the device had\n",
		p.SyscallsPerRequest(), p.TracedCalls)
	fmt.Fprintf(&b, "  at most %d of its requests at once (mean %.1f at issue; busy %.0f%% of the time, the rest is the call's\n",
		p.Queue.MaxAtIssue, p.Queue.MeanAtIssue, 100*p.Queue.MeanAtDevice)
	fmt.Fprintf(&b, "  way in and out). Each write paid the whole round trip, %s on average, of which the device took %s (D2C):\n",
		render.Duration(uint64(pr.Latency.Mean)), render.Duration(p.Queue.MeanD2CNs()))
	fmt.Fprintf(&b, "  %.0f IOPS, about 1 / latency.\n", pr.IOPS)
	fmt.Fprintf(&b, "  libaio's io_submit(2) hands the kernel a request and returns: the workload kept up to %d in flight by its\n", ar.MaxInflight)
	fmt.Fprintf(&b, "  own count, and the device had up to %d of them when one was issued (%.1f averaged over time). Requests\n",
		a.Queue.MaxAtIssue, a.Queue.MeanAtDevice)
	fmt.Fprintf(&b, "  overlap, so IOPS went to %.0f (%.1fx) while each request took longer, %s instead of %s: it queues\n",
		ar.IOPS, fdiv(ar.IOPS, pr.IOPS), render.Duration(uint64(ar.Latency.Mean)), render.Duration(uint64(pr.Latency.Mean)))
	fmt.Fprintf(&b, "  behind the others at the device (D2C %s). Submitting is quick (slat %s); the wait is in clat (%s),\n",
		render.Duration(a.Queue.MeanD2CNs()), render.Duration(uint64(ar.SubmitLatency.Mean)), render.Duration(uint64(ar.CompletionLatency.Mean)))
	fmt.Fprintf(&b, "  and Little's law ties them: %.0f IOPS × %s = %.1f requests in flight on average.\n",
		ar.IOPS, render.Duration(uint64(ar.Latency.Mean)), ar.IOPS*ar.Latency.Mean/1e9)
	fmt.Fprintf(&b, "  Of those %s, %s were at the device (D2C) and %s before it (Q2D); the other %s a request\n",
		render.Duration(uint64(ar.Latency.Mean)), render.Duration(a.Queue.MeanD2CNs()), render.Duration(a.Queue.MeanQ2DNs()),
		render.Duration(outsideNs(a)))
	fmt.Fprintf(&b, "  was being submitted, or done and not yet reaped (interrupt, wake-up, io_getevents): so the device had\n")
	fmt.Fprintf(&b, "  %.0f/s × %s = %.1f of them on average (%.1f when one was issued), fewer than the workload's count.\n",
		a.Queue.DeviceIOPS(), render.Duration(a.Queue.MeanD2CNs()), a.Queue.MeanAtDevice, a.Queue.MeanAtIssue)
	fmt.Fprintf(&b, "  (%.0f/s is the device's rate: traced completions from the first issue to the last completion; the\n", a.Queue.DeviceIOPS())
	fmt.Fprintf(&b, "  %.0f IOPS above is the workload's, its writes over its whole run, submission and reaping included.)\n", ar.IOPS)
	fmt.Fprintf(&b, "  Asynchronous is not fewer system calls by itself: one request per io_submit (fio's default\n")
	fmt.Fprintf(&b, "  iodepth_batch_submit=1) and the io_getevents calls that reap them make %.2f calls per request.\n", a.SyscallsPerRequest())
	fmt.Fprintf(&b, "  Whole batches — %d requests per io_submit, and io_getevents waiting for %d completions\n", br.Batch, br.CompleteMin)
	fmt.Fprintf(&b, "  (--iodepth-batch %d --iodepth-complete-min %d) — made it %.2f (%s), at %.0f IOPS.\n",
		br.Batch, br.CompleteMin, bt.SyscallsPerRequest(), bt.syscallCell(), br.IOPS)
	fmt.Fprintf(&b, "  The price: a batch's bios wait in the task's plug until io_submit has queued them all (Q2D %s, vs %s),\n",
		render.Duration(bt.Queue.MeanQ2DNs()), render.Duration(a.Queue.MeanQ2DNs()))
	fmt.Fprintf(&b, "  a request's slat is the whole batch's submission (%s), its clat waits for the batch's last completion\n",
		render.Duration(uint64(br.SubmitLatency.Mean)))
	fmt.Fprintf(&b, "  (%s), and the device's queue drains before the next batch (%.1f at the device, averaged over time).\n",
		render.Duration(uint64(br.CompletionLatency.Mean)), bt.Queue.MeanAtDevice)
	b.WriteString(sourcesNote(runs))
	return b.String()
}

func runSyncAsync(o *Options) error {
	// One file per run, alike (the same size, the same seed: the same
	// offsets), so each run's workload record counts only its own calls.
	spec := workloads.Spec{Kind: workloads.KindRandWrite, FileSize: queueFileSize}
	ws, err := setupFiles(o, "its writes never reach a disk", spec, spec, spec)
	if err != nil {
		return err
	}
	defer ws.close()
	depth := fmt.Sprintf("--iodepth=%d", syncAsyncDepth)
	args := [][]string{
		{"--engine=psync"},
		{"--engine=libaio", depth},
		{"--engine=libaio", depth, fmt.Sprintf("--iodepth-batch=%d", syncAsyncDepth), fmt.Sprintf("--iodepth-complete-min=%d", syncAsyncDepth)},
	}
	labels := []string{"psync", fmt.Sprintf("libaio, iodepth %d", syncAsyncDepth), fmt.Sprintf("libaio, iodepth %d, batches", syncAsyncDepth)}
	var runs []*session.WorkloadRun
	for i, a := range args {
		runs = append(runs, &session.WorkloadRun{Args: queueArgs(workloads.KindRandWrite, syncAsyncCount, a...), File: ws.files[i]})
	}
	return runQueueDemo(o, ws, queueDemo{runs: runs, labels: labels, write: true, topts: tracer.Options{All: true},
		title: fmt.Sprintf("iopath demo sync-vs-async: %d random %s O_DIRECT writes, with pwrite(2) and with libaio at iodepth %d",
			syncAsyncCount, render.Bytes(queueBS), syncAsyncDepth),
		fileSize: queueFileSize, files: len(runs), hooks: []string{"vfs_write", "block_rq_issue", "block_rq_complete"},
		table: SyncAsyncTable, why: SyncAsyncWhy})
}
