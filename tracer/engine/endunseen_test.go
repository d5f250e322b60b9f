package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// heldReads issues one 4 KiB read request on disk kdev per issue time
// (request address 0xa0+i, bio 0xb0+i, i counted from first) for call
// (i+1)<<32|1, whose record (a pread64 that queued that bio) arrives at
// once: calls held for their bios.
func heldReads(s *enginetest.Stream, kdev uint32, first int, issues ...uint64) []uint64 {
	var ids []uint64
	for j, ts := range issues {
		i := first + j
		id := uint64(i+1)<<32 | 1
		ev := enginetest.Issue(0xa0+uint64(i), ts, enginetest.FlRead, enginetest.Own{Op: id, Bio: 0xb0 + uint64(i), Sector: uint64(i) * 8, Bytes: 4096, Queue: ts - 5})
		ev.Dev = kdev
		s.E.HandleIssue(ev)
		o := enginetest.Op(id, bpf.IopathOpSysSYS_PREAD64, uint64(i)*4096, 4096, 4096, ts-10, ts+1e6)
		o.BiosQueued = 1
		s.E.HandleOp(o)
		ids = append(ids, id)
	}
	return ids
}

// bioOf returns the bio of call id among the released records.
func bioOf(t *testing.T, s *enginetest.Stream, id uint64) (record.Bio, bool) {
	t.Helper()
	for _, c := range s.Syscalls() {
		if c.OpID == id {
			if len(c.Bios) != 1 {
				t.Fatalf("call %x: bios %+v", id, c.Bios)
			}
			return c.Bios[0], true
		}
	}
	return record.Bio{}, false
}

// Three requests held at the end of a trace on a disk that counts one in
// flight: the two oldest had ended, unseen (the sandbox's kernel runs no BPF
// program for some completions, docs/kernel-notes.md) and their addresses
// were never issued again. They complete before the moment of the count;
// the newest stays held and is released incomplete by the end's Flush.
// Before, all three were released incomplete (no_completion).
func TestEndUnseenBeyondInflight(t *testing.T) {
	s := enginetest.NewStream()
	ids := heldReads(s, enginetest.Dev, 0, 1000, 2000, 3000)
	if got := s.E.HeldDisks(); len(got) != 1 || got[0] != enginetest.Dev {
		t.Fatalf("held disks %v, want [%d]", got, enginetest.Dev)
	}
	if n := s.E.EndUnseen(enginetest.Dev, 1, 5000, 5100); n != 2 {
		t.Fatalf("EndUnseen completed %d requests, want 2", n)
	}
	for _, id := range ids[:2] {
		b, ok := bioOf(t, s, id)
		if !ok || b.CompletedBeforeNs != 5100 || b.CompleteNs != 0 || b.D2CNs != 0 {
			t.Errorf("call %x: bio %+v (released %v): want completed before 5100, no device time", id, b, ok)
		}
	}
	if _, ok := bioOf(t, s, ids[2]); ok {
		t.Errorf("the newest call was released: its request may be in flight")
	}
	if _, rqs := s.E.Pending(); rqs != 1 {
		t.Errorf("%d requests held, want the newest", rqs)
	}
	s.E.Flush()
	if b, ok := bioOf(t, s, ids[2]); !ok || b.CompleteNs != 0 || b.CompletedBeforeNs != 0 {
		t.Errorf("newest call: bio %+v (released %v): want released without a completion", b, ok)
	}
	sum := s.E.Summary()
	if sum.CompletionsUnseen != 2 || sum.IncompleteBios != 1 || sum.IncompleteCauses["no_completion"] != 1 || s.E.Counters().RequestsUnseenAtEnd != 2 {
		t.Errorf("completions unseen %d, incomplete %d %v, requests unseen at end %d: want 2, 1 no_completion, 2",
			sum.CompletionsUnseen, sum.IncompleteBios, sum.IncompleteCauses, s.E.Counters().RequestsUnseenAtEnd)
	}
}

// Requests truly in flight at the end (a device that holds 16, as a loop
// device whose backing filesystem is frozen): the disk counts 16 in
// flight, so none is completed; nor when it counts more (other processes'
// requests). They are released incomplete as before.
func TestEndUnseenKeepsInFlight(t *testing.T) {
	for _, inflight := range []uint64{16, 40} {
		s := enginetest.NewStream()
		var issues []uint64
		for i := range 16 {
			issues = append(issues, uint64(1000+i*10))
		}
		heldReads(s, enginetest.Dev, 0, issues...)
		if n := s.E.EndUnseen(enginetest.Dev, inflight, 5000, 5100); n != 0 {
			t.Errorf("disk counts %d in flight: %d of 16 held requests completed", inflight, n)
		}
		s.E.Flush()
		if sum := s.E.Summary(); sum.CompletionsUnseen != 0 || sum.IncompleteCauses["no_completion"] != 16 || s.E.Counters().RequestsUnseenAtEnd != 0 {
			t.Errorf("disk counts %d: completions unseen %d, incomplete %v: want 0, 16 no_completion", inflight, sum.CompletionsUnseen, sum.IncompleteCauses)
		}
	}
}

// Only requests issued before the count was read weigh against it (one
// issued after may have started after the read), only on the counted disk,
// and not a requeued request waiting to be issued again (the kernel counts
// it in flight only once it is).
func TestEndUnseenWhichRequests(t *testing.T) {
	s := enginetest.NewStream()
	const other = 8<<20 | 16 // another disk, 8:16
	ids := heldReads(s, enginetest.Dev, 0, 1000, 2000, 6000)
	otherIDs := heldReads(s, other, 3, 1500)
	// Request 0xa1 (call ids[1]) requeued: waiting to be issued again.
	s.E.HandleRequeue(&bpf.IopathRqDoneEv{Type: uint32(bpf.IopathEvTypeEV_RQ_REQUEUE), Rq: 0xa1, Ts: 2500})
	// The disk counts 0 in flight at 5000-5100: of its requests only 0xa0
	// (issued at 1000) had ended; 0xa2 was issued after the count began.
	if n := s.E.EndUnseen(enginetest.Dev, 0, 5000, 5100); n != 1 {
		t.Fatalf("completed %d requests, want 1 (the one issued before the count, not requeued)", n)
	}
	if b, ok := bioOf(t, s, ids[0]); !ok || b.CompletedBeforeNs != 5100 {
		t.Errorf("call %x: bio %+v (released %v): want completed before 5100", ids[0], b, ok)
	}
	for _, id := range append([]uint64{ids[1], ids[2]}, otherIDs...) {
		if _, ok := bioOf(t, s, id); ok {
			t.Errorf("call %x released: its request was not weighed against this disk's count", id)
		}
	}
	if _, rqs := s.E.Pending(); rqs != 3 {
		t.Errorf("%d requests held, want 3", rqs)
	}
}

// A call released after HoldNs with its bio incomplete, whose request is
// then completed unseen at the end: counted once, as incomplete (its
// record is out), not again as a completion unseen.
func TestEndUnseenAfterRelease(t *testing.T) {
	s := enginetest.NewStream()
	ids := heldReads(s, enginetest.Dev, 0, 1000)
	s.E.Tick(1000 + 1e6 + s.E.HoldNs + 1)
	if _, ok := bioOf(t, s, ids[0]); !ok {
		t.Fatalf("call not released after HoldNs")
	}
	if n := s.E.EndUnseen(enginetest.Dev, 0, 20e9, 20e9+100); n != 1 {
		t.Fatalf("completed %d requests, want 1", n)
	}
	sum := s.E.Summary()
	if sum.IncompleteBios != 1 || sum.CompletionsUnseen != 0 {
		t.Errorf("incomplete %d, completions unseen %d: want 1 and 0 (counted once)", sum.IncompleteBios, sum.CompletionsUnseen)
	}
	if _, rqs := s.E.Pending(); rqs != 0 {
		t.Errorf("%d requests held", rqs)
	}
}
