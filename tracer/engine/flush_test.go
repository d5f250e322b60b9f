package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// The flush request of 6.18's blk_kick_flush: REQ_OP_FLUSH | REQ_PREFLUSH.
const flFlushRq = 2 | 1<<18

// flushDone is an EV_FLUSH_DONE: bio (of call op) ended at done after the
// flush request rq ran from issue to complete (rq 0: no flush served it).
func flushDone(op, bio, queue, done, rq, issue, complete uint64, bytes uint32) *bpf.IopathFlushDoneEv {
	return &bpf.IopathFlushDoneEv{Type: uint32(bpf.IopathEvTypeEV_FLUSH_DONE), Dev: enginetest.Dev, Bio: bio, OpId: op,
		QueueNs: queue, DoneNs: done, FlushRq: rq, FlushIssueNs: issue, FlushDoneNs: complete, FlushFlags: flFlushRq,
		RqFlags: enginetest.FlWrite | enginetest.FlSync, Bytes: bytes, Pid: 100, Tid: uint32(op >> 32)}
}

func flushBios(c *record.Syscall) []record.Bio {
	var out []record.Bio
	for _, b := range c.Bios {
		if b.Kind == "flush" {
			out = append(out, b)
		}
	}
	return out
}

// fdatasync's empty PREFLUSH bio is never issued: the flush request that
// served it (rwbs FF, no bio) becomes the call's flush bio, and the call is
// released as soon as its record arrives, with no incomplete bio.
func TestFlushRequestWithNoBio(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	id := uint64(7)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: id, Bio: 0xb1, Sector: 800, Bytes: 4096, Queue: 105}))
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	s.E.HandleFlushDone(flushDone(id, 0xb2, 210, 400, 0xf1, 220, 390, 0))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_FDATASYNC, 0, 0, 0, 100, 420)
	o.BiosQueued = 2
	s.E.HandleOp(o)
	calls := s.Syscalls()
	if len(calls) != 1 {
		t.Fatalf("want the call released at its record, got %d records", len(calls))
	}
	c := calls[0]
	fl := flushBios(c)
	if len(fl) != 1 || fl[0].Rwbs != "FF" || fl[0].IssueNs != 220 || fl[0].CompleteNs != 390 || fl[0].D2CNs != 170 || fl[0].Q2CNs != 190 {
		t.Fatalf("flush bio: %+v", c.Bios)
	}
	if len(c.Bios) != 2 || c.Bios[0].Kind != "data" {
		t.Fatalf("bios: %+v", c.Bios)
	}
	if c.DeviceFlush != record.FlushDone {
		t.Fatalf("device_flush %q", c.DeviceFlush)
	}
	if n := s.E.Counters().IncompleteBios; n != 0 {
		t.Fatalf("incomplete bios %d", n)
	}
}

// Several callers' flushes waiting at once are served by one flush request:
// each call reports it, with the same device time.
func TestFlushMergedForSeveralWaiters(t *testing.T) {
	s := enginetest.NewStream()
	a, b := uint64(7)<<32|1, uint64(8)<<32|1
	s.E.HandleFlushDone(flushDone(a, 0xb1, 100, 500, 0xf1, 300, 480, 0))
	s.E.HandleFlushDone(flushDone(b, 0xb2, 150, 501, 0xf1, 300, 480, 0))
	for _, id := range []uint64{b, a} {
		o := enginetest.Op(id, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, 90, 510)
		o.BiosQueued = 1
		s.E.HandleOp(o)
	}
	calls := s.Syscalls()
	if len(calls) != 2 {
		t.Fatalf("records: %d", len(calls))
	}
	for _, c := range calls {
		fl := flushBios(c)
		if len(fl) != 1 || fl[0].IssueNs != 300 || fl[0].CompleteNs != 480 || c.DeviceFlush != record.FlushDone {
			t.Fatalf("call %x: %+v", c.OpID, c.Bios)
		}
	}
	if n := s.E.Counters().IncompleteBios; n != 0 {
		t.Fatalf("incomplete bios %d", n)
	}
}

// A bio with data in a flush sequence (jbd2's PREFLUSH|FUA commit block on a
// device without FUA) completes its data, then ends after the post-flush:
// the call waits for that end and reports the flush as one more bio.
func TestFlushSequenceWithData(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(7)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: id, Bio: 0xb1, Sector: 800, Bytes: 4096, Queue: 105, Flags: engine.OwnJournal | engine.OwnFlushSeq}))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, 100, 150)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	if len(s.Syscalls()) != 0 {
		t.Fatal("released before the end of its flush sequence")
	}
	s.E.HandleFlushDone(flushDone(id, 0xb1, 105, 400, 0xf1, 250, 390, 4096))
	calls := s.Syscalls()
	if len(calls) != 1 {
		t.Fatalf("records: %d", len(calls))
	}
	c := calls[0]
	if len(c.Bios) != 2 || c.Bios[0].Kind != "journal" || c.Bios[0].CompleteNs != 200 || c.Bios[1].Kind != "flush" || c.Bios[1].IssueNs != 250 {
		t.Fatalf("bios: %+v", c.Bios)
	}
	if n := s.E.Counters().IncompleteBios; n != 0 {
		t.Fatalf("incomplete bios %d", n)
	}
}

// On a device without a volatile cache the kernel sends no flush: the story
// says none was needed; sync_file_range never asks for one.
func TestNoFlushNeeded(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write through" }
	s.E.HandleOp(enginetest.Op(uint64(7)<<32|1, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, 100, 150))
	s.E.HandleOp(enginetest.Op(uint64(7)<<32|2, bpf.IopathOpSysSYS_SYNC_FILE_RANGE, 0, 0, 0, 200, 250))
	calls := s.Syscalls()
	if len(calls) != 2 || calls[0].DeviceFlush != record.FlushNotNeeded || calls[1].DeviceFlush != record.FlushNotRequested {
		t.Fatalf("records: %+v", calls)
	}
}

// A request completed on another CPU while its issue was being recorded
// has its completion first in the stream: applied when the issue arrives.
func TestCompletionBeforeIssue(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(7)<<32 | 1
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: id, Bio: 0xb1, Sector: 800, Bytes: 4096, Queue: 105}))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_FDATASYNC, 0, 0, 0, 100, 250)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	calls := s.Syscalls()
	if len(calls) != 1 || calls[0].Bios[0].CompleteNs != 200 || calls[0].Bios[0].D2CNs != 90 {
		t.Fatalf("records %+v", calls)
	}
	if c := s.E.Counters(); c.OrphanCompletes != 0 || c.IncompleteBios != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// The stream Debian 6.12 sent before the loader set RQF_FLUSH_SEQ from BTF
// (TestTraceColdOneByteRead failed there): its rq_flags enum is anonymous, a
// CO-RE relocation fell back to bit 4 (__RQF_SCHED_TAGS with mq-deadline),
// so the read's bio came flagged as in a flush sequence and its owner was
// kept at issue. The call waited for a flush end that never comes, and when
// jbd2 queued a metadata write at the freed bio's address, that write
// inherited the owner (same bio, same queue time) and was listed under the
// read. A read never enters a flush sequence: the call is released when its
// read completes, with its one bio.
func TestReadRequestNotInFlushSequence(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(7)<<32 | 1
	read := enginetest.Op(id, bpf.IopathOpSysSYS_READ, 0, 1, 1, 100, 900)
	read.BiosQueued = 1
	enginetest.AddRange(read, 0, 4, engine.RangeAdded)
	s.E.HandleIssue(enginetest.Issue(0xa, 200, enginetest.FlRead|enginetest.FlRahead,
		enginetest.Own{Op: id, Bio: 0xb1, Sector: 264192, Bytes: 16384, Queue: 150, Flags: engine.OwnFlushSeq}))
	s.E.HandleComplete(enginetest.Done(0xa, 800, 0))
	s.E.HandleOp(read)
	calls := s.Syscalls()
	if len(calls) != 1 {
		t.Fatalf("read not released when its bio completed: %d records", len(calls))
	}
	// jbd2's write at the same address, with the stale owner, 0.8 s later.
	s.E.HandleIssue(enginetest.Issue(0xb, 800e6, enginetest.FlWrite|enginetest.FlSync|1<<12,
		enginetest.Own{Op: id, Bio: 0xb1, Sector: 1572960, Bytes: 4096, Queue: 150, Flags: engine.OwnFlushSeq}))
	s.E.HandleComplete(enginetest.Done(0xb, 801e6, 0))
	s.E.Flush()
	calls = s.Syscalls()
	if len(calls) != 1 {
		t.Fatalf("records: %d", len(calls))
	}
	c := calls[0]
	if len(c.Bios) != 1 || c.Bios[0].Rwbs != "RA" || c.Bios[0].Bytes != 16384 || c.Bios[0].CompleteNs != 800 {
		t.Fatalf("bios: %+v", c.Bios)
	}
	if n := s.E.Counters().IncompleteBios; n != 0 {
		t.Fatalf("incomplete bios %d", n)
	}
}

// unseenFlush is bpf/flush.c's report of a flush request (rq, issued at
// issue) issued again at reused with no completion seen in between.
func unseenFlush(rq, issue, reused uint64) *bpf.IopathFlushDoneEv {
	return &bpf.IopathFlushDoneEv{Type: uint32(bpf.IopathEvTypeEV_FLUSH_DONE), Dev: enginetest.Dev, FlushRq: rq,
		FlushIssueNs: issue, FlushFlags: flFlushRq, DoneNs: reused, OwnFlags: ownFlushUnseen}
}

// A flush request whose completion no BPF program saw (the build host's
// kernel, docs/kernel-notes.md): the fdatasync it served never gets its
// empty flush bio's end either. The flush named the call's bio at its
// issue, so the call gets it as its device flush (completed before the
// flush request's next issue and before the call returned, no device
// time); a call that started after that flush's issue and was not named by
// it does not, and waits on.
func TestFlushCompletionUnseen(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	served, later := uint64(7)<<32|1, uint64(8)<<32|1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: served, Bio: 0xb1, Sector: 800, Bytes: 4096, Queue: 105}))
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	s.E.HandleFlushDone(serves(served, 0xb2, 210, 0xf1, 220, 0, 0, 0))
	s.E.HandleFlushDone(unseenFlush(0xf1, 220, 400))
	o := enginetest.Op(later, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, 300, 500)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	o = enginetest.Op(served, bpf.IopathOpSysSYS_FDATASYNC, 0, 0, 0, 100, 420)
	o.BiosQueued = 2 // its data and its empty PREFLUSH bio
	s.E.HandleOp(o)
	calls := s.Syscalls()
	if len(calls) != 1 || calls[0].OpID != served {
		t.Fatalf("released %+v, want only the call the flush served", calls)
	}
	c := calls[0]
	fl := flushBios(c)
	if len(fl) != 1 || fl[0].IssueNs != 220 || fl[0].CompleteNs != 0 || fl[0].CompletedBeforeNs != 400 || fl[0].Rwbs != "FF" || fl[0].D2CNs != 0 {
		t.Fatalf("flush bio %+v", c.Bios)
	}
	if c.DeviceFlush != record.FlushDone {
		t.Errorf("device_flush %q", c.DeviceFlush)
	}
	s.E.Flush()
	sum := s.E.Summary()
	if sum.CompletionsUnseen != 1 || sum.IncompleteBios != 1 || sum.IncompleteCauses["never_issued"] != 1 {
		t.Errorf("completions unseen %d, incomplete %d %v: want 1, and the later call's flush bio never issued", sum.CompletionsUnseen, sum.IncompleteBios, sum.IncompleteCauses)
	}
}

// A write to an O_DSYNC file that wrote nothing (0 bytes asked) synced
// nothing: the kernel calls generic_write_sync only after bytes were
// written. Its record says dsync and has no device_flush; one that wrote
// has one. Before, the empty write said `unavailable` on a write-back disk
// (a flush that may have served it unseen).
func TestEmptyDsyncWriteNoDeviceFlush(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	o := enginetest.Op(uint64(7)<<32|1, bpf.IopathOpSysSYS_PWRITE64, 0, 0, 0, 100, 200)
	o.F_flags = 010000 // O_DSYNC
	s.E.HandleOp(o)
	w := enginetest.Op(uint64(7)<<32|2, bpf.IopathOpSysSYS_PWRITE64, 0, 4096, 4096, 300, 400)
	w.F_flags = 010000
	s.E.HandleOp(w)
	calls := released(t, s, 2)
	if !calls[0].Dsync || calls[0].DeviceFlush != "" {
		t.Errorf("empty write: dsync %v, device_flush %q: want true and none given", calls[0].Dsync, calls[0].DeviceFlush)
	}
	if calls[1].DeviceFlush != record.FlushUnavailable {
		t.Errorf("4 KiB write: device_flush %q, want unavailable (no flush seen)", calls[1].DeviceFlush)
	}
}
