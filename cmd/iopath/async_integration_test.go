package main

// Privileged integration tests of asynchronous requests (issue 13): the
// built-in workload's libaio engine traced on this machine's kernel, on a
// cold file, filtered by the workload's pid and file.

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// asyncRun traces `iopath workload rand-read` with the given flags and
// returns its requests on the workload's file, the pid's totals and the
// workload record. It skips where the kernel lacks the hooks the flags need
// (VM kernels: io_uring's events before 5.19; the iocb markers).
func asyncRun(t *testing.T, flags ...string) ([]record.Request, asyncTotals, *workloadRecord) {
	t.Helper()
	reqs, tot, wr, _ := asyncTrace(t, nil, flags...)
	return reqs, tot, wr
}

// asyncTrace is asyncRun with trace flags (before --workload); it also
// checks the workload's libaio / io_uring call records against its requests
// (checkAsyncCalls) and returns them.
func asyncTrace(t *testing.T, traceFlags []string, flags ...string) ([]record.Request, asyncTotals, *workloadRecord, []record.AsyncCall) {
	t.Helper()
	needRoot(t)
	return asyncTraceIn(t, diskDir(t), traceFlags, flags...)
}

// asyncTraceIn is asyncTrace with the workload's file in directory tmp.
func asyncTraceIn(t *testing.T, tmp string, traceFlags []string, flags ...string) ([]record.Request, asyncTotals, *workloadRecord, []record.AsyncCall) {
	t.Helper()
	args := append(append([]string{"trace", "--json"}, traceFlags...), "--workload", "rand-read", "--", "--cold", "--size", "16m")
	_, tr, wrs := runJSON(t, tmp, append(args, flags...)...)
	if why := missingAsyncHooks(tr.summary.Attach, flags); why != "" {
		t.Skip(why)
	}
	if len(wrs) != 1 || wrs[0].Report == nil {
		t.Fatalf("want 1 workload record with its report, got %d", len(wrs))
	}
	wr := wrs[0]
	var reqs []record.Request
	for _, q := range tr.requests {
		if q.Pid != wr.Pid {
			continue // other processes do IO on this machine
		}
		if q.Ino != wr.Ino || q.Dev != wr.Dev {
			t.Errorf("a request on another file (dev %s ino %d): %+v", q.Dev, q.Ino, q)
			continue
		}
		reqs = append(reqs, q)
	}
	for _, ps := range tr.summary.Pids {
		if ps.Pid == wr.Pid && strings.HasPrefix(ps.Comm, "iou-") {
			t.Errorf("pid %d's summary row is named after an io thread: %q", ps.Pid, ps.Comm)
		}
	}
	var calls []record.AsyncCall
	for _, c := range tr.async {
		if c.Pid == wr.Pid {
			calls = append(calls, c)
		}
	}
	checkAsyncCalls(t, reqs, calls, slices.Contains(traceFlags, "--all"), unsparedExits(tr.summary))
	logLosses(t, tr.summary)
	tot := asyncTotals{Totals: pidTotals(t, tr.summary, wr.Pid)}
	// The run's kernel count (the report's kernel_io) starts after the
	// workload process's exec and the data file's preparation and ends
	// after its last reap: what its execve read (a cold iopath binary, the
	// execve record's bios) and what it read before its first request or
	// after its last completion are not the run's requests'.
	before, after, missed := outsideReads(t, tr, wr.Pid, reqs)
	tot.DiskBytesRead -= min(tot.DiskBytesRead, execBytes(tr, wr.Pid)+before+after)
	tot.PagesMissed -= min(tot.PagesMissed, missed)
	tot.tail = after
	tot.skipped = tr.summary.MissedRuns["tp_block_bio_queue"] + tr.summary.MissedRuns["tp_block_bio_queue_q"]
	return reqs, tot, wr, calls
}

// asyncTotals are the workload process's totals (disk_bytes_read without
// what it read outside its requests' span: outsideReads) and tail, the
// bytes it read after its last request completed, which the kernel's count
// of the run may hold (reaping, before the count ends) or not (reporting).
type asyncTotals struct {
	record.Totals
	tail uint64
	// skipped: block_bio_queue runs the kernel skipped and no spare took
	// (missed_runs, 7.2 in its 1-vCPU VM): each is a bio no record has,
	// counted there. A request may lack its bio only within this count.
	skipped uint64
}

// lostBio counts a direct request without its bio (lost) and says whether
// that is within the bio_queue runs the kernel skipped (tot.skipped).
func (tot asyncTotals) lostBio(t *testing.T, q record.Request, lost *uint64) bool {
	t.Helper()
	if len(q.Bios) != 0 {
		return false
	}
	if *lost++; *lost <= tot.skipped {
		t.Logf("request %d has no bio: %d of %d block_bio_queue runs skipped", q.OpID, *lost, tot.skipped)
		return true
	}
	return false
}

// execBytes sums the bios of pid's execve records.
func execBytes(tr *traced, pid uint32) uint64 {
	var n uint64
	for _, c := range tr.calls {
		if c.Pid == pid && c.Syscall == "execve" {
			for _, b := range c.Bios {
				n += uint64(b.Bytes)
			}
		}
	}
	return n
}

// outsideReads sums the disk reads of pid's system-call and fault records
// (execve excepted) that began before its first request's submission
// (the workload's start, the data file's creation) and after its last
// request's completion (reaping, the report). Why: CI's fresh machine
// (2026-12-07) attributed 20480 bytes more than the 200 requests' to
// TestTraceUringWorkers/sqpoll-direct's process, the kernel's count of the
// run being exactly the requests' 819200; reproduced here with a partly
// evicted test binary: read-around faults on the binary 16 ms after the
// first request, while the workload wrote its report (5 pages, 20480
// bytes). Every such record is logged, and so are those during the run
// (kept in the totals).
//
// missed is the page-cache misses of the read calls among them (a cold
// page of the test binary read by pread64 before the first request: a
// fresh-clone run, 2026-12-07, 292 pages missed in the totals, 291 by the
// requests).
func outsideReads(t *testing.T, tr *traced, pid uint32, reqs []record.Request) (before, after, missed uint64) {
	t.Helper()
	first, last := uint64(math.MaxUint64), uint64(0)
	for _, q := range reqs {
		first, last = min(first, q.SubmitNs), max(last, q.CompleteNs)
	}
	add := func(what string, at uint64, bios []record.Bio) {
		var b uint64
		for _, bio := range bios {
			if strings.HasPrefix(bio.Rwbs, "R") {
				b += uint64(bio.Bytes)
			}
		}
		switch {
		case b == 0:
		case at < first:
			t.Logf("before the first request: %s read %d bytes from disk", what, b)
			before += b
		case at > last:
			t.Logf("after the last request: %s read %d bytes from disk", what, b)
			after += b
		default:
			t.Logf("during the run, not a request: %s read %d bytes from disk", what, b)
		}
	}
	for _, c := range tr.calls {
		if c.Pid == pid && c.Syscall != "execve" {
			add(fmt.Sprintf("%s() %s", c.Syscall, c.Path), c.TimeNs, c.Bios)
			if (c.TimeNs < first || c.TimeNs > last) && record.ClassOf(c.Syscall) == record.ClassRead {
				missed += c.Cache.PagesMissed
			}
		}
	}
	for _, f := range tr.faults {
		if f.Pid == pid {
			add("a fault on "+f.Path, f.TimeNs, f.Bios)
		}
	}
	return before, after, missed
}

// checkAsyncCalls checks a run's submission calls against its requests:
// each call record once; each request that touched the disk (all of them
// with all) names a call record of its pid by submit_op_id, and a call
// record's "submitted" is the number of requests naming it (iocbs io_submit
// processed but refused excepted). With all, every request was reaped by
// exactly one io_getevents record (libaio).
func checkAsyncCalls(t *testing.T, reqs []record.Request, calls []record.AsyncCall, all bool, unspared uint64) {
	t.Helper()
	missing := map[uint64]bool{} // calls named by requests, without a record
	byID := map[uint64]*record.AsyncCall{}
	reaped := map[uint64]int{}
	getevents := 0
	for i := range calls {
		c := &calls[i]
		switch c.Syscall {
		case "io_submit", "io_uring_enter":
			if byID[c.OpID] != nil {
				t.Errorf("call op_id %d twice", c.OpID)
			}
			byID[c.OpID] = c
		case "io_getevents":
			getevents++
			for _, id := range c.ReapedOpIDs {
				reaped[id]++
			}
		}
	}
	named := map[uint64]uint32{}
	for _, q := range reqs {
		if q.SubmitOpID == 0 || slices.Contains(q.Unavailable, "submit_op_id") {
			continue // SQPOLL
		}
		named[q.SubmitOpID]++
		if byID[q.SubmitOpID] == nil && (all || q.TouchedDisk()) {
			missing[q.SubmitOpID] = true
		}
		if all && q.Engine == record.EngineLibaio && reaped[q.OpID] != 1 {
			t.Errorf("request %d reaped by %d io_getevents records", q.OpID, reaped[q.OpID])
		}
	}
	// A call's record is lost only with its sys_exit run, which the
	// kernel skipped (7.2 under load: missed_runs) and no spare took: up
	// to that many may be missing, counted (a 7.2 VM beside three others
	// lost 2 of 400 io_uring_enter records, 277 runs skipped, 2026-12-07).
	if uint64(len(missing)) > unspared {
		t.Errorf("%d requests' calls without a record (%v); sys_exit runs skipped and not taken by a spare: %d", len(missing), missing, unspared)
	} else if len(missing) > 0 {
		t.Logf("%d calls without a record, within the %d sys_exit runs the kernel skipped and no spare took", len(missing), unspared)
	}
	submitting := 0
	for id, c := range byID {
		if c.Submitted > 0 {
			submitting++
		}
		if c.Error == "" && c.Submitted != named[id] {
			t.Errorf("%s op %d: submitted %d, %d requests name it", c.Syscall, id, c.Submitted, named[id])
		}
		if c.DurationNs == 0 || c.TimeNs == 0 {
			t.Errorf("call without its times: %+v", c)
		}
	}
	if len(named) > 0 && submitting == 0 { // (SQPOLL: the requests name no call)
		t.Errorf("%d requests, no submission call record", len(reqs))
	}
	t.Logf("%d submission call records for %d requests, %d io_getevents records", submitting, len(reqs), getevents)
}

// unsparedExits is how many raw_sys_exit runs the kernel skipped that no
// spare took (missed_runs less the spare's takeovers): a bound on the
// call records lost that way.
func unsparedExits(s *record.Summary) uint64 {
	return s.MissedRuns["raw_sys_exit"] - min(s.MissedRuns["raw_sys_exit"], s.Diagnostics["spare_sys_exit"])
}

// With --all, every libaio and io_uring call of the workload has its
// record: submitted matches the requests, io_getevents names each request
// it reaped.
func TestTraceAsyncCallsAll(t *testing.T) {
	for _, engine := range []string{"libaio", "io_uring"} {
		t.Run(engine, func(t *testing.T) {
			reqs, _, _, calls := asyncTrace(t, []string{"--all"}, "--direct", "--engine", engine, "--iodepth", "16", "--iodepth-batch", "8", "--count", "200")
			if len(reqs) != 200 || len(calls) == 0 {
				t.Errorf("%d requests, %d call records", len(reqs), len(calls))
			}
		})
	}
}

// missingAsyncHooks says which hook a run with these workload flags needs
// that this kernel did not attach ("" if none).
func missingAsyncHooks(attach map[string]string, flags []string) string {
	has := func(f string) bool { return slices.Contains(flags, f) }
	batch := slices.Contains(flags, "--iodepth-batch") && !slices.Contains(flags, "1")
	switch {
	case has("io_uring") && attach["io_uring"] == "none":
		return "this kernel's io_uring events have no hooked shape (io_uring: none)"
	case has("--uring-async") && has("--direct") && attach["io_uring_dio"] == "none":
		// 6.1: the file is taken at submission, so a punted direct read
		// fires no event in the worker before its CQE's task work.
		return "no event names a worker's direct IO (io_uring_dio: none)"
	case has("--uring-link") && has("--direct") && attach["io_uring_dio"] == "none":
		// 6.1: a chained request's direct IO begins after its submission
		// with no event naming it (its bios are counted unattributed).
		return "no event names a linked request's direct IO (io_uring_dio: none)"
	case has("libaio") && attach["libaio"] == "none":
		return "libaio: none"
	case has("libaio") && batch && attach["aio_iocb"] == "none" && has("--direct") && attach["aio_dio"] == "none":
		return "no marker of direct iocbs (aio_iocb and aio_dio: none)"
	case has("libaio") && batch && attach["aio_iocb"] == "none" && !has("--direct") && attach["readahead"] != "tp_btf":
		return "no marker of buffered iocbs (aio_iocb: none, readahead not from its tracepoints)"
	}
	return ""
}

// checkKernelRead compares the disk bytes iopath attributed to the workload
// with the kernel's accounting of its thread or, for io_uring, its process
// (kernel_io: /proc/thread-self/io or /proc/self/io, read_bytes over the
// run; it may also count tot.tail): equal within one readahead window (the larger
// of the one seen and the device's read_ahead_kb: the VM kernels' counts
// exceed iopath's by a few pages on direct runs, seen on 6.1 and 6.12).
func checkKernelRead(t *testing.T, tot asyncTotals, wr *workloadRecord, window uint64) {
	t.Helper()
	k := wr.Report.Kernel
	if k == nil {
		t.Fatalf("the workload report has no kernel IO accounting")
	}
	if b, err := os.ReadFile("/sys/class/bdi/" + wr.Dev + "/read_ahead_kb"); err == nil {
		if kb, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			window = max(window, kb<<10)
		}
	}
	got, want := tot.DiskBytesRead, uint64(k.ReadBytes)
	if got+tot.tail+window+tot.skipped*max(window, 4096) < want || got > want+window {
		t.Errorf("disk bytes read attributed to pid %d: %d (and %d after its last request); the kernel says %d (allowed difference %d)", wr.Pid, got, tot.tail, want, window)
	}
	t.Logf("disk bytes read: iopath %d, kernel read_bytes %d", got, want)
}

// O_DIRECT 4 KiB random reads at iodepth 16: one request per read with
// exactly its 4 KiB bio, nothing unattributed, and requests overlapping at
// the device (16 at most). With --iodepth-batch 8, io_submit passes 8
// iocbs at once: iomap_dio_rw_begin tells them apart.
func TestTraceLibaioDirect(t *testing.T) {
	for _, batch := range []string{"1", "8"} {
		t.Run("batch"+batch, func(t *testing.T) { libaioDirect(t, batch) })
	}
}

func libaioDirect(t *testing.T, batch string) {
	const n = 400
	reqs, tot, wr := asyncRun(t, "--direct", "--engine", "libaio", "--iodepth", "16", "--iodepth-batch", batch, "--count", "400")
	if len(reqs) != n {
		t.Errorf("%d request records for %d reads", len(reqs), n)
	}
	ids := map[uint64]bool{}
	var maxInflight uint32
	unseen := 0
	var lost uint64
	for _, q := range reqs {
		if ids[q.OpID] {
			t.Errorf("op_id %d twice", q.OpID)
		}
		ids[q.OpID] = true
		var bytes uint32
		for _, b := range q.Bios {
			bytes += b.Bytes
		}
		if q.Engine != record.EngineLibaio || q.Op != "read" || !q.Direct || q.Worker != record.WorkerInline ||
			((len(q.Bios) != 1 || bytes != 4096) && !tot.lostBio(t, q, &lost)) || q.Result != (record.Result{Bytes: 4096, Known: true}) ||
			q.SubmitOpID == 0 || q.SubmitNs == 0 || !directTimes(q) || q.RequestedBytes != 4096 {
			t.Errorf("request %+v", q)
		}
		if q.CompleteNs == 0 {
			unseen++
		}
		maxInflight = max(maxInflight, q.InflightAtIssue)
	}
	if maxInflight <= 1 || maxInflight > 16 {
		t.Errorf("max inflight_at_issue %d, want 2..16", maxInflight)
	}
	if tot.Unattributed != 0 || tot.Requests != n || tot.ReadRequests != n {
		t.Errorf("pid totals: %d unattributed bios, %d requests (%d reads)", tot.Unattributed, tot.Requests, tot.ReadRequests)
	}
	checkKernelRead(t, tot, wr, 0)
	t.Logf("%d requests, max inflight_at_issue %d, %d with their bio's completion unseen", len(reqs), maxInflight, unseen)
}

// directTimes says whether a libaio direct request's times hold: completed
// between its submission and its reap or, where no BPF program saw its
// bio's completion (docs/kernel-notes.md, "Completions BPF never sees";
// seen in CI), complete_ns unavailable and each bio bounded by the reap,
// which proves it ended (tracer/engine/directunseen.go).
func directTimes(q record.Request) bool {
	if q.CompleteNs != 0 {
		return q.CompleteNs >= q.SubmitNs && q.ReapNs >= q.CompleteNs
	}
	if !slices.Contains(q.Unavailable, "complete_ns") || len(q.Bios) == 0 || q.ReapNs < q.SubmitNs {
		return false
	}
	for _, b := range q.Bios {
		if b.CompleteNs != 0 || b.CompletedBeforeNs <= b.IssueNs || b.CompletedBeforeNs > q.ReapNs {
			return false
		}
	}
	return true
}

// Buffered cold reads through libaio: io_submit reads them itself, so the
// requests show their misses, readahead and bios like read calls do; in
// batches of 8, each iocb's readahead names it.
func TestTraceLibaioBuffered(t *testing.T) {
	for _, batch := range []string{"1", "8"} {
		t.Run("batch"+batch, func(t *testing.T) { libaioBuffered(t, batch) })
	}
}

func libaioBuffered(t *testing.T, batch string) {
	const n = 300
	reqs, tot, wr := asyncRun(t, "--engine", "libaio", "--iodepth", "16", "--iodepth-batch", batch, "--count", "300")
	if len(reqs) != n {
		t.Errorf("%d request records for %d reads", len(reqs), n)
	}
	var missed, ra, bios uint64
	var window uint64
	for _, q := range reqs {
		missed += q.Cache.PagesMissed
		ra += uint64(len(q.Cache.Readahead))
		for _, r := range q.Cache.Readahead {
			window = max(window, uint64(r.Pages)*4096)
		}
		bios += uint64(len(q.Bios))
		if q.Direct || !q.Result.Known || q.Result.Bytes != 4096 || q.Cache.PagesRequested != 1 || q.Cache.PagesHit+q.Cache.PagesMissed != 1 {
			t.Errorf("request %+v", q)
		}
	}
	if missed == 0 || ra == 0 || bios == 0 {
		t.Errorf("cold buffered requests: %d pages missed, %d readahead decisions, %d bios", missed, ra, bios)
	}
	if tot.Unattributed != 0 || tot.Requests != n || tot.PagesMissed != missed {
		t.Errorf("pid totals: %d unattributed bios, %d requests, %d pages missed (requests: %d)", tot.Unattributed, tot.Requests, tot.PagesMissed, missed)
	}
	checkKernelRead(t, tot, wr, max(window, 4096))
	t.Logf("%d requests: %d pages missed, %d readahead decisions, %d bios", len(reqs), missed, ra, bios)
}

// checkRequests checks what every request of a run must show: n of them,
// each with its result and, for reads, its 4 KiB of disk reads at most; it
// returns the largest inflight_at_issue and the workers seen.
func checkRequests(t *testing.T, reqs []record.Request, n int, engine record.Engine, worker record.Worker) uint32 {
	t.Helper()
	if len(reqs) != n {
		t.Errorf("%d request records for %d requests", len(reqs), n)
	}
	var maxInflight uint32
	for _, q := range reqs {
		if q.Engine != engine || q.Worker != worker || q.Result != (record.Result{Bytes: 4096, Known: true}) || q.CompleteNs < q.SubmitNs {
			t.Errorf("request %+v", q)
		}
		if worker != record.WorkerInline && q.WorkerTid == 0 {
			t.Errorf("request run by %s without its thread: %+v", worker, q)
		}
		maxInflight = max(maxInflight, q.InflightAtIssue)
	}
	return maxInflight
}

// io_uring O_DIRECT reads at iodepth 16, issued inline by io_uring_enter:
// as with libaio, one 4 KiB bio per request, nothing unattributed.
func TestTraceUringDirect(t *testing.T) {
	reqs, tot, wr := asyncRun(t, "--direct", "--engine", "io_uring", "--iodepth", "16", "--count", "300")
	maxInflight := checkRequests(t, reqs, 300, record.EngineIOUring, record.WorkerInline)
	var lost uint64
	for _, q := range reqs {
		if ((len(q.Bios) != 1 || q.Bios[0].Bytes != 4096) && !tot.lostBio(t, q, &lost)) || !q.Direct || q.SubmitOpID == 0 {
			t.Errorf("request %+v", q)
		}
	}
	if maxInflight <= 1 || maxInflight > 16 {
		t.Errorf("max inflight_at_issue %d, want 2..16", maxInflight)
	}
	if tot.Unattributed != 0 || tot.Requests != 300 {
		t.Errorf("pid totals: %d unattributed bios, %d requests", tot.Unattributed, tot.Requests)
	}
	checkKernelRead(t, tot, wr, 0)
	t.Logf("max inflight_at_issue %d", maxInflight)
}

// Buffered cold io_uring reads: the submitter starts each read ahead inline
// (IOCB_WAITQ), so its misses, readahead and bios are the request's.
func TestTraceUringBuffered(t *testing.T) {
	reqs, tot, wr := asyncRun(t, "--engine", "io_uring", "--iodepth", "16", "--count", "300")
	checkRequests(t, reqs, 300, record.EngineIOUring, record.WorkerInline)
	var missed, bios uint64
	var window uint64
	for _, q := range reqs {
		missed += q.Cache.PagesMissed
		bios += uint64(len(q.Bios))
		for _, r := range q.Cache.Readahead {
			window = max(window, uint64(r.Pages)*4096)
		}
	}
	if missed == 0 || bios == 0 || tot.Unattributed != 0 || tot.PagesMissed != missed {
		t.Errorf("%d pages missed, %d bios; pid totals: %d unattributed, %d missed", missed, bios, tot.Unattributed, tot.PagesMissed)
	}
	checkKernelRead(t, tot, wr, max(window, 4096))
	t.Logf("%d pages missed, %d bios", missed, bios)
}

// IOSQE_ASYNC (every request punted to io-wq) and SQPOLL (a kernel thread
// submits): the IO is charged to the owner and its requests, worker says
// which thread ran it; with SQPOLL the request's tid and comm are the
// owner's, not the iou-sqp thread's. An O_DIRECT request never counts a
// page-cache hit. The workload's kernel_io is its process's (io threads
// included), so the disk bytes compare with the kernel's.
func TestTraceUringWorkers(t *testing.T) {
	for _, c := range []struct {
		name   string
		flags  []string
		worker record.Worker
		fresh  bool // on a filesystem mounted for the test
	}{
		{"async-direct", []string{"--direct", "--uring-async"}, record.WorkerIOWQ, false},
		{"async-buffered", []string{"--uring-async"}, record.WorkerIOWQ, false},
		{"sqpoll-direct", []string{"--direct", "--sqpoll"}, record.WorkerSQPoll, false},
		// The first direct IO on a mount creates the filesystem's dio
		// workqueue (sb_init_dio_done_wq, 6.18): the SQPOLL thread sleeps
		// inside the first request's issue, before its bio. Before the
		// fix that sleep ended the request's segment and its bio was
		// charged to the next request (0 and 2 bios).
		{"sqpoll-direct-fresh-mount", []string{"--direct", "--sqpoll"}, record.WorkerSQPoll, true},
		{"async-direct-fresh-mount", []string{"--direct", "--uring-async"}, record.WorkerIOWQ, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			needRoot(t)
			dir := diskDir(t)
			if c.fresh {
				dir = testutil.LoopExt4(t, 64<<20).Dir
			}
			reqs, tot, wr, _ := asyncTraceIn(t, dir, nil, append(c.flags, "--engine", "io_uring", "--iodepth", "16", "--count", "200")...)
			checkRequests(t, reqs, 200, record.EngineIOUring, c.worker)
			var bios, bioBytes, lost uint64
			for _, q := range reqs {
				bios += uint64(len(q.Bios))
				if (c.worker == record.WorkerIOWQ && q.WorkerTid == q.Tid) || q.Pid != wr.Pid {
					t.Errorf("request charged to pid %d (the workload's: %d), submitted by %d, run by %d", q.Pid, wr.Pid, q.Tid, q.WorkerTid)
				}
				if c.worker == record.WorkerSQPoll && (q.SubmitOpID != 0 || q.Tid == q.WorkerTid || strings.HasPrefix(q.Comm, "iou-")) {
					t.Errorf("SQPOLL request with submit_op_id %d, tid %d, worker_tid %d, comm %q", q.SubmitOpID, q.Tid, q.WorkerTid, q.Comm)
				}
				if q.Direct && (q.Cache.PagesHit != 0 || q.Cache.PagesRequested != 0) {
					t.Errorf("O_DIRECT request with page-cache hits: %+v", q)
				}
				for _, b := range q.Bios {
					bioBytes += uint64(b.Bytes)
				}
				if slices.Contains(c.flags, "--direct") && len(q.Bios) != 1 && !tot.lostBio(t, q, &lost) {
					t.Errorf("direct request with %d bios: %+v", len(q.Bios), q)
				}
			}
			if bios == 0 || tot.Unattributed != 0 || tot.DiskBytesRead != bioBytes {
				t.Errorf("%d bios (%d bytes); pid totals: %d unattributed bios, %d disk bytes read", bios, bioBytes, tot.Unattributed, tot.DiskBytesRead)
			}
			if slices.Contains(c.flags, "--direct") && wr.HitRatio != 0 {
				t.Errorf("O_DIRECT run: workload hit_ratio %v", wr.HitRatio)
			}
			checkKernelRead(t, tot, wr, 0)
			t.Logf("%d bios, %d bytes", bios, bioBytes)
		})
	}
}

// A buffered io_uring write (ext4 punts it to io-wq: no non-blocking
// buffered writes) dirties pages that the fsync after it writes back: each
// request's pages are followed to persisted records that name it.
func TestTraceUringWritePersisted(t *testing.T) {
	needRoot(t)
	tmp := diskDir(t)
	_, tr, wrs := runJSON(t, tmp, "trace", "--json", "--workload", "rand-write", "--", "--size", "16m", "--engine", "io_uring",
		"--iodepth", "8", "--count", "100", "--fsync", "100")
	if why := missingAsyncHooks(tr.summary.Attach, []string{"io_uring"}); why != "" {
		t.Skip(why)
	}
	if len(wrs) != 1 {
		t.Fatalf("want 1 workload record, got %d", len(wrs))
	}
	wr := wrs[0]
	ids := map[uint64]uint32{}
	var dirtied uint32
	for _, q := range tr.requests {
		if q.Pid != wr.Pid {
			continue
		}
		if q.Op != "write" || q.Ino != wr.Ino || q.Result != (record.Result{Bytes: 4096, Known: true}) {
			t.Errorf("request %+v", q)
		}
		ids[q.OpID] = q.DirtiedPages
		dirtied += q.DirtiedPages
	}
	if len(ids) != 100 || dirtied == 0 {
		t.Fatalf("%d write requests, %d pages dirtied", len(ids), dirtied)
	}
	var persisted uint32
	for _, p := range tr.persisted {
		if p.Pid != wr.Pid {
			continue
		}
		if _, ok := ids[p.OpID]; !ok {
			t.Errorf("persisted record of op %d, not a request: %+v", p.OpID, p)
			continue
		}
		if p.Outcome != record.OutcomeWritten {
			t.Errorf("persisted %+v", p)
		}
		persisted += p.Pages
	}
	if persisted != dirtied {
		t.Errorf("requests dirtied %d pages, %d persisted", dirtied, persisted)
	}
	t.Logf("100 requests dirtied %d pages, all persisted", dirtied)
}

// Registered files (IORING_REGISTER_FILES, IOSQE_FIXED_FILE: the SQE names
// an index, not an fd) at iodepth 64, inline and punted to io-wq: each
// O_DIRECT request has exactly its 4 KiB bio, nothing is unattributed, and
// the disk bytes are the kernel's read_bytes exactly (before the fix the
// inline requests' bios were all unattributed: no file was resolved for
// them at submission).
func TestTraceUringFixedFiles(t *testing.T) {
	for _, c := range []struct {
		name   string
		flags  []string
		worker record.Worker
	}{
		{"inline", nil, record.WorkerInline},
		{"io-wq", []string{"--uring-async"}, record.WorkerIOWQ},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 400
			reqs, tot, wr := asyncRun(t, append(c.flags, "--direct", "--engine", "io_uring", "--fixed-files", "--iodepth", "64", "--count", "400")...)
			checkExactDirect(t, reqs, tot, wr, n, c.worker)
		})
	}
}

// checkExactDirect checks a run of n O_DIRECT 4 KiB reads: n request
// records, each with exactly one 4096-byte bio, no bio unattributed, and
// the attributed disk bytes equal to the kernel's read_bytes for the
// process (no readahead window of slack: direct IO reads what it asks;
// in the VMs, within checkKernelRead's slack).
func checkExactDirect(t *testing.T, reqs []record.Request, tot asyncTotals, wr *workloadRecord, n int, worker record.Worker) {
	t.Helper()
	checkRequests(t, reqs, n, record.EngineIOUring, worker)
	var bioBytes, lost uint64
	for _, q := range reqs {
		for _, b := range q.Bios {
			bioBytes += uint64(b.Bytes)
		}
		if ((len(q.Bios) != 1 || q.Bios[0].Bytes != 4096) && !tot.lostBio(t, q, &lost)) || !q.Direct || q.Path == "" {
			t.Errorf("request %+v", q)
		}
	}
	if tot.Unattributed != 0 || tot.Requests != uint64(n) || tot.DiskBytesRead != bioBytes || bioBytes != (uint64(n)-lost)*4096 {
		t.Errorf("pid totals: %d unattributed bios, %d requests, %d disk bytes read; the requests' bios: %d bytes", tot.Unattributed, tot.Requests, tot.DiskBytesRead, bioBytes)
	}
	if os.Getenv("IOPATH_VM") == "1" {
		// The VM kernels' read_bytes exceed iopath's count by a few pages
		// on direct runs whose every request has its exact bio (fixed
		// files: 8192 bytes on 6.1, 20480 on 6.12): not explained yet,
		// bounded as the other async tests bound it.
		checkKernelRead(t, tot, wr, 0)
		return
	}
	if k := wr.Report.Kernel; k == nil || uint64(k.ReadBytes) < tot.DiskBytesRead || uint64(k.ReadBytes) > tot.DiskBytesRead+tot.tail {
		t.Errorf("disk bytes read attributed to pid %d: %d; the kernel's read_bytes: %+v", wr.Pid, tot.DiskBytesRead, k)
	}
}

// Linked chains (IOSQE_IO_LINK, 4 requests a chain, 16 per io_uring_enter)
// of O_DIRECT reads: a chain's head is issued after its last member's
// submission and each member from task work after the one before it
// completed, so no request is issued at its own submission. Each request
// still has exactly its bio (before the fix: most bios unattributed, the
// heads' charged to the chain's last member), named where its direct IO
// begins.
func TestTraceUringLinked(t *testing.T) {
	const n = 400
	reqs, tot, wr := asyncRun(t, "--direct", "--engine", "io_uring", "--iodepth", "16", "--iodepth-batch", "16", "--uring-link", "4", "--count", "400")
	checkExactDirect(t, reqs, tot, wr, n, record.WorkerInline)
}
