package engine_test

import (
	"strings"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// unseenNamed says whether a record's unavailable list names the bios
// completed unseen (flushunseen.go unavailableUnseen).
func unseenNamed(list []string) bool {
	for _, s := range list {
		if strings.Contains(s, "completed_before_ns") {
			return true
		}
	}
	return false
}

// A direct pread64 whose bio's completion no BPF program saw (the build
// host's softirqs on PID 1's threads): its record proves the bio ended,
// so the call is released at once, the bio completed before the call's
// return; the request's address issued again later is a new request, not
// a second lost completion. Before, the call waited for that reissue and
// took its time as the bound.
func TestDirectCallCompletionUnseen(t *testing.T) {
	s := enginetest.NewStream()
	a, b := uint64(7)<<32|1, uint64(8)<<32|1
	s.E.HandleIssue(dio(1, a, 800, 150))
	o := enginetest.Op(a, bpf.IopathOpSysSYS_PREAD64, 0, 4096, 4096, 100, 400)
	o.F_flags, o.BiosQueued = 040000, 1 // O_DIRECT
	s.E.HandleOp(o)
	calls := s.Syscalls()
	if len(calls) != 1 || len(calls[0].Bios) != 1 {
		t.Fatalf("calls %+v: want the direct read released at its record", calls)
	}
	if bio := calls[0].Bios[0]; bio.CompleteNs != 0 || bio.CompletedBeforeNs != 400 || bio.D2CNs != 0 {
		t.Errorf("bio %+v: want completed before the call's return (400), no device time", bio)
	}
	if !unseenNamed(calls[0].Unavailable) {
		t.Errorf("unavailable %v: want the bio's times named", calls[0].Unavailable)
	}
	// The address comes back as call b's request, which completes.
	s.E.HandleIssue(dio(1, b, 900, 5000))
	s.E.HandleComplete(enginetest.Done(1, 5200, 0))
	ob := enginetest.Op(b, bpf.IopathOpSysSYS_PREAD64, 4096, 4096, 4096, 4900, 5300)
	ob.F_flags, ob.BiosQueued = 040000, 1
	s.E.HandleOp(ob)
	calls = s.Syscalls()
	if len(calls) != 2 || len(calls[1].Bios) != 1 || calls[1].Bios[0].CompleteNs != 5200 {
		t.Fatalf("calls %+v: want b's bio with its completion", calls)
	}
	if sum := s.E.Summary(); sum.CompletionsUnseen != 1 || sum.IncompleteBios != 0 {
		t.Errorf("completions unseen %d, incomplete %d: want 1 and 0", sum.CompletionsUnseen, sum.IncompleteBios)
	}
}

// A buffered read is not proven complete by its return (its async
// readahead bios are not waited for): it waits for its bio as before.
func TestBufferedCallWaitsForCompletion(t *testing.T) {
	s := enginetest.NewStream()
	a := uint64(7)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(1, 150, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: a, Bio: 0xb1, Sector: 16, Bytes: 16384, Queue: 140}))
	o := enginetest.Op(a, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 100, 400)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	if n := len(s.Syscalls()); n != 0 {
		t.Fatalf("%d calls released before their readahead bio completed", n)
	}
	s.E.HandleComplete(enginetest.Done(1, 600, 0))
	if calls := s.Syscalls(); len(calls) != 1 || calls[0].Bios[0].CompleteNs != 600 {
		t.Fatalf("calls %+v", calls)
	}
}

// A libaio direct read reaped although its bio's completion never reached
// BPF (seen in CI: TestTraceLibaioDirect, 8 iocbs per io_submit): the reap
// proves the bio ended, so the request prints at its reap, the bio bounded
// by it; complete_ns is unavailable, not the reissue's time. The next
// request at that address counts as in flight alone.
func TestAioReapCompletionUnseen(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 10)
	s.E.HandleOp(aioRead(call, 0, 0, 100, 200))
	s.E.HandleIssue(dio(1, call+1, 800, 150))
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 1, 90, 210, enginetest.Iocb{Addr: 0xa0, UserData: 7, Off: 0, Bytes: 4096}))
	s.E.HandleAioReap(enginetest.AioReap(ctx, 900, enginetest.Reaped{Addr: 0xa0, UserData: 7, Res: 4096}))
	reqs := s.Requests()
	if len(reqs) != 1 || len(reqs[0].Bios) != 1 {
		t.Fatalf("requests %+v: want the request printed at its reap", reqs)
	}
	q := reqs[0]
	if bio := q.Bios[0]; bio.CompleteNs != 0 || bio.CompletedBeforeNs != 900 {
		t.Errorf("bio %+v: want completed before the reap (900)", bio)
	}
	if q.CompleteNs != 0 || !contains(q.Unavailable, "complete_ns") || !unseenNamed(q.Unavailable) || q.ReapNs != 900 {
		t.Errorf("request %+v: want complete_ns and the bio's times unavailable", q)
	}
	call2 := uint64(100<<32 | 20)
	s.E.HandleOp(aioRead(call2, 0, 4096, 1000, 1100))
	s.E.HandleIssue(dio(1, call2+1, 808, 1050))
	s.E.HandleAioSubmit(enginetest.AioSubmit(call2, ctx, 1, 990, 1110, enginetest.Iocb{Addr: 0xa0, UserData: 8, Off: 4096, Bytes: 4096}))
	s.E.HandleComplete(enginetest.Done(1, 1300, 0))
	s.E.HandleAioReap(enginetest.AioReap(ctx, 1400, enginetest.Reaped{Addr: 0xa0, UserData: 8, Res: 4096}))
	reqs = s.Requests()
	if len(reqs) != 2 || reqs[1].CompleteNs != 1300 || reqs[1].InflightAtIssue != 1 {
		t.Fatalf("second request %+v: want its completion and 1 in flight", reqs[len(reqs)-1])
	}
	if n := s.E.Summary().CompletionsUnseen; n != 1 {
		t.Errorf("completions unseen %d, want 1", n)
	}
}

// An io_uring direct read whose bio's completion never reached BPF: its
// CQE proves the bio ended; the request prints at the CQE with its
// complete_ns, the bio bounded by it.
func TestUringCQECompletionUnseen(t *testing.T) {
	s := enginetest.NewStream()
	call, id := uint64(100<<32|9), uint64(100<<32|10)
	s.E.HandleUringSubmit(uringSubmit(id, 0xf00, call, 0, 100))
	inline := enginetest.Op(id, bpf.IopathOpSysSYS_URING_READ, 0, 4096, 4096, 100, 150)
	inline.ReqId, inline.F_flags, inline.BiosQueued = id, 040000, 1
	s.E.HandleOp(inline)
	s.E.HandleIssue(dio(1, id, 16, 130))
	s.E.HandleUringEnter(enginetest.UringEnter(call, 1, 1, 0, 0, 90, 160))
	s.E.HandleUringComplete(uringComplete(id, 0xf00, 1, 4096, 400))
	reqs := s.Requests()
	if len(reqs) != 1 || len(reqs[0].Bios) != 1 {
		t.Fatalf("requests %+v: want the request printed at its CQE", reqs)
	}
	if q := reqs[0]; q.CompleteNs != 400 || q.Bios[0].CompletedBeforeNs != 400 || q.Bios[0].CompleteNs != 0 || !unseenNamed(q.Unavailable) {
		t.Errorf("request %+v", q)
	}
}

// A direct request of two bios, one completion seen and one not: its
// complete_ns is unavailable, not the seen bio's end (the other ended
// later, at most at the reap).
func TestAioReapOneOfTwoUnseen(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 10)
	o := aioRead(call, 0, 0, 100, 200)
	o.Count, o.Ret, o.BiosQueued = 8192, 8192, 2
	s.E.HandleOp(o)
	s.E.HandleIssue(dio(1, call+1, 800, 150))
	s.E.HandleIssue(dio(2, call+1, 808, 160))
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 1, 90, 210, enginetest.Iocb{Addr: 0xa0, UserData: 7, Off: 0, Bytes: 8192}))
	s.E.HandleComplete(enginetest.Done(1, 500, 0))
	s.E.HandleAioReap(enginetest.AioReap(ctx, 900, enginetest.Reaped{Addr: 0xa0, UserData: 7, Res: 8192}))
	reqs := s.Requests()
	if len(reqs) != 1 || len(reqs[0].Bios) != 2 {
		t.Fatalf("requests %+v", reqs)
	}
	if q := reqs[0]; q.CompleteNs != 0 || !contains(q.Unavailable, "complete_ns") || q.Bios[0].CompleteNs != 500 || q.Bios[1].CompletedBeforeNs != 900 {
		t.Errorf("request %+v: want complete_ns unavailable, bios completed at 500 and before 900", q)
	}
}

// One request holding a direct call's bio and a buffered read's readahead
// bio, its completion unseen: the direct call is released at its record
// (its bio bounded by its return); the request stays in flight for the
// other bio, which completes unseen at the address's reissue. The direct
// call's bio is counted once, its bound not widened.
func TestDirectUnseenInSharedRequest(t *testing.T) {
	s := enginetest.NewStream()
	a, b := uint64(7)<<32|1, uint64(8)<<32|1
	s.E.HandleIssue(enginetest.Issue(1, 150, enginetest.FlRead,
		enginetest.Own{Op: a, Bio: 0xb1, Sector: 800, Bytes: 4096, Queue: 140},
		enginetest.Own{Op: b, Bio: 0xb2, Sector: 808, Bytes: 4096, Queue: 145}))
	o := enginetest.Op(a, bpf.IopathOpSysSYS_PREAD64, 0, 4096, 4096, 100, 400)
	o.F_flags, o.BiosQueued = 040000, 1
	s.E.HandleOp(o)
	ob := enginetest.Op(b, bpf.IopathOpSysSYS_READ, 4096, 4096, 4096, 120, 420)
	ob.BiosQueued = 1
	s.E.HandleOp(ob)
	if calls := s.Syscalls(); len(calls) != 1 || calls[0].OpID != a {
		t.Fatalf("calls %+v: want only the direct read released", calls)
	}
	s.E.HandleIssue(enginetest.Issue(1, 5000, enginetest.FlRead, enginetest.Own{Bio: 0xb9, Sector: 9000, Bytes: 4096, Queue: 4990}))
	calls := s.Syscalls()
	if len(calls) != 2 || calls[0].Bios[0].CompletedBeforeNs != 400 || calls[1].Bios[0].CompletedBeforeNs != 5000 {
		t.Fatalf("calls %+v: want the direct bio bounded by 400, the other by the reissue (5000)", calls)
	}
	if n := s.E.Summary().CompletionsUnseen; n != 2 {
		t.Errorf("completions unseen %d, want 2", n)
	}
}

// An O_DIRECT read that ext4 ran as a buffered read (data=journal: ext4
// reads such a file through the page cache) queued an async readahead bio
// (rwbs RA) and returned before it completed: its record proves nothing of
// that bio. The bio keeps its real completion, seen after the record; no
// completion is unseen, none is an orphan. Before, the record completed it
// unseen at the call's return (a bound before its real end), forgot its
// request, and its completion became an orphan.
func TestDirectCallLeavesReadahead(t *testing.T) {
	s := enginetest.NewStream()
	a := uint64(7)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(1, 150, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: a, Bio: 0xb1, Sector: 16, Bytes: 16384, Queue: 140}))
	o := enginetest.Op(a, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 100, 400)
	o.F_flags, o.BiosQueued = 040000, 1 // O_DIRECT
	s.E.HandleOp(o)
	s.E.HandleComplete(enginetest.Done(1, 600, 0))
	calls := s.Syscalls()
	if len(calls) != 1 || len(calls[0].Bios) != 1 {
		t.Fatalf("calls %+v", calls)
	}
	if bio := calls[0].Bios[0]; bio.CompleteNs != 600 || bio.CompletedBeforeNs != 0 {
		t.Errorf("readahead bio %+v: want its completion at 600, not a bound at the call's return", bio)
	}
	if c := s.E.Counters(); c.CompletionsUnseen != 0 || c.OrphanCompletes != 0 {
		t.Errorf("completions unseen %d, orphan completions %d: want 0 and 0", c.CompletionsUnseen, c.OrphanCompletes)
	}
}

// A libaio O_DIRECT|O_DSYNC write (its part's record says dsync) whose
// bio's completion never reached BPF: io_submit returned before the bio
// ended, so the bio is bounded by the reap, never by io_submit's return.
// Before, the dsync part counted as waited for, and its bio's bound was
// tightened to the part's end (200), before the bio could have ended.
func TestAioDsyncWriteUnseenBoundByReap(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 10)
	o := enginetest.Op(call+1, bpf.IopathOpSysSYS_AIO_WRITE, 0, 4096, 4096, 100, 200)
	o.F_flags, o.BiosQueued = 040000|010000, 1 // O_DIRECT|O_DSYNC
	s.E.HandleOp(o)
	s.E.HandleIssue(enginetest.Issue(1, 155, enginetest.FlWrite|enginetest.FlSync,
		enginetest.Own{Op: call + 1, Bio: 0x101, Sector: 800, Bytes: 4096, Queue: 150}))
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 1, 90, 210, enginetest.Iocb{Addr: 0xa0, UserData: 7, Off: 0, Bytes: 4096}))
	s.E.HandleAioReap(enginetest.AioReap(ctx, 900, enginetest.Reaped{Addr: 0xa0, UserData: 7, Res: 4096}))
	reqs := s.Requests()
	if len(reqs) != 1 || len(reqs[0].Bios) != 1 {
		t.Fatalf("requests %+v: want the request printed at its reap", reqs)
	}
	if bio := reqs[0].Bios[0]; bio.CompleteNs != 0 || bio.CompletedBeforeNs != 900 {
		t.Errorf("bio %+v: want completed before the reap (900), not before io_submit's return", bio)
	}
}

// The same for a direct read an io-wq worker ran (its part is an op of its
// own naming the request): the CQE completes the worker's bio too.
func TestUringWorkerCQECompletionUnseen(t *testing.T) {
	s := enginetest.NewStream()
	call, id := uint64(100<<32|9), uint64(100<<32|10)
	s.E.HandleUringSubmit(uringSubmit(id, 0xf00, call, 0, 100))
	s.E.HandleUringEnter(enginetest.UringEnter(call, 1, 1, 0, 0, 90, 160))
	worker := enginetest.Op(200<<32|1, bpf.IopathOpSysSYS_URING_READ, 0, 4096, 4096, 170, 260)
	worker.Tid, worker.ReqId, worker.F_flags, worker.BiosQueued = 200, id, 040000, 1
	s.E.HandleIssue(dio(1, worker.OpId, 16, 180))
	s.E.HandleOp(worker)
	s.E.HandleUringComplete(uringComplete(id, 0xf00, 1, 4096, 400))
	reqs := s.Requests()
	if len(reqs) != 1 || len(reqs[0].Bios) != 1 {
		t.Fatalf("requests %+v: want the request printed at its CQE", reqs)
	}
	if q := reqs[0]; q.CompleteNs != 400 || q.Bios[0].CompletedBeforeNs != 400 || q.WorkerTid != 200 {
		t.Errorf("request %+v", q)
	}
}
