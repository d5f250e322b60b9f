package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// A request's completion that never arrives, then its address issued again
// as a new request with another call's bio (seen under fio/pgbench fsync
// load on 6.18): the first call's bio is released as incomplete with its
// cause, the second call keeps its own bio and completion. Before, the
// second issue was taken for a requeue: the first bio got the second's
// completion and the second call's bio was never seen (incomplete).
func TestCompletionNotReceived(t *testing.T) {
	s := enginetest.NewStream()
	a, b := uint64(7)<<32|1, uint64(8)<<32|1
	const rq = 0xa
	s.E.HandleIssue(enginetest.Issue(rq, 1000, enginetest.FlWrite, enginetest.Own{Op: a, Bio: 0xb1, Sector: 8, Bytes: 4096, Queue: 990}))
	// No completion of the first request reaches the stream.
	s.E.HandleIssue(enginetest.Issue(rq, 5000, enginetest.FlWrite, enginetest.Own{Op: b, Bio: 0xb2, Sector: 800, Bytes: 4096, Queue: 4990}))
	s.E.HandleComplete(enginetest.Done(rq, 5200, 0))
	for _, id := range []uint64{a, b} {
		o := enginetest.Op(id, bpf.IopathOpSysSYS_PWRITE64, 0, 4096, 4096, 900, 6000)
		o.BiosQueued = 1
		s.E.HandleOp(o)
	}
	calls := s.Syscalls()
	if len(calls) != 2 {
		t.Fatalf("%d calls released, want both at once", len(calls))
	}
	for _, c := range calls {
		if len(c.Bios) != 1 {
			t.Fatalf("call %x: bios %+v", c.OpID, c.Bios)
		}
		bio := c.Bios[0]
		switch c.OpID {
		case a:
			if bio.CompleteNs != 0 || bio.Sector != 8 || bio.Requeues != 0 {
				t.Errorf("first call's bio %+v: want no completion (its own never came), no requeue", bio)
			}
		case b:
			if bio.CompleteNs != 5200 || bio.Sector != 800 || bio.D2CNs != 200 {
				t.Errorf("second call's bio %+v: want its completion at 5200", bio)
			}
		}
	}
	sum := s.E.Summary()
	if sum.IncompleteBios != 1 || sum.IncompleteCauses["completion_not_received"] != 1 ||
		sum.IncompleteCauses["never_issued"] != 0 || sum.IncompleteCauses["no_completion"] != 0 {
		t.Errorf("incomplete %d, causes %v: want 1 completion_not_received", sum.IncompleteBios, sum.IncompleteCauses)
	}
	if s.E.Counters().Requeues != 0 {
		t.Errorf("counted as a requeue")
	}
}

// A real requeue (issued again with no owned bio left) stays a requeue.
func TestRequeueKeepsBios(t *testing.T) {
	s := enginetest.NewStream()
	a := uint64(7)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xa, 1000, enginetest.FlWrite, enginetest.Own{Op: a, Bio: 0xb1, Bytes: 4096, Queue: 990}))
	s.E.HandleIssue(enginetest.Issue(0xa, 3000, enginetest.FlWrite))
	s.E.HandleComplete(enginetest.Done(0xa, 3300, 0))
	o := enginetest.Op(a, bpf.IopathOpSysSYS_PWRITE64, 0, 4096, 4096, 900, 4000)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	calls := s.Syscalls()
	if len(calls) != 1 || len(calls[0].Bios) != 1 || calls[0].Bios[0].Requeues != 1 || calls[0].Bios[0].CompleteNs != 3300 {
		t.Fatalf("calls %+v", calls)
	}
	if sum := s.E.Summary(); sum.IncompleteBios != 0 {
		t.Errorf("incomplete %d after a requeue", sum.IncompleteBios)
	}
}
