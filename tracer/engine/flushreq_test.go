package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// The marks of bpf/events.h's enum own_flag the flush events carry, as
// numbers (TestFlushMarks checks them against the engine's names).
const (
	ownJournal     = 2
	ownFlushSeq    = 4
	ownFlushUnseen = 8
	ownFlushServes = 16
	ownFlushEnd    = 32
	ownCommitWait  = 64
	ownCommitRec   = 128
	ownCommitNeed  = 4096
)

// jbd2Tid is the jbd2 thread of the synthetic streams.
const jbd2Tid = 900

// serves is bpf/flush.c's report, at the issue of flush request rq (issued
// at issue), that it serves the owned bio bio of call op (0: none) queued
// at queue; bytes is the bio's request's data (0: an empty flush bio); a
// commit record (ownCommitRec in flags) is jbd2's, of its commit number commit.
func serves(op, bio, queue, rq, issue uint64, bytes, flags, commit uint32) *bpf.IopathFlushDoneEv {
	ev := &bpf.IopathFlushDoneEv{Type: uint32(bpf.IopathEvTypeEV_FLUSH_DONE), Dev: enginetest.Dev, Bio: bio, OpId: op,
		QueueNs: queue, DoneNs: issue, FlushRq: rq, FlushIssueNs: issue, FlushFlags: flFlushRq, Bytes: bytes,
		Pid: 100, Tid: uint32(op >> 32), OwnFlags: flags | ownFlushServes, FlushTid: 82}
	if flags&ownCommitRec != 0 {
		ev.Pid, ev.Tid, ev.CommitTid = jbd2Tid, jbd2Tid, commit
	}
	return ev
}

// flushEnd is bpf/flush.c's report that flush request rq, issued at issue,
// completed at done.
func flushEnd(rq, issue, done uint64) *bpf.IopathFlushDoneEv {
	return &bpf.IopathFlushDoneEv{Type: uint32(bpf.IopathEvTypeEV_FLUSH_DONE), Dev: enginetest.Dev, FlushRq: rq,
		FlushIssueNs: issue, FlushDoneNs: done, DoneNs: done, FlushFlags: flFlushRq, OwnFlags: ownFlushEnd, FlushTid: 82}
}

// commitWait is bpf/flush.c's report that the jbd2 thread woke call op at
// at, after the end of its commit number commit.
func commitWait(op uint64, commit uint32, at uint64) *bpf.IopathFlushDoneEv {
	return &bpf.IopathFlushDoneEv{Type: uint32(bpf.IopathEvTypeEV_FLUSH_DONE), OpId: op, DoneNs: at, Pid: 100,
		Tid: uint32(op >> 32), OwnFlags: ownCommitWait, FlushTid: jbd2Tid, CommitTid: commit}
}

// commitNeed is bpf/flush.c's report, at the end of ext4's fsync of call
// op (started at start), that it needed transaction commit (committed).
func commitNeed(op uint64, commit uint32, start, at uint64) *bpf.IopathFlushDoneEv {
	return &bpf.IopathFlushDoneEv{Type: uint32(bpf.IopathEvTypeEV_FLUSH_DONE), OpId: op, QueueNs: start, DoneNs: at, Pid: 100,
		Tid: uint32(op >> 32), OwnFlags: ownCommitNeed, FlushTid: jbd2Tid, CommitTid: commit}
}

// commitRecord plays jbd2's commit number commit, attributed to
// call owner (0: none): its record 0xc0+commit, PREFLUSH|FUA on a device
// without FUA, is served by a pre-flush issued at at+10 (done at+50), then
// written (at+60..at+90), then served by a post-flush (at+100..at+140);
// it ends at at+150. The flush request is 0xf1, the hardware queue's one.
func commitRecord(s *enginetest.Stream, owner uint64, commit uint32, at uint64) {
	bio, flags := 0xc0+uint64(commit), uint32(ownCommitRec)
	if owner != 0 {
		flags |= ownJournal
	}
	s.E.HandleFlushDone(serves(owner, bio, at, 0xf1, at+10, 4096, flags, commit))
	s.E.HandleFlushDone(flushEnd(0xf1, at+10, at+50))
	s.E.HandleIssue(enginetest.Issue(0xb0+uint64(commit), at+60, enginetest.FlWrite|enginetest.FlSync,
		enginetest.Own{Op: owner, Bio: bio, Sector: 9000, Bytes: 4096, Queue: at, Flags: flags | ownFlushSeq, Pid: jbd2Tid}))
	s.E.HandleComplete(enginetest.Done(0xb0+uint64(commit), at+90, 0))
	s.E.HandleFlushDone(serves(owner, bio, at, 0xf1, at+100, 4096, flags, commit))
	s.E.HandleFlushDone(flushEnd(0xf1, at+100, at+140))
	end := flushDone(owner, bio, at, at+150, 0xf1, at+100, at+140, 4096)
	end.OwnFlags, end.Tid, end.Pid = flags|ownFlushServes, jbd2Tid, jbd2Tid
	s.E.HandleFlushDone(end)
}

// dataSync plays a call's own data bio (rq 0xa0+n, bio 0xd0+n), issued at
// at and completed at at+20.
func dataSync(s *enginetest.Stream, op uint64, n, at uint64) {
	s.E.HandleIssue(enginetest.Issue(0xa0+n, at, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: op, Bio: 0xd0 + n, Sector: 800 + 8*n, Bytes: 4096, Queue: at - 5}))
	s.E.HandleComplete(enginetest.Done(0xa0+n, at+20, 0))
}

// syncReturns sends the record of fsync-family call id (start to end,
// queued bios of its own).
func syncReturns(s *enginetest.Stream, id uint64, sys bpf.IopathOpSys, start, end uint64, queued uint32) {
	o := enginetest.Op(id, sys, 0, 0, 0, start, end)
	o.BiosQueued = queued
	s.E.HandleOp(o)
}

// released returns the calls' records, which must be n.
func released(t *testing.T, s *enginetest.Stream, n int) []*record.Syscall {
	t.Helper()
	calls := s.Syscalls()
	if len(calls) != n {
		t.Fatalf("%d records, want %d", len(calls), n)
	}
	return calls
}

func issues(bios []record.Bio) []uint64 {
	var out []uint64
	for _, b := range bios {
		out = append(out, b.IssueNs)
	}
	return out
}

// ext4's jbd2 commit record is PREFLUSH|FUA; on a device without FUA the
// flush machinery runs a pre-flush, the write and a post-flush: two flush
// requests, both named at their issue as serving the record, both in the
// story of the call the commit's bios are attributed to, with their device
// times.
func TestFlushPairForCommitRecord(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	w := uint64(7)<<32 | 1
	dataSync(s, w, 1, 110)
	commitRecord(s, w, 42, 200)
	syncReturns(s, w, bpf.IopathOpSysSYS_FDATASYNC, 100, 400, 1)
	c := released(t, s, 1)[0]
	fl := flushBios(c)
	if len(fl) != 2 || fl[0].IssueNs != 210 || fl[0].CompleteNs != 250 || fl[0].D2CNs != 40 ||
		fl[1].IssueNs != 300 || fl[1].CompleteNs != 340 || fl[1].D2CNs != 40 || fl[0].Rwbs != "FF" {
		t.Fatalf("flush bios %+v, want the pre-flush (210-250) and the post-flush (300-340)", fl)
	}
	if len(c.Bios) != 4 || c.Bios[0].Kind != "data" || c.Bios[2].Kind != "journal" || c.DeviceFlush != record.FlushDone {
		t.Fatalf("bios %+v, device_flush %q", c.Bios, c.DeviceFlush)
	}
	if sum := s.E.Summary(); sum.IncompleteBios != 0 || sum.CompletionsUnseen != 0 || sum.UnattributedBios != 0 {
		t.Errorf("incomplete %d, unseen %d, unattributed %d", sum.IncompleteBios, sum.CompletionsUnseen, sum.UnattributedBios)
	}
}

// Eight threads' fdatasyncs on one ext4: most wait for a jbd2 commit
// another thread's call started (jbd2_log_wait_commit), whose bios are
// attributed to one call only. A call the jbd2 thread woke after the end of
// commit 42 gets that commit's flush requests; a call woken after commit 41
// first (it waited for a later transaction and slept again) keeps only the
// flushes of the commit it was last woken for. A commit record no call
// owns is no unattributed bio of the traced process.
func TestCallJoinedToOtherThreadsCommit(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	w, c, d := uint64(7)<<32|1, uint64(8)<<32|1, uint64(9)<<32|1
	dataSync(s, c, 2, 60)
	dataSync(s, d, 3, 70)
	commitRecord(s, 0, 41, 0) // flushes at 10 and 100
	s.E.HandleFlushDone(commitWait(d, 41, 160))
	dataSync(s, w, 1, 170)
	commitRecord(s, w, 42, 200) // flushes at 210 and 300
	s.E.HandleFlushDone(commitWait(w, 42, 360))
	s.E.HandleFlushDone(commitWait(c, 42, 361))
	s.E.HandleFlushDone(commitWait(d, 42, 362))
	for _, id := range []uint64{w, c, d} {
		syncReturns(s, id, bpf.IopathOpSysSYS_FDATASYNC, 50, 400, 1)
	}
	for _, r := range released(t, s, 3) {
		fl := flushBios(r)
		if len(fl) != 2 || fl[0].IssueNs != 210 || fl[0].CompleteNs != 250 || fl[1].IssueNs != 300 || fl[1].CompleteNs != 340 || r.DeviceFlush != record.FlushDone {
			t.Errorf("call %x: flush bios issued at %v (%+v), device_flush %q: want commit 42's, at 210 and 300", r.OpID, issues(fl), fl, r.DeviceFlush)
		}
	}
	if sum := s.E.Summary(); sum.IncompleteBios != 0 || sum.UnattributedBios != 0 {
		t.Errorf("incomplete %d, unattributed %d", sum.IncompleteBios, sum.UnattributedBios)
	}
}

// A call short of a data bio (queued, never seen issued) is not released by
// a flush whose completion went unseen: the flush names the bios it served
// at its issue, and neither call's bios are among them. Before, any ready
// fsync-family call short of a bio whose window held the flush's issue took
// it (one, or one per unseen flush for a call short of two) and was
// released early.
func TestShortOfDataBioTakesNoFlush(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	served, other, short1, short2 := uint64(7)<<32|1, uint64(10)<<32|1, uint64(8)<<32|1, uint64(9)<<32|1
	for _, id := range []uint64{short1, short2} {
		o := enginetest.Op(id, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, 100, 900)
		o.BiosQueued = map[uint64]uint32{short1: 1, short2: 2}[id] // data bios never seen issued
		s.E.HandleOp(o)
	}
	dataSync(s, served, 1, 110)
	s.E.HandleFlushDone(serves(served, 0xe1, 210, 0xf1, 220, 0, 0, 0))
	s.E.HandleFlushDone(unseenFlush(0xf1, 220, 300))
	s.E.HandleFlushDone(serves(other, 0xe2, 310, 0xf1, 320, 0, 0, 0))
	s.E.HandleFlushDone(unseenFlush(0xf1, 320, 400))
	syncReturns(s, served, bpf.IopathOpSysSYS_FDATASYNC, 100, 290, 2)
	syncReturns(s, other, bpf.IopathOpSysSYS_FDATASYNC, 305, 410, 1) // its empty flush bio
	calls := s.Syscalls()
	if len(calls) != 2 || calls[0].OpID != served || calls[1].OpID != other {
		var ids []uint64
		for _, c := range calls {
			ids = append(ids, c.OpID)
		}
		t.Fatalf("released %x, want only %x and %x (the calls short of data bios wait)", ids, served, other)
	}
	if fl := flushBios(calls[0]); len(fl) != 1 || fl[0].IssueNs != 220 || fl[0].CompletedBeforeNs != 290 {
		t.Fatalf("flush bios %+v", fl)
	}
	s.E.Flush()
	if calls = s.Syscalls(); len(calls) != 4 {
		t.Fatalf("records at the end: %d, want 4", len(calls))
	}
	for _, c := range calls[2:] {
		if len(flushBios(c)) != 0 {
			t.Errorf("call %x took a flush it did not wait for: %+v", c.OpID, c.Bios)
		}
	}
	if sum := s.E.Summary(); sum.IncompleteBios != 3 || sum.IncompleteCauses["never_issued"] != 3 {
		t.Errorf("incomplete %d %v: want the 3 data bios never issued", sum.IncompleteBios, sum.IncompleteCauses)
	}
}

// The numbers above are the engine's marks.
func TestFlushMarks(t *testing.T) {
	got := []uint32{engine.OwnJournal, engine.OwnFlushSeq, engine.OwnFlushUnseen, engine.OwnFlushServes, engine.OwnFlushEnd, engine.OwnCommitWait, engine.OwnCommitRec, engine.OwnCommitNeed}
	want := []uint32{ownJournal, ownFlushSeq, ownFlushUnseen, ownFlushServes, ownFlushEnd, ownCommitWait, ownCommitRec, ownCommitNeed}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("mark %d: engine %d, test %d", i, got[i], want[i])
		}
	}
}

// On the build host the kernel hides some completions from BPF (a softirq
// on top of PID 1's threads, docs/kernel-notes.md): here the commit's
// post-flush completes unseen. A call woken after the commit's end waited
// for it, so its record releases it with that flush completed before the
// call returned.
func TestCommitFlushCompletionUnseen(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	c := uint64(8)<<32 | 1
	dataSync(s, c, 2, 60)
	s.E.HandleFlushDone(serves(0, 0xc1, 200, 0xf1, 210, 4096, ownCommitRec, 1))
	s.E.HandleFlushDone(flushEnd(0xf1, 210, 250))
	s.E.HandleIssue(enginetest.Issue(0xb1, 260, enginetest.FlWrite|enginetest.FlSync,
		enginetest.Own{Bio: 0xc1, Sector: 9000, Bytes: 4096, Queue: 200, Flags: ownCommitRec | ownFlushSeq, Pid: jbd2Tid}))
	s.E.HandleComplete(enginetest.Done(0xb1, 290, 0))
	s.E.HandleFlushDone(serves(0, 0xc1, 200, 0xf1, 300, 4096, ownCommitRec, 1))
	s.E.HandleFlushDone(commitWait(c, 1, 360))
	syncReturns(s, c, bpf.IopathOpSysSYS_FDATASYNC, 50, 400, 1)
	fl := flushBios(released(t, s, 1)[0])
	if len(fl) != 2 || fl[0].CompleteNs != 250 || fl[1].IssueNs != 300 || fl[1].CompleteNs != 0 || fl[1].CompletedBeforeNs != 400 {
		t.Fatalf("flush bios %+v", fl)
	}
	if sum := s.E.Summary(); sum.CompletionsUnseen != 1 || sum.IncompleteBios != 0 || sum.UnattributedBios != 0 {
		t.Errorf("unseen %d, incomplete %d, unattributed %d", sum.CompletionsUnseen, sum.IncompleteBios, sum.UnattributedBios)
	}
}

// Calls that raced their commit: d needed transaction 42 but was woken
// after commit 41 (and not run again until 42 had ended: no wake names
// 42); c never slept (42 was committing when it asked). ext4 says at their
// end which transaction each needed: both get commit 42's flush requests,
// and d loses commit 41's. Before, d said `flushed` with commit 41's
// flushes (its data was on the device only after them) and c had none.
func TestCommitNeedOverridesWake(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	w, c, d := uint64(7)<<32|1, uint64(8)<<32|1, uint64(9)<<32|1
	dataSync(s, d, 3, 70)
	commitRecord(s, 0, 41, 0) // flushes at 10 and 100
	s.E.HandleFlushDone(commitWait(d, 41, 160))
	dataSync(s, w, 1, 170)
	dataSync(s, c, 2, 180)
	commitRecord(s, w, 42, 200) // flushes at 210 and 300
	s.E.HandleFlushDone(commitWait(w, 42, 360))
	for _, id := range []uint64{w, c, d} {
		s.E.HandleFlushDone(commitNeed(id, 42, 50, 390))
		syncReturns(s, id, bpf.IopathOpSysSYS_FDATASYNC, 50, 400, 1)
	}
	for _, r := range released(t, s, 3) {
		fl := flushBios(r)
		if len(fl) != 2 || fl[0].IssueNs != 210 || fl[1].IssueNs != 300 || fl[1].CompleteNs != 340 || r.DeviceFlush != record.FlushDone {
			t.Errorf("call %x: flush bios issued at %v, device_flush %q: want commit 42's, at 210 and 300", r.OpID, issues(fl), r.DeviceFlush)
		}
	}
}

// A transaction committed before the call began is not what the call
// waited for (it found it committed): its commit's flushes are not the
// call's, and a need of a commit never seen changes nothing.
func TestCommitNeedBeforeCall(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	c, d := uint64(8)<<32|1, uint64(9)<<32|1
	commitRecord(s, 0, 41, 0) // flushes at 10 and 100, ended at 150
	dataSync(s, c, 2, 210)
	s.E.HandleFlushDone(commitNeed(c, 41, 200, 290))
	syncReturns(s, c, bpf.IopathOpSysSYS_FDATASYNC, 200, 300, 1)
	dataSync(s, d, 3, 410)
	s.E.HandleFlushDone(commitWait(d, 41, 450)) // a wake (made up) stays when the need names no seen commit
	s.E.HandleFlushDone(commitNeed(d, 43, 400, 490))
	syncReturns(s, d, bpf.IopathOpSysSYS_FDATASYNC, 400, 500, 1)
	rs := released(t, s, 2)
	if fl := flushBios(rs[0]); len(fl) != 0 {
		t.Errorf("call c: flush bios at %v, want none (transaction 41 was committed before it began)", issues(fl))
	}
	if fl := flushBios(rs[1]); len(fl) != 2 || fl[0].IssueNs != 10 {
		t.Errorf("call d: flush bios at %v, want the wake's (commit 41: 10, 100)", issues(fl))
	}
}

// jbd2's commit record is attributed to the latest fsync-family call on
// the device (OwnJournal), which may need another transaction: with eight
// threads appending, x started its fdatasync after commit 41 had begun and
// needed transaction 42; y found its transaction committed before it
// began and sent its own flush. Commit 41's record was attributed to x,
// commit 43's to y. ext4 says which transaction each needed: x keeps only
// commit 42's flush requests, y only its own. Before, x listed commit
// 41's two flushes beside 42's, and y commit 43's beside its own. A
// commit whose end woke the call stays, whatever ext4's tid says.
func TestCommitNeedDropsAttributedCommit(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	x, y := uint64(7)<<32|1, uint64(8)<<32|1
	commitRecord(s, 0, 40, 0) // transaction 40: flushes at 10 and 100, before y began
	dataSync(s, x, 1, 110)
	commitRecord(s, x, 41, 200) // flushes at 210 and 300, attributed to x
	commitRecord(s, 0, 42, 400) // flushes at 410 and 500
	s.E.HandleFlushDone(commitWait(x, 42, 560))
	s.E.HandleFlushDone(commitNeed(x, 42, 100, 590))
	syncReturns(s, x, bpf.IopathOpSysSYS_FDATASYNC, 100, 600, 1)
	// y: its own empty flush bio 0xe9, served by flush request 0xf2 at
	// 720; commit 43's record, attributed to y, flushed at 810 and 900.
	s.E.HandleFlushDone(serves(y, 0xe9, 710, 0xf2, 720, 0, 0, 0))
	s.E.HandleFlushDone(flushEnd(0xf2, 720, 760))
	end := flushDone(y, 0xe9, 710, 765, 0xf2, 720, 760, 0)
	end.OwnFlags = ownFlushServes
	s.E.HandleFlushDone(end)
	commitRecord(s, y, 43, 800)
	s.E.HandleFlushDone(commitNeed(y, 40, 700, 990))
	syncReturns(s, y, bpf.IopathOpSysSYS_FDATASYNC, 700, 1000, 1)
	// w (data=journal): its writeback forced commit 44, whose end woke
	// it, while ext4's i_sync_tid still names transaction 40: 44 stays.
	w := uint64(9)<<32 | 1
	dataSync(s, w, 4, 1110)
	commitRecord(s, w, 44, 1200) // flushes at 1210 and 1300, attributed to w
	s.E.HandleFlushDone(commitWait(w, 44, 1360))
	s.E.HandleFlushDone(commitNeed(w, 40, 1100, 1390))
	syncReturns(s, w, bpf.IopathOpSysSYS_FSYNC, 1100, 1400, 1)
	rs := released(t, s, 3)
	if fl := flushBios(rs[2]); len(fl) != 2 || fl[0].IssueNs != 1210 || fl[1].IssueNs != 1300 {
		t.Errorf("w: flush bios issued at %v: want commit 44's, which woke it, at 1210 and 1300", issues(fl))
	}
	if fl := flushBios(rs[0]); len(fl) != 2 || fl[0].IssueNs != 410 || fl[1].IssueNs != 500 || rs[0].DeviceFlush != record.FlushDone {
		t.Errorf("x: flush bios issued at %v, device_flush %q: want commit 42's only, at 410 and 500", issues(fl), rs[0].DeviceFlush)
	}
	if fl := flushBios(rs[1]); len(fl) != 1 || fl[0].IssueNs != 720 || fl[0].CompleteNs != 760 || rs[1].DeviceFlush != record.FlushDone {
		t.Errorf("y: flush bios issued at %v (%+v), device_flush %q: want its own only, at 720", issues(fl), fl, rs[1].DeviceFlush)
	}
	if sum := s.E.Summary(); sum.IncompleteBios != 0 || sum.UnattributedBios != 0 {
		t.Errorf("incomplete %d, unattributed %d", sum.IncompleteBios, sum.UnattributedBios)
	}
}

// Eight threads fdatasyncing one file: ext4's transaction for a call is
// raced by the other threads' changes (bpf/flush.c then reports no need),
// so the wake decides. z began after commit 41 had started, needed 42, and
// had commit 41's record attributed as the device's latest caller; woken
// after 41's end and again after 42's, it keeps 42's flush requests only.
// Before, it listed 41's two beside 42's.
func TestCommitWaitDropsEarlierAttributedCommit(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	z := uint64(7)<<32 | 1
	dataSync(s, z, 1, 110)
	commitRecord(s, z, 41, 200) // flushes at 210 and 300, attributed to z
	s.E.HandleFlushDone(commitWait(z, 41, 360))
	commitRecord(s, 0, 42, 400) // flushes at 410 and 500
	s.E.HandleFlushDone(commitWait(z, 42, 560))
	syncReturns(s, z, bpf.IopathOpSysSYS_FDATASYNC, 100, 600, 1)
	c := released(t, s, 1)[0]
	if fl := flushBios(c); len(fl) != 2 || fl[0].IssueNs != 410 || fl[1].IssueNs != 500 || c.DeviceFlush != record.FlushDone {
		t.Errorf("flush bios issued at %v, device_flush %q: want commit 42's only, at 410 and 500", issues(fl), c.DeviceFlush)
	}
}

// A commit record's flushes left out of a call's record (the commit is
// not the one it needed) still hold the call until they complete, as
// before: that commit's journal bios attributed to the call are issued
// meanwhile and are the call's, not unattributed bios of no record.
func TestHiddenCommitFlushKeepsCallWaiting(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	w := uint64(7)<<32 | 1
	dataSync(s, w, 1, 110)
	// Commit 43's record, attributed to w, is served by a pre-flush at 210.
	s.E.HandleFlushDone(serves(w, 0xc0+43, 200, 0xf1, 210, 4096, ownCommitRec|ownJournal, 43))
	s.E.HandleFlushDone(commitNeed(w, 40, 100, 215)) // ext4: transaction 40, committed before w began
	syncReturns(s, w, bpf.IopathOpSysSYS_FDATASYNC, 100, 220, 1)
	// A journal bio of commit 43, queued while w ran, issued after its return.
	s.E.HandleIssue(enginetest.Issue(0xb7, 230, enginetest.FlWrite|enginetest.FlSync,
		enginetest.Own{Op: w, Bio: 0xb9, Sector: 9000, Bytes: 1024, Queue: 205, Flags: ownJournal, Pid: jbd2Tid}))
	s.E.HandleComplete(enginetest.Done(0xb7, 240, 0))
	s.E.HandleFlushDone(flushEnd(0xf1, 210, 250))
	s.E.Flush()
	c := released(t, s, 1)[0]
	if fl := flushBios(c); len(fl) != 0 {
		t.Errorf("flush bios issued at %v: want none (commit 43 is not the one w needed)", issues(fl))
	}
	journal := 0
	for _, b := range c.Bios {
		if b.Kind == "journal" {
			journal++
		}
	}
	if journal != 1 {
		t.Errorf("bios %+v: want commit 43's journal bio among them", c.Bios)
	}
	if sum := s.E.Summary(); sum.UnattributedBios != 0 || sum.IncompleteBios != 0 || sum.CompletionsUnseen != 0 {
		t.Errorf("unattributed %d %v, incomplete %d, unseen %d", sum.UnattributedBios, sum.UnattributedCauses, sum.IncompleteBios, sum.CompletionsUnseen)
	}
}

// The engine remembers 256 journal commits: a call that needs one it has
// forgotten is counted (map_evictions.journal_commits), one that needs a
// commit never seen is not.
func TestForgottenCommitCounted(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	for c := uint32(1); c <= 257; c++ {
		commitRecord(s, 0, c, uint64(c)*1000)
	}
	d := uint64(9)<<32 | 1
	dataSync(s, d, 3, 300_000)
	// Begun at 1005, before commit 1's flushes (1010, 1100): it may have
	// waited for it.
	s.E.HandleFlushDone(commitNeed(d, 1, 1005, 300_100)) // forgotten: commit 257 pushed it out
	s.E.HandleFlushDone(commitNeed(d, 900, 1005, 300_100))
	if n := s.E.Summary().MapEvictions["journal_commits"]; n != 1 {
		t.Errorf("map_evictions.journal_commits %d, want 1", n)
	}
	s.E.HandleFlushDone(commitNeed(d, 2, 1005, 300_100)) // still remembered
	if n := s.E.Summary().MapEvictions["journal_commits"]; n != 1 {
		t.Errorf("map_evictions.journal_commits %d after a remembered commit, want 1", n)
	}
}

// A call that needs a commit forgotten long before it began (an fdatasync
// of a file overwritten in place needs the transaction that allocated its
// blocks) lost nothing: that commit's flushes would be dropped from its
// record anyway (commitNeed: committed before the call). It is not counted
// in map_evictions.journal_commits; each such call counted one before.
func TestOldCommitNeedNotForgotten(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	for c := uint32(1); c <= 257; c++ {
		commitRecord(s, 0, c, uint64(c)*1000)
	}
	for i := uint64(0); i < 3; i++ {
		d := uint64(9)<<32 | (1 + i)
		start := 300_000 + i*1000
		s.E.HandleIssue(enginetest.Issue(0xa0+i, start+10, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: d, Bio: 0xd0 + i, Sector: 800 + 8*i, Bytes: 4096, Queue: start + 5}))
		s.E.HandleComplete(enginetest.Done(0xa0+i, start+30, 0))
		s.E.HandleFlushDone(commitNeed(d, 1, start, start+100)) // commit 1: flushes at 1010 and 1100
		syncReturns(s, d, bpf.IopathOpSysSYS_FDATASYNC, start, start+200, 1)
	}
	released(t, s, 3)
	if n := s.E.Summary().MapEvictions["journal_commits"]; n != 0 {
		t.Errorf("map_evictions.journal_commits %d: want 0 (the commit each call needed ended before it began)", n)
	}
}

// sync(2) woken first by a journal on a write-back disk (its commit's two
// flush requests joined), then by a journal on a write-through disk (its
// commit has no flush request: none known): the first journal's flushes
// stay in its record. Before, a wake with no flush known dropped every
// earlier join, of any device.
func TestSyncKeepsJoinAfterFlushlessCommit(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	op := uint64(7)<<32 | 1
	commitRecord(s, 0, 41, 0) // device A: flushes issued at 10 and 100
	s.E.HandleFlushDone(commitWait(op, 41, 160))
	wb := commitWait(op, 3, 270) // jbd2 thread 901's commit 3, on a disk that needs no flush
	wb.FlushTid = 901
	s.E.HandleFlushDone(wb)
	o := enginetest.Op(op, bpf.IopathOpSysSYS_SYNC, 0, 0, 0, 5, 300)
	o.Fd, o.Ino, o.Dev = -1, 0, 0
	s.E.HandleOp(o)
	calls := released(t, s, 1)
	if got := issues(flushBios(calls[0])); len(got) != 2 || got[0] != 10 || got[1] != 100 {
		t.Errorf("sync's flush bios issued at %v: want device A's commit's (10, 100)", got)
	}
	if calls[0].DeviceFlush != record.FlushDone {
		t.Errorf("device_flush %q, want flushed", calls[0].DeviceFlush)
	}
}

// A later wake by the same journal with no flush known (its flushes
// forgotten) still replaces that journal's earlier join: the call waited
// for the later commit.
func TestFlushlessWakeReplacesSameJournal(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	op := uint64(7)<<32 | 1
	commitRecord(s, 0, 41, 0)
	s.E.HandleFlushDone(commitWait(op, 41, 160))
	s.E.HandleFlushDone(commitWait(op, 42, 270)) // same jbd2 thread, no flush known
	syncReturns(s, op, bpf.IopathOpSysSYS_FDATASYNC, 5, 300, 0)
	calls := released(t, s, 1)
	if got := issues(flushBios(calls[0])); len(got) != 0 {
		t.Errorf("flush bios issued at %v: want commit 41's dropped (the call waited for 42)", got)
	}
}

// The engine remembers 1024 flush request runs: one forgotten while a call
// still waits for its completion is counted (map_evictions.flush_requests);
// the call's flush completes, unseen, at its record as before.
func TestForgottenFlushCounted(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	op := uint64(7)<<32 | 1
	s.E.HandleFlushDone(serves(op, 0xe1, 100, 0xf2, 110, 0, 0, 0)) // the call's empty flush bio
	for i := uint64(0); i < 1024; i++ {
		s.E.HandleFlushDone(serves(0, 0, 200, 0xf1, 200+i, 0, 0, 0))
	}
	if n := s.E.Summary().MapEvictions["flush_requests"]; n != 1 {
		t.Errorf("map_evictions.flush_requests %d, want 1", n)
	}
	syncReturns(s, op, bpf.IopathOpSysSYS_FDATASYNC, 90, 2000, 0)
	calls := released(t, s, 1)
	if fl := flushBios(calls[0]); len(fl) != 1 || fl[0].CompletedBeforeNs == 0 {
		t.Errorf("flush bios %+v: want the one flush, completed unseen", fl)
	}
}

// sync(2) waits for every journal's commit (ext4_sync_fs): woken by the
// jbd2 threads of two filesystems on two devices, it keeps both commits'
// flush requests; a later wake by the first journal replaces only that
// journal's.
func TestSyncJoinsEveryJournal(t *testing.T) {
	s := enginetest.NewStream()
	s.E.WriteCache = func(uint32) string { return "write back" }
	const devB, jbd2B = enginetest.Dev + 1, 901
	op := uint64(7)<<32 | 1
	commitRecord(s, 0, 41, 0) // device A: flushes issued at 10 and 100
	// Device B's commit 7: its record served by one flush request (0xf2, issued at 210).
	ev := serves(0, 0xc7, 200, 0xf2, 210, 4096, ownCommitRec, 7)
	ev.Dev, ev.Pid, ev.Tid, ev.CommitTid = devB, jbd2B, jbd2B, 7
	s.E.HandleFlushDone(ev)
	end := flushEnd(0xf2, 210, 260)
	end.Dev = devB
	s.E.HandleFlushDone(end)
	s.E.HandleFlushDone(commitWait(op, 41, 160))
	wb := commitWait(op, 7, 270)
	wb.FlushTid = jbd2B
	s.E.HandleFlushDone(wb)
	o := enginetest.Op(op, bpf.IopathOpSysSYS_SYNC, 0, 0, 0, 5, 300)
	o.Fd, o.Ino, o.Dev = -1, 0, 0
	s.E.HandleOp(o)
	calls := released(t, s, 1)
	fl := flushBios(calls[0])
	if got := issues(fl); len(got) != 3 || got[0] != 10 || got[1] != 100 || got[2] != 210 {
		t.Errorf("sync's flush bios issued at %v: want both journals' commits (10, 100 on A; 210 on B)", got)
	}
}
