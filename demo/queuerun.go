package demo

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer/kernel"
)

// The queue-depth demos (iodepth, sync-vs-async) do random O_DIRECT IO of
// queueBS bytes on files of queueFileSize bytes, written with data first.
const (
	queueFileSize = 64 << 20
	queueBS       = 4 << 10
)

// queueArgs are a queue-depth demo's workload arguments: count random
// O_DIRECT ops of kind, queueBS bytes each, then extra.
func queueArgs(kind string, count int, extra ...string) []string {
	return append([]string{kind, "--direct", fmt.Sprintf("--bs=%d", queueBS), fmt.Sprintf("--count=%d", count)}, extra...)
}

// QueueRun is one traced run of a queue-depth demo: its workload record
// (with the workload's report) and what its requests did at the device.
type QueueRun struct {
	Label string
	Rec   *record.Workload
	Queue DeviceQueue
	// TracedCalls are the run's read/write syscall records on its file: the
	// pwrite64/pread64 calls iopath followed per call.
	TracedCalls int
	// Sources says where its bios were found.
	Sources BioSources
}

// Syscalls is the workload's own count of the system calls its IO took,
// all of them (pwrite64; io_submit + io_getevents).
func (r *QueueRun) Syscalls() int64 {
	var n int64
	for _, c := range r.Rec.Report.Syscalls {
		n += c.Calls
	}
	return n
}

// SyscallsPerRequest is Syscalls over the requests the workload completed.
func (r *QueueRun) SyscallsPerRequest() float64 {
	return fdiv(float64(r.Syscalls()), float64(r.Rec.Report.Ops))
}

// syscallCell lists the workload's calls, e.g. "4096 io_submit + 3070 io_getevents".
func (r *QueueRun) syscallCell() string {
	var p []string
	for _, c := range r.Rec.Report.Syscalls {
		if c.Calls > 0 {
			p = append(p, fmt.Sprintf("%d %s", c.Calls, c.Name))
		}
	}
	return strings.Join(p, " + ")
}

// queueRuns builds the QueueRun of each traced run, its bios picked by pid
// (runBios). A run without a traced request is an error.
func queueRuns(tr *traced, res *session.WorkloadRunsResult, runs []*session.WorkloadRun, labels []string, write bool) ([]*QueueRun, []*record.Workload, error) {
	out := make([]*QueueRun, len(runs))
	wrecs := make([]*record.Workload, len(runs))
	for i, r := range runs {
		wrecs[i] = res.Record(r, nil)
		bios, src := runBios(tr, r.Pid, kernel.Dev(r.File.Dev), r.File.Ino, write)
		q := &QueueRun{Label: labels[i], Rec: wrecs[i], Queue: DeviceQueueOf(bios), Sources: src}
		for _, c := range tr.recs {
			if s, ok := c.(*record.Syscall); ok && s.Pid == r.Pid && s.Ino == r.File.Ino && (record.IsRead(s.Syscall) || record.IsWrite(s.Syscall)) {
				q.TracedCalls++
			}
		}
		if len(q.Queue.D2CNs) == 0 {
			return nil, nil, fmt.Errorf("saw no completed bio of the %s run (pid %d; lost events: %d): run `iopath doctor`", labels[i], r.Pid, tr.sum.LostEvents)
		}
		out[i] = q
	}
	return out, wrecs, nil
}
