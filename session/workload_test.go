package session

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
)

// A --numjobs run of processes: the parent (pid 10) only waits, its two
// job processes (11, 12) read from the disk; another traced process (13)
// is not the workload's. The workload record's disk bytes are the jobs'.
func TestWorkloadRecordSumsJobProcesses(t *testing.T) {
	f := &WorkFile{Path: filepath.Join(t.TempDir(), "f"), Dev: 8<<20 | 1, Ino: 42}
	tot := func(pid uint32, calls, read uint64) record.PidSummary {
		return record.PidSummary{Pid: pid, Totals: record.Totals{Calls: calls, DiskBytesRead: read, DiskBytesWrite: read / 2}}
	}
	sum := &record.Summary{
		Pids:  []record.PidSummary{tot(10, 3, 0), tot(11, 100, 4096*100), tot(12, 100, 4096*100), tot(13, 7, 1<<20)},
		Files: []record.FileSummary{{Dev: kernel.Dev(f.Dev), Ino: 42, Totals: record.Totals{Calls: 200, ReadCalls: 200, ReadBytesReq: 4096 * 200}}},
	}
	rep := &workloads.Report{NumJobs: 2, Ops: 200, Jobs: []*workloads.Report{{Job: 0, Pid: 11}, {Job: 1, Pid: 12}}}
	r := WorkloadRecord(sum, 10, f, rep, &PersistCounts{}, nil)
	if r.DiskBytesRead != 4096*200 || r.DiskBytesWritten != 4096*100 || r.OtherCalls != 3 || r.Amplification != 1 {
		t.Errorf("workload record %+v", r)
	}
}

// Lost records (lost_events > 0) make the totals lower bounds: the record
// says so (partial), keeps bytes per op of the report's ops only as what
// it is, and computes no ratio of two lower bounds (an io_uring run with
// --ringbuf-size 4096 printed "3495.3 disk bytes per op", truth 4096).
func TestWorkloadRecordPartialWhenRecordsLost(t *testing.T) {
	f := &WorkFile{Path: filepath.Join(t.TempDir(), "f"), Dev: 8<<20 | 1, Ino: 42}
	sum := &record.Summary{LostEvents: 52,
		Pids:  []record.PidSummary{{Pid: 10, Totals: record.Totals{Calls: 90, DiskBytesRead: 4096 * 90}}},
		Files: []record.FileSummary{{Dev: kernel.Dev(f.Dev), Ino: 42, Totals: record.Totals{Calls: 90, ReadCalls: 90, ReadBytesReq: 4096 * 90, PagesHit: 0, PagesMissed: 90}}},
	}
	r := WorkloadRecord(sum, 10, f, &workloads.Report{Ops: 100}, &PersistCounts{}, nil)
	if !r.Partial || r.LostEvents != 52 || r.DiskBytesPerOp != 4096*90/100.0 || r.Amplification != 0 || r.HitRatio != 0 {
		t.Errorf("workload record with lost records: %+v", r)
	}
	r = WorkloadRecord(sum, 10, f, nil, &PersistCounts{}, nil) // ops are the calls seen
	if !r.Partial || r.DiskBytesPerOp != 0 {
		t.Errorf("workload record without a report, records lost: per op %v, partial %v", r.DiskBytesPerOp, r.Partial)
	}
	sum.LostEvents = 0
	if r = WorkloadRecord(sum, 10, f, nil, &PersistCounts{}, nil); r.Partial || r.DiskBytesPerOp != 4096 || r.Amplification != 1 {
		t.Errorf("workload record without loss: %+v", r)
	}
}

// The workload child runs without Go's asynchronous preemption (its
// SIGURGs make io_uring's io-wq worker creation fail): GODEBUG has
// asyncpreemptoff=1 last, after the user's own settings, once.
func TestWorkloadEnv(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"PATH=/bin"}, "GODEBUG=asyncpreemptoff=1"},
		{[]string{"GODEBUG=gctrace=1", "PATH=/bin"}, "GODEBUG=gctrace=1,asyncpreemptoff=1"},
		{[]string{"GODEBUG="}, "GODEBUG=asyncpreemptoff=1"},
	} {
		env := workloadEnv(c.in)
		var debug []string
		for _, kv := range env {
			if strings.HasPrefix(kv, "GODEBUG=") {
				debug = append(debug, kv)
			}
		}
		if len(debug) != 1 || debug[0] != c.want || !slices.Contains(env, UnderTraceEnv+"=1") {
			t.Errorf("workloadEnv(%q) = %q, want one %q and %s=1", c.in, env, c.want, UnderTraceEnv)
		}
	}
}
