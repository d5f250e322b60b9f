package engine_test

import (
	"slices"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

func asyncCalls(s *enginetest.Stream) []*record.AsyncCall {
	var out []*record.AsyncCall
	for _, r := range s.Recs {
		if c, ok := r.(*record.AsyncCall); ok {
			out = append(out, c)
		}
	}
	return out
}

// twoSubmits is a stream of two io_submit calls of one iocb each: the
// first's direct read went to the disk (one bio), the second's iocb was a
// buffered read served from the page cache (no EV_OP: a hit); one
// io_getevents (min_nr 2) reaped both.
func twoSubmits(all bool) *enginetest.Stream {
	s := enginetest.NewStream()
	s.E.AllCalls = all
	disk, hit := uint64(100<<32|10), uint64(100<<32|20)
	s.E.HandleOp(aioRead(disk, 0, 0, 100, 200))
	s.E.HandleIssue(dio(1, disk+1, 800, 150))
	s.E.HandleAioSubmit(enginetest.AioSubmit(disk, ctx, 1, 90, 210, enginetest.Iocb{Addr: 0xa0, UserData: 1, Off: 0, Bytes: 4096}))
	s.E.HandleComplete(enginetest.Done(1, 300, 0))
	s.E.HandleAioSubmit(enginetest.AioSubmit(hit, ctx, 1, 400, 420, enginetest.Iocb{Addr: 0xb0, UserData: 2, Off: 8192, Bytes: 4096}))
	reap := enginetest.AioReap(ctx, 900, enginetest.Reaped{Addr: 0xa0, UserData: 1, Res: 4096}, enginetest.Reaped{Addr: 0xb0, UserData: 2, Res: 4096})
	reap.OpId, reap.StartNs, reap.MinNr = 100<<32|30, 500, 2
	s.E.HandleAioReap(reap)
	s.E.Flush()
	return s
}

// By default a submission call is printed right before the first of its
// requests that touched the disk (heading its story), and not at all when
// none did; io_getevents is not printed.
func TestAsyncCallHeadsDiskRequests(t *testing.T) {
	s := twoSubmits(false)
	calls := asyncCalls(s)
	if len(calls) != 1 {
		t.Fatalf("want the disk-touching io_submit only, got %+v", calls)
	}
	c := calls[0]
	if c.Syscall != "io_submit" || c.OpID != 100<<32|10 || c.ToSubmit != 1 || c.Submitted != 1 || c.TimeNs != 90 || c.DurationNs != 120 ||
		c.Engine != record.EngineLibaio || c.Comm != "app" {
		t.Errorf("io_submit record %+v", c)
	}
	at := slices.IndexFunc(s.Recs, func(r any) bool { _, ok := r.(*record.AsyncCall); return ok })
	q, ok := s.Recs[at+1].(*record.Request)
	if !ok || q.SubmitOpID != c.OpID {
		t.Errorf("record after the call: %+v", s.Recs[at+1])
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("want 2 requests, got %d", n)
	}
}

// With --all every call has its record: both io_submit calls, each once,
// and the io_getevents with its events, min_nr, time and the requests it
// reaped.
func TestAsyncCallAll(t *testing.T) {
	s := twoSubmits(true)
	calls := asyncCalls(s)
	if len(calls) != 3 {
		t.Fatalf("want 3 calls, got %+v", calls)
	}
	subs := map[uint64]int{}
	for _, q := range s.Requests() {
		subs[q.SubmitOpID]++
	}
	for _, c := range calls[:2] {
		if c.Syscall != "io_submit" || subs[c.OpID] != int(c.Submitted) {
			t.Errorf("call %+v, its requests %d", c, subs[c.OpID])
		}
	}
	g := calls[2]
	if g.Syscall != "io_getevents" || g.OpID != 100<<32|30 || g.MinComplete != 2 || g.Completed != 2 || g.TimeNs != 500 || g.DurationNs != 400 ||
		!slices.Equal(g.ReapedOpIDs, []uint64{100<<32 | 11, 100<<32 | 21}) || len(g.Unavailable) != 0 {
		t.Errorf("io_getevents record %+v", g)
	}
}

// A failed io_submit is printed by default, with the errno and nothing submitted.
func TestAsyncCallFailed(t *testing.T) {
	s := enginetest.NewStream()
	call := uint64(100<<32 | 10)
	s.E.HandleAioSubmit(enginetest.AioSubmit(call, ctx, -11, 90, 100, enginetest.Iocb{Addr: 0xa0, UserData: 1, Bytes: 4096}))
	s.E.Flush()
	calls := asyncCalls(s)
	if len(calls) != 1 || calls[0].Error != "EAGAIN" || calls[0].Submitted != 0 || len(s.Requests()) != 0 {
		t.Errorf("calls %+v, requests %+v", calls, s.Requests())
	}
}

// An io_uring request completed inside its io_uring_enter (before the
// call's record, sent at its exit) waits for it: the call comes first, with
// its numbers and the CQEs its thread posted during it.
func TestUringEnterBeforeItsRequests(t *testing.T) {
	s := enginetest.NewStream()
	call, id := uint64(100<<32|9), uint64(100<<32|10)
	s.E.HandleUringSubmit(uringSubmit(id, 0xf00, call, 0, 100))
	o := enginetest.Named(enginetest.Op(id, bpf.IopathOpSysSYS_URING_READ, 0, 4096, 4096, 100, 150), "app", "/data/f")
	o.F_flags, o.ReqId, o.BiosQueued = 040000, id, 1 // O_DIRECT
	s.E.HandleOp(o)
	s.E.HandleIssue(dio(1, id, 800, 120))
	s.E.HandleComplete(enginetest.Done(1, 300, 0))
	s.E.HandleUringComplete(uringComplete(id, 0xf00, 1, 4096, 310))
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests printed before their call's record", n)
	}
	s.E.HandleUringEnter(enginetest.UringEnter(call, 1, 1, 1, 1, 90, 400))
	if len(s.Recs) != 2 {
		t.Fatalf("want the call and its request, got %+v", s.Recs)
	}
	c, ok := s.Recs[0].(*record.AsyncCall)
	if !ok || c.Syscall != "io_uring_enter" || c.OpID != call || c.ToSubmit != 1 || c.Submitted != 1 || c.MinComplete != 1 ||
		!slices.Equal(c.Flags, []string{"GETEVENTS"}) || c.Completed != 1 || c.DurationNs != 310 {
		t.Fatalf("first record %+v", s.Recs[0])
	}
	if q, ok := s.Recs[1].(*record.Request); !ok || q.SubmitOpID != call || len(q.Bios) != 1 {
		t.Errorf("second record %+v", s.Recs[1])
	}
}

// An io_uring_enter record that never comes (lost): its requests are
// released HoldNs later without it, nothing else is held.
func TestUringEnterLost(t *testing.T) {
	s := enginetest.NewStream()
	call, id := uint64(100<<32|9), uint64(100<<32|10)
	s.E.HandleUringSubmit(uringSubmit(id, 0xf00, call, 0, 100))
	s.E.HandleUringComplete(uringComplete(id, 0xf00, 0, 4096, 310))
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests printed before their call's record", n)
	}
	s.E.Tick(310 + s.E.HoldNs + 1)
	if reqs := s.Requests(); len(reqs) != 1 || reqs[0].SubmitOpID != call {
		t.Fatalf("requests %+v", reqs)
	}
	s.E.Tick(310 + 2*s.E.HoldNs + 2)
	if calls := asyncCalls(s); len(calls) != 0 {
		t.Errorf("calls %+v", calls)
	}
}

// A wait-only io_uring_enter (nothing to submit) is a reaping call: printed
// with --all only.
func TestUringEnterWaitOnly(t *testing.T) {
	for _, all := range []bool{false, true} {
		s := enginetest.NewStream()
		s.E.AllCalls = all
		s.E.HandleUringEnter(enginetest.UringEnter(100<<32|9, 0, 0, 4, 1, 90, 400))
		s.E.Flush()
		if calls := asyncCalls(s); len(calls) != map[bool]int{false: 0, true: 1}[all] {
			t.Errorf("all %v: calls %+v", all, calls)
		}
	}
}
