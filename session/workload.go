package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
)

// UnderTraceEnv is set to "1" in the environment of the `iopath workload`
// that `trace --workload` runs: interrupted, it exits 128+N without its
// own "stopped by" line, which the trace prints.
const UnderTraceEnv = "IOPATH_WORKLOAD_UNDER_TRACE"

// WorkloadChild is `iopath workload ... --json` running under the trace.
type WorkloadChild struct {
	*Child
	out chan []byte // the child's stdout (its JSON report), once closed
}

// StartWorkload starts `iopath workload ARGS --json` as a traced child
// (Exec: every call of the child is traced, nothing of this process). Its
// stdout, the JSON report, comes back through a pipe (pipes are not traced);
// its stderr is notes; it gets SIGKILL if iopath dies.
func (s *Session) StartWorkload(args []string) (*WorkloadChild, error) {
	self, argv, err := workloads.SelfCommand(append(append([]string{"workload"}, args...), "--json")...)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	env := workloadEnv(os.Environ())
	c, err := s.Exec(Command{Path: self, Args: argv, Env: env, Stdout: pw, Stderr: s.o.Notes, DeathSignal: syscall.SIGKILL})
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	ch := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		pr.Close()
		ch <- b
	}()
	return &WorkloadChild{Child: c, out: ch}, nil
}

// Report waits for the child to exit and decodes its report; rep is nil
// when it printed none (it failed before running, and said why on stderr).
func (c *WorkloadChild) Report() (rep *workloads.Report, st Status, err error) {
	st = c.Wait()
	out := <-c.out
	if st.Err != nil {
		return nil, st, st.Err
	}
	if i := bytes.IndexByte(out, '{'); i >= 0 {
		rep = &workloads.Report{}
		if err := json.Unmarshal(out[i:], rep); err != nil {
			return nil, st, fmt.Errorf("reading the workload's report: %w", err)
		}
	}
	return rep, st, nil
}

// PersistCounts adds up "persisted" records by process and file: what
// became of the pages traced write calls dirtied. Pages are 4 KiB.
type PersistCounts struct {
	byKey map[persistKey]*persistTotals
	// execRead is, per process, the bytes of its execve records' bios:
	// its program's start, not the run's (WorkloadRecord).
	execRead map[uint32]uint64
}

type persistKey struct {
	pid uint32
	dev string
	ino uint64
}

// persistTotals are pages by outcome; flusher pages were written by
// writeback outside any traced call (a call's own writes, O_SYNC or fsync,
// are in its record's bios).
type persistTotals struct {
	written, flusher, removed, failed uint64
}

// Add counts r if it is a *record.Persisted record.
func (pc *PersistCounts) Add(r any) {
	if c, ok := r.(*record.Syscall); ok && c.Syscall == "execve" {
		if pc.execRead == nil {
			pc.execRead = map[uint32]uint64{}
		}
		for _, b := range c.Bios {
			pc.execRead[c.Pid] += uint64(b.Bytes)
		}
		return
	}
	p, ok := r.(*record.Persisted)
	if !ok {
		return
	}
	if pc.byKey == nil {
		pc.byKey = map[persistKey]*persistTotals{}
	}
	k := persistKey{p.Pid, p.Dev, p.Ino}
	t := pc.byKey[k]
	if t == nil {
		t = &persistTotals{}
		pc.byKey[k] = t
	}
	n := uint64(p.Pages)
	switch p.Outcome {
	case "written":
		t.written += n
		if p.ByOpID == 0 {
			t.flusher += n
		}
	case "removed":
		t.removed += n
	case "failed":
		t.failed += n
	}
}

func (pc *PersistCounts) get(pid uint32, dev string, ino uint64) persistTotals {
	if t := pc.byKey[persistKey{pid, dev, ino}]; t != nil {
		return *t
	}
	return persistTotals{}
}

// summaryTotals returns the totals of the workload's processes (pid and
// the job processes its report names: --numjobs without --thread) and of
// the file (dev, ino). Of the processes' totals only the calls and the disk
// bytes are summed: what WorkloadRecord takes from them; exec is the bytes
// the processes' execve records read (PersistCounts.execRead), which are
// not in p's disk reads.
func summaryTotals(sum *record.Summary, pid uint32, rep *workloads.Report, dev string, ino uint64, execRead map[uint32]uint64) (p, f record.Totals, exec uint64) {
	pids := map[uint32]bool{pid: true}
	if rep != nil {
		for _, j := range rep.Jobs {
			if j != nil && j.Pid > 0 {
				pids[uint32(j.Pid)] = true
			}
		}
	}
	for _, s := range sum.Pids {
		if pids[s.Pid] {
			p.Calls += s.Calls
			p.DiskBytesRead += s.DiskBytesRead - min(s.DiskBytesRead, execRead[s.Pid])
			exec += min(s.DiskBytesRead, execRead[s.Pid])
			p.DiskBytesWrite += s.DiskBytesWrite
		}
	}
	for _, s := range sum.Files {
		if s.Dev == dev && s.Ino == ino {
			f = s.Totals
		}
	}
	return p, f, exec
}

// WorkloadRecord computes a run's "workload" record from the summary (per
// pid and per file), the persisted pages counted from the records, and its
// report (nil if it printed none); after is the file's residency at the end.
func WorkloadRecord(sum *record.Summary, pid uint32, file *WorkFile, rep *workloads.Report, pc *PersistCounts, after *workloads.Residency) *record.Workload {
	dev := kernel.Dev(file.Dev)
	pt, ft, exec := summaryTotals(sum, pid, rep, dev, file.Ino, pc.execRead)
	wb := pc.get(pid, dev, file.Ino)
	r := &record.Workload{Type: "workload", Pid: pid, File: file.Path, Dev: dev, Ino: file.Ino,
		FileReadCalls: ft.ReadCalls, FileWriteCalls: ft.WriteCalls, OtherCalls: pt.Calls - min(pt.Calls, ft.Calls),
		ReadBytesRequested: ft.ReadBytesReq,
		DiskBytesRead:      pt.DiskBytesRead, ExecBytesRead: exec, DiskBytesWritten: pt.DiskBytesWrite, WritebackBytes: wb.flusher * 4096,
		PagesHit: ft.PagesHit, PagesMissed: ft.PagesMissed, PagesAdded: ft.PagesAdded,
		PagesRequested: ft.PagesHit + ft.PagesMissed, CachedAfter: after,
		DirtiedPages: ft.DirtiedPages, PersistedPages: wb.written, RemovedPages: wb.removed, FailedPages: wb.failed,
		PendingPages: sum.DirtyPending, Report: rep, FS: DescribeFS(file.Path).Type, Unmatched: sum.Truncations["wb_matches"]}
	r.Kind = file.Kind
	r.Ops = int64(ft.ReadCalls + ft.WriteCalls)
	if rep != nil {
		r.Ops = rep.Ops
		if rep.Engine == workloads.EngineMmap && !strings.Contains(rep.Kind, "write") {
			r.ReadBytesRequested = uint64(rep.Bytes)
		}
	}
	// Lost records make every count from records a lower bound: a ratio
	// of two of them is no bound, so only bytes per op of the report's
	// (exact) ops is kept, as a lower bound.
	r.Partial, r.LostEvents = sum.LostEvents > 0, sum.LostEvents
	if r.Ops > 0 && (!r.Partial || rep != nil) {
		r.DiskBytesPerOp = float64(r.DiskBytesRead+r.DiskBytesWritten+r.WritebackBytes) / float64(r.Ops)
	}
	if r.Partial {
		return r
	}
	if r.ReadBytesRequested > 0 {
		r.Amplification = float64(r.DiskBytesRead) / float64(r.ReadBytesRequested)
	}
	if r.PagesRequested > 0 {
		r.HitRatio = float64(r.PagesHit) / float64(r.PagesRequested)
	}
	return r
}

// workloadEnv is the traced workload child's environment: env with
// UnderTraceEnv (the trace says why it stopped, not the child too) and Go's
// asynchronous preemption off (GODEBUG asyncpreemptoff=1, after any GODEBUG
// setting of the user's, which it overrides). A preemption is a SIGURG to a
// running thread; io_uring creates its io-wq workers from the submitting
// task, and create_io_thread fails (-ERESTARTNOINTR) while that task has a
// signal pending: 6.1-stable gives up after WORKER_INIT_LIMIT (3) retries
// and cancels the first request (ECANCELED; the 6.1 VM under TCG, once).
// The workload's loops make a system call each turn: the scheduler still
// preempts them there, and a C program like fio gets no such signals.
func workloadEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	debug := "asyncpreemptoff=1"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if v != "" {
				debug = v + "," + debug // the last setting of a key wins
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, UnderTraceEnv+"=1", "GODEBUG="+debug)
}
