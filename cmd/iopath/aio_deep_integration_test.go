package main

// Privileged: libaio at the workload's deepest queue (issue 13's breaker
// findings): io_submit calls of 256 iocbs and io_getevents calls of up to
// 1024 events are reported whole, each request with exactly its bio.

import (
	"testing"

	"github.com/iopath/iopath/record"
)

func TestTraceLibaioDeep(t *testing.T) {
	for _, batch := range []string{"256", "1"} {
		t.Run("batch"+batch, func(t *testing.T) { libaioDeep(t, batch) })
	}
}

func libaioDeep(t *testing.T, batch string) {
	const n = 8192
	needRoot(t)
	flags := []string{"--direct", "--engine", "libaio", "--iodepth", "1024", "--iodepth-batch", batch, "--count", "8192"}
	args := append([]string{"trace", "--json", "--workload", "rand-read", "--", "--cold", "--size", "64m"}, flags...)
	_, tr, wrs := runJSON(t, diskDir(t), args...)
	if why := missingAsyncHooks(tr.summary.Attach, flags); why != "" {
		t.Skip(why)
	}
	if len(wrs) != 1 {
		t.Fatalf("want 1 workload record, got %d", len(wrs))
	}
	wr := wrs[0]
	got, bad, unknown := 0, 0, 0
	for _, q := range tr.requests {
		if q.Pid != wr.Pid {
			continue // other processes do IO on this machine
		}
		got++
		var bytes uint32
		for _, b := range q.Bios {
			bytes += b.Bytes
		}
		switch {
		case len(q.Bios) != 1 || bytes != 4096 || (q.Result.Known && q.Result != record.Result{Bytes: 4096, Known: true}):
			if bad++; bad <= 5 {
				t.Errorf("request %+v", q)
			}
		case !q.Result.Known:
			unknown++
		}
	}
	// The full build reports up to 4096 iocbs and events per call; the 5.10
	// compat build (bounded loops, no bpf_loop) 128. What a build cannot
	// report is counted exactly: an iocb left out is a truncation and its
	// bio unattributed, an event left out a truncation and that request's
	// result unavailable (events of iocbs left out are counted too, so a
	// request without result is one of them, not all).
	//
	// Where the kernel skipped an io_submit's sys_exit run and no spare
	// took it (missed_runs; 7.2 in its 1-vCPU VM: 1 of 8192, 2026-12-07),
	// that call's requests are never reported: each one's bio is counted
	// unattributed with cause syscall:io_submit, as many as requests are
	// missing, within the unspared skips.
	c := tr.summary.Truncations
	tot := pidTotals(t, tr.summary, wr.Pid)
	skipped := tr.summary.UnattributedCauses["syscall:io_submit"].Bios
	if skipped > unsparedExits(tr.summary) {
		skipped = 0
	}
	if bad != 0 || uint64(got)+c["aio_iocbs"]+skipped != n || tot.Unattributed != c["aio_iocbs"]+skipped || tot.Requests != uint64(got) ||
		uint64(unknown) > c["aio_events"] {
		t.Errorf("%d request records for %d reads, %d wrong, %d without result; pid totals: %d unattributed bios, %d requests; truncations %v; io_submit bios unattributed within skipped exits: %d",
			got, n, bad, unknown, tot.Unattributed, tot.Requests, c, skipped)
	}
	if c["aio_iocbs"] == 0 && (wr.Amplification < 0.99 || wr.Amplification > 1.01) {
		t.Errorf("amplification %.3f, want 1", wr.Amplification)
	}
	t.Logf("%d requests, %d without result; truncations %v", got, unknown, c)
	logLosses(t, tr.summary)
}

// logLosses logs what a trace says it could not see: the kernel's skipped
// program runs (missed_runs: a program already running on that CPU),
// incomplete and unattributed bios by cause, map evictions.
func logLosses(t *testing.T, s *record.Summary) {
	t.Helper()
	missed := map[string]uint64{}
	for k, v := range s.MissedRuns {
		if v != 0 {
			missed[k] = v
		}
	}
	t.Logf("missed runs %v; incomplete bios %d %v; unattributed %d %v; map evictions %v; spares %q, spare_sys_enter %d spare_sys_exit %d spare_bio_queue %d spare_rq_issue %d", missed, s.IncompleteBios, s.IncompleteCauses,
		s.UnattributedBios, s.UnattributedCauses, s.MapEvictions, s.Attach["spares"], s.Diagnostics["spare_sys_enter"], s.Diagnostics["spare_sys_exit"], s.Diagnostics["spare_bio_queue"], s.Diagnostics["spare_rq_issue"])
}

// `trace --workload … --numjobs 2` (processes): the workload record's disk
// bytes are the job processes' (the parent only waits for them).
func TestTraceWorkloadJobProcesses(t *testing.T) {
	needRoot(t)
	args := []string{"trace", "--json", "--workload", "rand-read", "--", "--cold", "--direct", "--size", "16m", "--count", "500",
		"--engine", "libaio", "--iodepth", "8", "--numjobs", "2"}
	_, tr, wrs := runJSON(t, diskDir(t), args...)
	if len(wrs) != 1 {
		t.Fatalf("want 1 workload record, got %d", len(wrs))
	}
	var jobs uint64
	for _, p := range tr.summary.Pids {
		if p.Pid != wrs[0].Pid && p.Requests > 0 {
			jobs += p.DiskBytesRead
		}
	}
	logLosses(t, tr.summary)
	// The record's disk bytes leave out the processes' execve reads
	// (exec_bytes_read): the pid totals hold both.
	if wr := wrs[0]; wr.DiskBytesRead < 2*500*4096 || wr.DiskBytesRead+wr.ExecBytesRead != jobs+pidTotals(t, tr.summary, wr.Pid).DiskBytesRead {
		t.Errorf("workload record: disk_bytes_read %d, exec_bytes_read %d; the job processes read %d", wr.DiskBytesRead, wr.ExecBytesRead, jobs)
	}
}
