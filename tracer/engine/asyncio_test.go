package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

const ctx = 0x7f0000001000 // an aio_context_t

// aioRead is the EV_OP of iocb k of the io_submit call: a direct 4 KiB
// read at off that queued one bio.
// kernelIocbID is iocb k's op_id as bpf/aio.c numbers it: the call's
// 32-bit sequence + 1 + k, wrapping inside the low half.
func kernelIocbID(call, k uint64) uint64 {
	return call>>32<<32 | uint64(uint32(call)+1+uint32(k))
}

func aioRead(call uint64, k uint64, off uint64, start, end uint64) *bpf.IopathOp {
	o := enginetest.Op(kernelIocbID(call, k), bpf.IopathOpSysSYS_AIO_READ, off, 4096, 4096, start, end)
	o.F_flags = 040000 // O_DIRECT
	o.BiosQueued = 1
	return o
}

// completedRead is a stream where iocb 0 of io_submit call 10 read 4 KiB
// directly, its bio completed; its submit record and its reap not yet seen.
func completedRead() (*enginetest.Stream, uint64) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 10)
	s.E.HandleOp(aioRead(call, 0, 0, 100, 200))
	s.E.HandleIssue(dio(1, call+1, 800, 150))
	s.E.HandleComplete(enginetest.Done(1, 300, 0))
	return s, call
}

func dio(rq, op, sector, queue uint64) *bpf.IopathRqIssueEv {
	return enginetest.Issue(rq, queue+5, enginetest.FlRead|enginetest.FlSync,
		enginetest.Own{Op: op, Bio: rq + 0x100, Sector: sector, Bytes: 4096, Queue: queue})
}

// Two iocbs in one io_submit, completed by the device in the other order
// and reaped in one io_getevents: each request gets its own bio, result
// and times, and both were in flight together.
func TestAioOutOfOrder(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 10)
	s.E.HandleOp(aioRead(call, 0, 0, 100, 200))
	s.E.HandleIssue(dio(1, call+1, 800, 150))
	s.E.HandleOp(aioRead(call, 1, 8192, 200, 300))
	s.E.HandleIssue(dio(2, call+2, 816, 250))
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 2, 90, 310,
		enginetest.Iocb{Addr: 0xa0, UserData: 7, Off: 0, Bytes: 4096}, enginetest.Iocb{Addr: 0xb0, UserData: 8, Off: 8192, Bytes: 4096}))
	s.E.HandleComplete(enginetest.Done(2, 500, 0))
	s.E.HandleComplete(enginetest.Done(1, 700, 0))
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests printed before their reap", n)
	}
	s.E.HandleAioReap(enginetest.AioReap(ctx, 900, enginetest.Reaped{Addr: 0xb0, UserData: 8, Res: 4096}, enginetest.Reaped{Addr: 0xa0, UserData: 7, Res: 4096}))
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("want 2 requests, got %d", len(reqs))
	}
	byData := map[uint64]*record.Request{}
	for _, q := range reqs {
		byData[q.UserData] = q
	}
	a, b := byData[7], byData[8]
	if a == nil || b == nil {
		t.Fatalf("requests %+v", reqs)
	}
	if a.OpID != call+1 || a.SubmitOpID != call || a.Offset != 0 || len(a.Bios) != 1 || a.Bios[0].Sector != 800 || a.CompleteNs != 700 ||
		a.ReapNs != 900 || a.SubmitNs != 90 || a.InflightAtIssue != 1 || a.Result != (record.Result{Bytes: 4096, Known: true}) {
		t.Errorf("first request %+v", a)
	}
	if b.OpID != call+2 || b.Offset != 8192 || len(b.Bios) != 1 || b.Bios[0].Sector != 816 || b.CompleteNs != 500 || b.InflightAtIssue != 2 {
		t.Errorf("second request %+v", b)
	}
	sum := s.E.Summary()
	if len(sum.Pids) != 1 || sum.Pids[0].Requests != 2 || sum.Pids[0].ReadRequests != 2 || sum.Pids[0].Calls != 0 || sum.Pids[0].DiskBytesRead != 8192 {
		t.Errorf("pid totals %+v", sum.Pids)
	}
}

// An application reuses one iocb (and its user data) for request after
// request: each reap goes to the oldest request of that iocb not reaped.
func TestAioReusedIocb(t *testing.T) {
	s := enginetest.NewStream()
	cb := func(off uint64) enginetest.Iocb {
		return enginetest.Iocb{Addr: 0xa0, UserData: 1, Off: off, Bytes: 4096}
	}
	for i, call := range []uint64{100<<32 | 10, 100<<32 | 20} {
		off := uint64(i) * 4096
		s.E.HandleOp(aioRead(call, 0, off, 100+uint64(i)*1000, 200+uint64(i)*1000))
		s.E.HandleIssue(dio(uint64(i+1), call+1, 800+uint64(i)*8, 150+uint64(i)*1000))
		s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 1, 90+uint64(i)*1000, 210+uint64(i)*1000, cb(off)))
		s.E.HandleComplete(enginetest.Done(uint64(i+1), 400+uint64(i)*1000, 0))
	}
	s.E.HandleAioReap(enginetest.AioReap(ctx, 3000, enginetest.Reaped{Addr: 0xa0, UserData: 1, Res: 4096}))
	s.E.HandleAioReap(enginetest.AioReap(ctx, 3100, enginetest.Reaped{Addr: 0xa0, UserData: 1, Res: -5}))
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Offset != 0 || reqs[0].ReapNs != 3000 || reqs[1].Offset != 4096 || reqs[1].ReapNs != 3100 ||
		reqs[1].Result != (record.Result{Error: "EIO", Known: true}) {
		t.Fatalf("requests %+v", reqs)
	}
}

// A thread's op_id sequence starts anywhere in its 32 bits (bpf/op.h) and
// wraps inside them: the iocbs of an io_submit at the top of the range get
// ids tid<<32 | 0, 1, ... as the kernel numbers them, never (tid+1)<<32.
// Counted in 64 bits, iocb 1 here was another thread's id and each request
// was printed twice, once without its bio (a reviewer, 2026-12-07).
func TestAioIocbIDsWrap(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 0xfffffffe)
	for k := uint64(0); k < 3; k++ {
		s.E.HandleOp(aioRead(call, k, k*4096, 100+k*100, 200+k*100))
		s.E.HandleIssue(dio(k+1, kernelIocbID(call, k), 800+k*8, 150+k*100))
		s.E.HandleComplete(enginetest.Done(k+1, 400+k*100, 0))
	}
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 3, 90, 500,
		enginetest.Iocb{Addr: 0xa0, UserData: 1, Off: 0, Bytes: 4096}, enginetest.Iocb{Addr: 0xa1, UserData: 2, Off: 4096, Bytes: 4096},
		enginetest.Iocb{Addr: 0xa2, UserData: 3, Off: 8192, Bytes: 4096}))
	s.E.HandleAioReap(enginetest.AioReap(ctx, 900, enginetest.Reaped{Addr: 0xa0, UserData: 1, Res: 4096},
		enginetest.Reaped{Addr: 0xa1, UserData: 2, Res: 4096}, enginetest.Reaped{Addr: 0xa2, UserData: 3, Res: 4096}))
	reqs := s.Requests()
	want := []uint64{100<<32 | 0xffffffff, 100 << 32, 100<<32 | 1}
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3: %+v", len(reqs), reqs)
	}
	for i, r := range reqs {
		if r.OpID != want[i] || len(r.Bios) != 1 || r.SubmitOpID != call || r.ReapNs != 900 {
			t.Errorf("request %d: op_id %#x (want %#x), %d bios, submit %#x, reap %d", i, r.OpID, want[i], len(r.Bios), r.SubmitOpID, r.ReapNs)
		}
	}
}

// Another thread reaps a request before the submitting thread's io_submit
// has returned (its submit record comes later in the stream): the reap
// waits for it.
func TestAioReapBeforeSubmit(t *testing.T) {
	s, call := completedRead()
	s.E.HandleAioReap(enginetest.AioReap(ctx, 350, enginetest.Reaped{Addr: 0xa0, UserData: 3, Res: 4096}))
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests printed before their submit record", n)
	}
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 1, 90, 400, enginetest.Iocb{Addr: 0xa0, UserData: 3, Off: 0, Bytes: 4096}))
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].ReapNs != 350 || reqs[0].UserData != 3 || len(reqs[0].Bios) != 1 || len(reqs[0].Unavailable) != 0 {
		t.Fatalf("requests %+v", reqs)
	}
}

// Lost events: a request never reaped is printed after HoldNs with its
// result unavailable; one whose submit record was lost is printed at the
// end from its EV_OP; an iocb io_submit refused is no request.
func TestAioLost(t *testing.T) {
	s, call := completedRead()
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 1, 90, 400,
		enginetest.Iocb{Addr: 0xa0, UserData: 3, Off: 0, Bytes: 4096}, enginetest.Iocb{Addr: 0xb0, UserData: 4, Off: 4096, Bytes: 4096}))
	s.E.Tick(400 + s.E.HoldNs + 1)
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Result.Known || !contains(reqs[0].Unavailable, "result") || !contains(reqs[0].Unavailable, "reap_ns") {
		t.Fatalf("unreaped request: %+v", reqs)
	}
	call2 := uint64(100<<32 | 20)
	s.E.HandleOp(aioRead(call2, 0, 0, 2e10, 2e10+100))
	s.E.HandleIssue(dio(2, call2+1, 800, 2e10+50))
	s.E.HandleComplete(enginetest.Done(2, 2e10+300, 0))
	s.E.Flush()
	reqs = s.Requests()
	if len(reqs) != 2 || reqs[1].OpID != call2+1 || len(reqs[1].Bios) != 1 || !contains(reqs[1].Unavailable, "submit_op_id") {
		t.Fatalf("request without its submit record: %+v", reqs[1:])
	}
}

// A buffered batch: iocb 0 missed (its EV_OP), iocb 1 was a cache hit
// that no marker named (no EV_OP): it is a hit on the same file.
func TestAioHitWithoutOp(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 10)
	o := enginetest.Named(enginetest.Op(call+1, bpf.IopathOpSysSYS_AIO_READ, 0, 4096, 4096, 100, 200), "app", "/data/f")
	o.BiosQueued = 1
	enginetest.AddRange(o, 0, 1, engine.RangeAdded)
	s.E.HandleOp(o)
	s.E.HandleIssue(enginetest.Issue(1, 150, enginetest.FlRead, enginetest.Own{Op: call + 1, Bio: 0xb1, Sector: 8, Bytes: 4096, Queue: 140}))
	s.E.HandleComplete(enginetest.Done(1, 180, 0))
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, 2, 90, 300,
		enginetest.Iocb{Addr: 0xa0, UserData: 1, Off: 0, Bytes: 4096}, enginetest.Iocb{Addr: 0xb0, UserData: 2, Off: 40960, Bytes: 4096}))
	s.E.HandleAioReap(enginetest.AioReap(ctx, 400, enginetest.Reaped{Addr: 0xa0, UserData: 1, Res: 4096}, enginetest.Reaped{Addr: 0xb0, UserData: 2, Res: 4096}))
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("want 2 requests, got %+v", reqs)
	}
	miss, hit := reqs[0], reqs[1]
	if miss.UserData != 1 || miss.Cache.PagesMissed != 1 || len(miss.Bios) != 1 {
		t.Errorf("the miss: %+v", miss)
	}
	if hit.UserData != 2 || hit.Path != "/data/f" || hit.Ino != 42 || hit.Cache.PagesHit != 1 || hit.Cache.PagesRequested != 1 ||
		len(hit.Bios) != 0 || !contains(hit.Unavailable, "complete_ns") || contains(hit.Unavailable, "cache") {
		t.Errorf("the hit: %+v", hit)
	}
	if tot := s.E.Summary().Pids[0]; tot.PagesHit != 1 || tot.PagesMissed != 1 || tot.Requests != 2 {
		t.Errorf("pid totals %+v", tot)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// uringSubmit is the EV_URING_SUBMIT of request id (a 4 KiB read at off).
func uringSubmit(id, req, call uint64, off int64, ts uint64) *bpf.IopathUringSubmitEv {
	return &bpf.IopathUringSubmitEv{Type: uint32(bpf.IopathEvTypeEV_URING_SUBMIT), Pid: 100, Tid: uint32(id >> 32), OwnerTid: uint32(id >> 32), Opcode: 22,
		Req: req, Ctx: ctx, UserData: id & 0xff, OpId: id, SubmitOpId: call, Ts: ts, Offset: off, Len: 4096, Fd: 3}
}

func uringComplete(id, req uint64, segs uint32, res int64, ts uint64) *bpf.IopathUringCompleteEv {
	return &bpf.IopathUringCompleteEv{Type: uint32(bpf.IopathEvTypeEV_URING_COMPLETE), Pid: 100, Tid: 100, Segs: segs,
		Req: req, OpId: id, UserData: id & 0xff, Ts: ts, Res: res}
}

// An io_uring buffered read tried inline (readahead started, one bio) and
// finished by an io-wq worker (thread 200: its part is its own op, naming
// the request): one request with both parts, run by the worker; it waits
// for the worker's part the completion announces, even when that comes
// after the completion.
func TestUringParts(t *testing.T) {
	s := enginetest.NewStream()
	call, id := uint64(100<<32|9), uint64(100<<32|10)
	s.E.HandleUringSubmit(uringSubmit(id, 0xf00, call, 8192, 100))
	inline := enginetest.Named(enginetest.Op(id, bpf.IopathOpSysSYS_URING_READ, 8192, 4096, 4096, 100, 150), "app", "/data/f")
	inline.ReqId, inline.BiosQueued = id, 1
	enginetest.AddRange(inline, 2, 4, engine.RangeAdded)
	s.E.HandleOp(inline)
	s.E.HandleIssue(enginetest.Issue(1, 140, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id, Bio: 0xb1, Sector: 16, Bytes: 16384, Queue: 130}))
	s.E.HandleUringPunt(&bpf.IopathUringPuntEv{Type: uint32(bpf.IopathEvTypeEV_URING_PUNT), Pid: 100, Req: 0xf00, OpId: id, Ts: 150})
	s.E.HandleUringEnter(enginetest.UringEnter(call, 1, 1, 0, 0, 90, 160)) // the call returns (asynccalls.go)
	s.E.HandleComplete(enginetest.Done(1, 300, 0))
	s.E.HandleUringComplete(uringComplete(id, 0xf00, 2, 4096, 400))
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests printed before the worker's part", n)
	}
	worker := enginetest.Named(enginetest.Op(200<<32|1, bpf.IopathOpSysSYS_URING_READ, 8192, 4096, 4096, 310, 390), "iou-wrk-100", "/data/f")
	worker.Tid, worker.ReqId, worker.BlockedNs = 200, id, 50
	s.E.HandleOp(worker)
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("want 1 request, got %+v", reqs)
	}
	q := reqs[0]
	if q.Engine != record.EngineIOUring || q.OpID != id || q.SubmitOpID != call || q.Worker != record.WorkerIOWQ || q.WorkerTid != 200 ||
		q.CompleteNs != 400 || q.Result != (record.Result{Bytes: 4096, Known: true}) || len(q.Bios) != 1 || q.Cache.PagesMissed != 1 ||
		q.Cache.PagesRequested != 1 || q.Cache.PagesAdded != 4 || q.BlockedNs != 50 || !contains(q.Unavailable, "reap_ns") {
		t.Errorf("request %+v", q)
	}
	if tot := s.E.Summary().Pids[0]; tot.Requests != 1 || tot.DiskBytesRead != 16384 || tot.PagesMissed != 1 {
		t.Errorf("pid totals %+v", tot)
	}
}

// An io_uring request whose completion was lost: released after HoldNs
// with result and complete_ns unavailable.
func TestUringLostCompletion(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(100<<32 | 10)
	s.E.HandleUringSubmit(uringSubmit(id, 0xf00, 0, 0, 100))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_URING_READ, 0, 4096, 4096, 100, 150)
	o.ReqId = id
	s.E.HandleOp(o)
	s.E.Tick(150 + s.E.HoldNs + 1)
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Result.Known || !contains(reqs[0].Unavailable, "complete_ns") || !contains(reqs[0].Unavailable, "result") {
		t.Fatalf("requests %+v", reqs)
	}
}

// An io-wq worker's IO no event named (req_id 0): its bios are
// unattributed, under their cause, never lost.
func TestUringUnnamedPart(t *testing.T) {
	s := enginetest.NewStream()
	o := enginetest.Op(200<<32|1, bpf.IopathOpSysSYS_URING_READ, 0, 0, 0, 100, 200)
	o.Tid, o.BiosQueued = 200, 1
	s.E.HandleOp(o)
	s.E.HandleIssue(dio(1, 200<<32|1, 800, 150))
	s.E.HandleComplete(enginetest.Done(1, 300, 0))
	s.E.Flush()
	sum := s.E.Summary()
	if len(s.Requests()) != 0 || sum.UnattributedBios != 1 || sum.UnattributedCauses["io_uring_worker"].Bytes != 4096 ||
		sum.Pids[0].Unattributed != 1 || sum.Pids[0].DiskBytesRead != 4096 {
		t.Errorf("requests %+v, summary %+v", s.Requests(), sum)
	}
}

// An O_DIRECT io_uring read forced to io-wq (IOSQE_ASYNC): its inline
// part (the submitter's, direct, no IO) and the worker's part that ran the
// IO, sent without its file because the request completed (and left
// bpf/uring.c's map) before the worker moved on, so it looks buffered: one
// page requested, none inserted. The request is direct and has no
// page-cache hit, in either order of the parts, and the file is known.
func TestUringDirectNoHits(t *testing.T) {
	for _, workerFirst := range []bool{false, true} {
		s := enginetest.NewStream()
		call, id := uint64(100<<32|9), uint64(100<<32|10)
		s.E.HandleUringSubmit(uringSubmit(id, 0xf00, call, 8192, 100))
		inline := enginetest.Named(enginetest.Op(id, bpf.IopathOpSysSYS_URING_READ, 8192, 4096, 4096, 100, 110), "app", "/data/f")
		inline.ReqId, inline.F_flags = id, 040000 // O_DIRECT
		worker := enginetest.Op(200<<32|1, bpf.IopathOpSysSYS_URING_READ, 8192, 4096, 4096, 120, 390)
		worker.Tid, worker.ReqId, worker.Ino, worker.Dev, worker.BiosQueued = 200, id, 0, 0, 1
		s.E.HandleUringPunt(&bpf.IopathUringPuntEv{Type: uint32(bpf.IopathEvTypeEV_URING_PUNT), Pid: 100, Req: 0xf00, OpId: id, Ts: 110})
		s.E.HandleUringEnter(enginetest.UringEnter(call, 1, 1, 0, 0, 90, 115)) // the call returns (asynccalls.go)
		parts := []*bpf.IopathOp{inline, worker}
		if workerFirst {
			parts = []*bpf.IopathOp{worker, inline}
		}
		for _, o := range parts {
			s.E.HandleOp(o)
			if o == worker {
				s.E.HandleIssue(dio(1, worker.OpId, 16, 130))
				s.E.HandleComplete(enginetest.Done(1, 300, 0))
			}
		}
		s.E.HandleUringComplete(uringComplete(id, 0xf00, 2, 4096, 400))
		reqs := s.Requests()
		if len(reqs) != 1 {
			t.Fatalf("worker first %v: want 1 request, got %+v", workerFirst, reqs)
		}
		q := reqs[0]
		if !q.Direct || q.Cache.PagesRequested != 0 || q.Cache.PagesHit != 0 || q.Cache.PagesMissed != 0 || q.Ino != 42 || q.Path != "/data/f" || len(q.Bios) != 1 {
			t.Errorf("worker first %v: request %+v", workerFirst, q)
		}
		if tot := s.E.Summary().Pids[0]; tot.PagesHit != 0 || tot.Requests != 1 || tot.DiskBytesRead != 4096 {
			t.Errorf("worker first %v: pid totals %+v", workerFirst, tot)
		}
	}
}

// An io_uring request with no part at all (its events lost) on a
// buffered file: its cache is unavailable, not assumed a hit as a libaio
// iocb no marker named is.
func TestUringWithoutPartNoHit(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 9)
	first, second := uint64(100<<32|10), uint64(100<<32|11)
	s.E.HandleUringSubmit(uringSubmit(first, 0xf00, call, 0, 100))
	o := enginetest.Named(enginetest.Op(first, bpf.IopathOpSysSYS_URING_READ, 0, 4096, 4096, 100, 150), "app", "/data/f")
	o.ReqId = first
	s.E.HandleOp(o)
	s.E.HandleUringComplete(uringComplete(first, 0xf00, 1, 4096, 160))
	s.E.HandleUringSubmit(uringSubmit(second, 0xf08, call, 4096, 170))
	s.E.HandleUringComplete(uringComplete(second, 0xf08, 0, 4096, 180))
	s.E.HandleUringEnter(enginetest.UringEnter(call, 2, 2, 0, 0, 90, 190))
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("want 2 requests, got %+v", reqs)
	}
	if q := reqs[1]; q.Cache.PagesHit != 0 || q.Cache.PagesRequested != 0 || !contains(q.Unavailable, "cache") || q.Ino != 42 {
		t.Errorf("request without part %+v", q)
	}
}

// An SQPOLL request: the iou-sqp thread (tid 300) submitted and ran it for
// the ring's owner (thread 101 of process 100, "app"): the request and the
// process's summary row are the owner's, the thread is the worker. Where
// the kernel does not say who set the ring up, tid is unavailable, not
// the worker's.
func TestUringSQPollOwner(t *testing.T) {
	for _, owner := range []uint32{101, 0} {
		s := enginetest.NewStream()
		id := uint64(300<<32 | 5)
		sub := uringSubmit(id, 0xf00, 0, 0, 100)
		sub.SqThread, sub.OwnerTid = 1, owner
		copy(sub.Comm[:], []int8{'a', 'p', 'p'})
		s.E.HandleUringSubmit(sub)
		o := enginetest.Named(enginetest.Op(id, bpf.IopathOpSysSYS_URING_READ, 0, 4096, 4096, 100, 150), "iou-sqp-101", "/data/f")
		o.ReqId, o.Tid, o.F_flags = id, 300, 040000
		s.E.HandleOp(o)
		s.E.HandleUringComplete(uringComplete(id, 0xf00, 1, 4096, 160))
		reqs := s.Requests()
		if len(reqs) != 1 {
			t.Fatalf("owner %d: want 1 request, got %+v", owner, reqs)
		}
		q := reqs[0]
		if q.Tid != owner || q.WorkerTid != 300 || q.Comm != "app" || q.Worker != record.WorkerSQPoll || q.SubmitOpID != 0 ||
			contains(q.Unavailable, "tid") != (owner == 0) {
			t.Errorf("owner %d: request %+v", owner, q)
		}
		if ps := s.E.Summary().Pids[0]; ps.Comm != "app" {
			t.Errorf("owner %d: pid row comm %q", owner, ps.Comm)
		}
	}
}

func TestUringReadFixedAndEOF(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 9)
	for i, res := range []int64{4096, 0} {
		id := call + 1 + uint64(i)
		sub := uringSubmit(id, 0xf00+uint64(i), call, int64(i)*1<<20, 100)
		sub.Opcode = 4 // IORING_OP_READ_FIXED
		s.E.HandleUringSubmit(sub)
		o := enginetest.Named(enginetest.Op(id, bpf.IopathOpSysSYS_URING_READ, uint64(i)<<20, 4096, 4096, 100, 150), "app", "/data/f")
		o.ReqId = id
		s.E.HandleOp(o)
		s.E.HandleUringComplete(uringComplete(id, 0xf00+uint64(i), 1, res, 200))
	}
	s.E.HandleUringEnter(enginetest.UringEnter(call, 2, 2, 0, 0, 90, 210))
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("want 2 requests, got %+v", reqs)
	}
	if c := reqs[0].Cache; reqs[0].Op != "read_fixed" || c.PagesRequested != 1 || c.PagesHit != 1 {
		t.Errorf("hit request %+v", reqs[0])
	}
	if c := reqs[1].Cache; c.PagesRequested != 0 || c.PagesHit != 0 || c.PagesMissed != 0 {
		t.Errorf("read past EOF: cache %+v", c)
	}
	if tot := s.E.Summary().Pids[0]; tot.Requests != 2 || tot.ReadRequests != 2 || tot.PagesHit != 1 {
		t.Errorf("pid totals %+v", tot)
	}
}

func TestUnattributedSyscallNamed(t *testing.T) {
	s := enginetest.NewStream()
	flags := uint32(bpf.IopathUnattributedCauseCAUSE_SYSCALL)<<uint32(bpf.IopathOwnFlagOWN_CAUSE_SHIFT) | 426<<uint32(bpf.IopathOwnFlagOWN_SYSNR_SHIFT)
	s.E.HandleIssue(enginetest.Issue(1, 110, enginetest.FlRead, enginetest.Own{Bio: 0xb1, Sector: 8, Bytes: 4096, Queue: 100, Flags: flags}))
	s.E.HandleComplete(enginetest.Done(1, 200, 0))
	s.E.Flush()
	if c := s.E.Summary().UnattributedCauses; c["syscall:io_uring_enter"].Bytes != 4096 {
		t.Errorf("causes %+v", c)
	}
}

// A linked chain (IOSQE_IO_LINK) whose head fails, as bpf/uring.c reports
// it: each request's part opened at its submission and closed empty by the
// next one's; the head's direct read at the end of the file (0 bytes: a
// short read breaks the chain) has a second part where its direct IO
// begins; the two members complete with -ECANCELED without having run.
// Three records: the head's 0 bytes, the members' ECANCELED, none with a
// bio, and none with its bios unavailable (each had its part).
func TestUringLinkedChainFailed(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 9)
	head, m1, m2 := call+1, call+2, call+3
	part := func(opID, req uint64, start, end uint64) *bpf.IopathOp {
		o := enginetest.Named(enginetest.Op(opID, bpf.IopathOpSysSYS_URING_READ, 16<<20, 4096, 4096, start, end), "app", "/data/f")
		o.ReqId, o.F_flags = req, 040000 // O_DIRECT
		return o
	}
	for i, id := range []uint64{head, m1, m2} {
		s.E.HandleUringSubmit(uringSubmit(id, 0xf00+uint64(i), call, 16<<20, 100+uint64(i)*10))
		s.E.HandleOp(part(id, id, 100+uint64(i)*10, 105+uint64(i)*10))
	}
	s.E.HandleOp(part(call+4, head, 130, 140)) // the head's issue: a fresh op_id, its req_id
	s.E.HandleUringComplete(uringComplete(head, 0xf00, 2, 0, 140))
	s.E.HandleUringComplete(uringComplete(m1, 0xf01, 1, -125, 141)) // ECANCELED
	s.E.HandleUringComplete(uringComplete(m2, 0xf02, 1, -125, 142))
	s.E.HandleUringEnter(enginetest.UringEnter(call, 3, 3, 0, 0, 90, 150))
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("want 3 requests, got %+v", reqs)
	}
	want := map[uint64]record.Result{head: {Known: true}, m1: {Error: "ECANCELED", Known: true}, m2: {Error: "ECANCELED", Known: true}}
	for _, q := range reqs {
		if q.Result != want[q.OpID] || q.Bios == nil || len(q.Bios) != 0 || contains(q.Unavailable, "bios") || !q.Direct {
			t.Errorf("request %+v", q)
		}
	}
	if tot := s.E.Summary().Pids[0]; tot.Requests != 3 || tot.DiskBytesRead != 0 || tot.BytesReturned != 0 {
		t.Errorf("pid totals %+v", tot)
	}
}

// A reap of 200 events, sent as 13 EV_AIO_REAP records of up to 16, is one
// io_getevents record with 200 completed. The main build reports up to 4096
// events per call, the compat build 128 (the rest counted in truncations);
// with 128 taken as the limit for both, the main build's reap came out as
// two records with one op_id, the second's ids "unavailable" (a breaker).
func TestAioReapManyEvents(t *testing.T) {
	const n = 200
	for _, c := range []struct {
		compat bool
		sent   int // events the kernel side sends (AIO_MAX_IOCBS of the build)
	}{{false, n}, {true, 128}} {
		s := enginetest.NewStream()
		s.E.SetCompat(c.compat)
		s.E.AllCalls = true // io_getevents records are streamed with --all
		for first := 0; first < c.sent; first += 16 {
			ev := &bpf.IopathAioReapEv{Type: uint32(bpf.IopathEvTypeEV_AIO_REAP), Pid: 100, Tid: 100, Ctx: ctx, Ts: 500,
				Ret: n, First: uint32(first), N: uint32(min(16, c.sent-first)), MinNr: 1, StartNs: 400, OpId: 100<<32 | 7}
			s.E.HandleAioReap(ev)
		}
		s.E.Flush()
		var reaps []*record.AsyncCall
		for _, r := range s.Recs {
			if a, ok := r.(*record.AsyncCall); ok && a.Syscall == "io_getevents" {
				reaps = append(reaps, a)
			}
		}
		if len(reaps) != 1 || reaps[0].Completed != n || reaps[0].OpID != 100<<32|7 {
			t.Errorf("compat %v: %d io_getevents records, want 1 with %d completed: %+v", c.compat, len(reaps), n, reaps)
		}
	}
}
