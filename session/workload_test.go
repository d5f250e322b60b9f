package session

import (
	"path/filepath"
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
