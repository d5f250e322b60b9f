package demo

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
)

// DeviceQueue is what one run's requests did at the device, from the issue
// and completion times (block_rq_issue, block_rq_complete) of the run's
// traced bios: how many of them the device had at once, and how long they
// took there. Only the run's own requests count: other processes' IO on
// the same disk is not in these numbers.
type DeviceQueue struct {
	Bios     int    // the run's bios
	Requests int    // the distinct requests they went in (merged bios count once)
	Bytes    uint64 // bytes of those requests
	// Incomplete: requests whose completion was not seen; they are left
	// out of everything below.
	Incomplete int
	// MeanAtIssue, MaxAtIssue: the run's requests in flight at the device
	// (issued, not yet completed) at the moment one of them was issued,
	// that one included; so a run that waits for each request before
	// issuing the next has 1 for both.
	MeanAtIssue float64
	MaxAtIssue  int
	// SpanNs is from the first issue to the last completion, ns.
	SpanNs uint64
	// MeanAtDevice is the time-averaged number of the run's requests at the
	// device over SpanNs: their summed device time over the span, which by
	// Little's law is the device's request rate × its mean D2C.
	MeanAtDevice float64
	D2CNs        []uint64 // device time (issue → completion) of each request, ns, sorted
	// Q2DNs sums each request's time from its first bio's queueing to its
	// issue (block layer: plug, scheduler), ns.
	Q2DNs uint64
}

// MeanD2CNs is the mean device time of the requests, ns (0 without any).
func (q *DeviceQueue) MeanD2CNs() uint64 { return mean(q.D2CNs) }

// MeanQ2DNs is the mean time a request spent in the block layer before
// its issue, ns.
func (q *DeviceQueue) MeanQ2DNs() uint64 { return div(q.Q2DNs, uint64(len(q.D2CNs))) }

// QuantileD2CNs is the device time at quantile p (0..1), ns.
func (q *DeviceQueue) QuantileD2CNs(p float64) uint64 { return quantile(q.D2CNs, p) }

// DeviceIOPS is the run's requests completed per second over SpanNs.
func (q *DeviceQueue) DeviceIOPS() float64 {
	return fdiv(float64(len(q.D2CNs))*1e9, float64(q.SpanNs))
}

// DeviceQueueOf computes a DeviceQueue from a run's bios. Bios of one
// request share its device and issue time; requests are told apart by them
// (as CallStats does).
func DeviceQueueOf(bios []record.Bio) DeviceQueue {
	var q DeviceQueue
	type rqKey struct {
		dev   string
		issue uint64
	}
	type rq struct {
		queue, issue, complete uint64
	}
	byKey := map[rqKey]*rq{}
	var rqs []*rq
	for i := range bios {
		b := &bios[i]
		q.Bios++
		if b.IssueNs == 0 {
			continue // never issued (a lost event): no request to count
		}
		k := rqKey{b.Dev, b.IssueNs}
		r := byKey[k]
		if r == nil {
			r = &rq{queue: b.QueueNs, issue: b.IssueNs, complete: b.CompleteNs}
			byKey[k] = r
			rqs = append(rqs, r)
			q.Bytes += uint64(b.RequestBytes)
		}
		if b.QueueNs != 0 && (r.queue == 0 || b.QueueNs < r.queue) {
			r.queue = b.QueueNs
		}
	}
	q.Requests = len(rqs)
	var issues, completes []uint64
	for _, r := range rqs {
		if r.complete < r.issue || r.complete == 0 {
			q.Incomplete++
			continue
		}
		issues = append(issues, r.issue)
		completes = append(completes, r.complete)
		q.D2CNs = append(q.D2CNs, r.complete-r.issue)
		q.Q2DNs += sub(r.issue, r.queue)
	}
	if len(issues) == 0 {
		return q
	}
	slices.Sort(issues)
	slices.Sort(completes)
	slices.Sort(q.D2CNs)
	// At each issue time t: requests issued at or before t, less those
	// completed at or before t (a completion at the same nanosecond as an
	// issue came first: the device had room for the new one).
	var sum, busy uint64
	c := 0
	for i, t := range issues {
		for c < len(completes) && completes[c] <= t {
			c++
		}
		n := i + 1 - c
		sum += uint64(n)
		q.MaxAtIssue = max(q.MaxAtIssue, n)
	}
	for _, d := range q.D2CNs {
		busy += d
	}
	q.MeanAtIssue = float64(sum) / float64(len(issues))
	q.SpanNs = completes[len(completes)-1] - issues[0]
	q.MeanAtDevice = fdiv(float64(busy), float64(q.SpanNs))
	return q
}

// sub is a-b, 0 when b is 0 or not before a.
func sub(a, b uint64) uint64 {
	if b == 0 || b > a {
		return 0
	}
	return a - b
}

// BioSources says where a run's bios were found: in its read/write call
// records (psync), in other records of its process that carry bios (a
// "request" record of libaio or io_uring), or among its unattributed bios
// (queued inside a system call iopath does not follow: io_submit without
// request tracing).
type BioSources struct {
	Calls, Requests, Unattributed int
}

// asyncSubmitCauses are the unattributed causes of bios an async engine's
// submission queued when iopath did not follow its requests: io_submit
// (x86-64 209) and io_uring_enter (426), by number or by name. Other
// system calls' bios (execve's page-ins, openat's metadata reads) are not
// the run's data IO.
var asyncSubmitCauses = map[string]bool{
	"syscall:209": true, "syscall:io_submit": true,
	"syscall:426": true, "syscall:io_uring_enter": true,
}

// runBios are the data bios of one workload run (pid) on its work file
// (dev, ino), in the direction of its IO (write: rwbs W; else R), from
// every source BioSources names. Records of the pid on other files (its
// binary, /proc) and unattributed bios of other system calls are not the
// run's: an exec's readahead would count as requests at the device.
func runBios(tr *traced, pid uint32, dev string, ino uint64, write bool) ([]record.Bio, BioSources) {
	dir := "R"
	if write {
		dir = "W"
	}
	var out []record.Bio
	var src BioSources
	take := func(bios []record.Bio, n *int) {
		for i := range bios {
			if b := &bios[i]; b.Bytes > 0 && strings.Contains(b.Rwbs, dir) && !strings.Contains(b.Rwbs, "M") {
				out = append(out, *b)
				*n++
			}
		}
	}
	for _, r := range tr.recs {
		switch c := r.(type) {
		case *record.Syscall:
			if c.Pid == pid && c.Dev == dev && c.Ino == ino && (record.IsRead(c.Syscall) || record.IsWrite(c.Syscall)) {
				take(c.Bios, &src.Calls)
			}
		case *record.Request:
			if c.Pid == pid && c.Dev == dev && c.Ino == ino {
				take(c.Bios, &src.Requests)
			}
		}
	}
	for i := range tr.unattr {
		if u := &tr.unattr[i]; u.pid == pid && asyncSubmitCauses[u.cause] {
			take([]record.Bio{u.bio}, &src.Unattributed)
		}
	}
	slices.SortFunc(out, func(a, b record.Bio) int { return cmp.Compare(a.IssueNs, b.IssueNs) })
	return out, src
}

// sourcesNote says where the runs' bios came from and whose the other
// numbers are.
func sourcesNote(runs []*QueueRun) string {
	var t BioSources
	for _, r := range runs {
		t.Calls += r.Sources.Calls
		t.Requests += r.Sources.Requests
		t.Unattributed += r.Sources.Unattributed
	}
	var p []string
	if t.Calls > 0 {
		p = append(p, fmt.Sprintf("%d in their pread64/pwrite64 records", t.Calls))
	}
	if t.Requests > 0 {
		p = append(p, fmt.Sprintf("%d in their request records", t.Requests))
	}
	if t.Unattributed > 0 {
		p = append(p, fmt.Sprintf("%d among their unattributed bios (queued inside io_submit, not followed per request here)", t.Unattributed))
	}
	return fmt.Sprintf("  (The runs' bios, picked by pid: %s. System calls, IOPS and latency are the workloads' own numbers.)\n",
		strings.Join(p, ", "))
}

// writtenFileLine is the "files:" line of a queue-depth demo: n files of
// size bytes written with data and synced before the trace, so that their
// O_DIRECT IO needs no block allocation, and their disk's request queue.
func (ws *workSet) writtenFileLine(size int64, n int) string {
	what := fmt.Sprintf("a %s file", render.Bytes(uint64(size)))
	if n > 1 {
		what = fmt.Sprintf("%d %s files, one per run,", n, render.Bytes(uint64(size)))
	}
	return fmt.Sprintf("files: %s in %s, written with data and synced before the trace, %s on %s (disk %s: %s)\n",
		what, ws.dir, ws.fs.Type, kernel.Dev(ws.fs.Dev), ws.fs.Disk, diskQueue(ws.fs.Disk))
}

// diskQueue describes a disk's request queue from sysfs: its IO scheduler
// and nr_requests (a partition's are its disk's).
func diskQueue(disk string) string {
	read := func(name string) string {
		for _, d := range []string{"/sys/class/block/" + disk + "/queue/", "/sys/class/block/" + disk + "/../queue/"} {
			if b, err := os.ReadFile(d + name); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
		return "unavailable"
	}
	sched := read("scheduler")
	if i, j := strings.IndexByte(sched, '['), strings.IndexByte(sched, ']'); i >= 0 && j > i {
		sched = sched[i+1 : j]
	}
	return fmt.Sprintf("scheduler %s, nr_requests %s, write cache %s", sched, read("nr_requests"), read("write_cache"))
}

// queueDemo is what a queue-depth demo runs and prints.
type queueDemo struct {
	runs     []*session.WorkloadRun
	labels   []string
	write    bool           // the runs write (their bios are W), else read
	topts    tracer.Options // the tracer's options
	title    string         // the first line
	fileSize int64          // bytes of each run's file
	files    int            // how many files the runs use
	hooks    []string       // the hooks whose mechanism the "hooks:" line names
	table    func([]*QueueRun) string
	why      func([]*QueueRun) string
}

// runQueueDemo traces a queue-depth demo's runs and prints its title,
// files, runs, hooks, table and explanation (and, with --json, the records).
func runQueueDemo(o *Options, ws *workSet, d queueDemo) error {
	tr, res, err := traceWorkloads(o, d.topts, d.runs)
	if err != nil {
		return err
	}
	qruns, wrecs, err := queueRuns(tr, res, d.runs, d.labels, d.write)
	if err != nil {
		return err
	}
	w := o.Out
	fmt.Fprintf(w, "%s\n\n", d.title)
	fmt.Fprint(w, ws.writtenFileLine(d.fileSize, d.files))
	tracedLines(w, d.runs, wrecs)
	var hooks []string
	for _, h := range d.hooks {
		hooks = append(hooks, h+"="+mech(tr.hooks, h))
	}
	fmt.Fprintf(w, "hooks: %s\n\n", strings.Join(hooks, ", "))
	fmt.Fprint(w, d.table(qruns))
	fmt.Fprintln(w)
	fmt.Fprint(w, d.why(qruns))
	lostWarning(w, tr.sum)
	if o.JSON {
		printJSON(w, tr.recs, tr.sum, wrecs)
	}
	return nil
}
