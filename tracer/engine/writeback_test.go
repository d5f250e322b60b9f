package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// A periodic flush of one page dirtied by one write.
func TestPersistedPeriodic(t *testing.T) {
	s := enginetest.NewStream()
	w := uint64(9)<<32 | 1
	s.E.HandleOp(enginetest.WriteOp(w, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	if s.E.DirtyPending() != 1 {
		t.Fatalf("pending %d", s.E.DirtyPending())
	}
	s.E.HandleWBStart(enginetest.WBStart(35, 3, 30e9)) // WB_REASON_PERIODIC on 6.18
	s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 30e9+10, enginetest.Match{Op: w, Index: 0, Nr: 1, Dirtied: 15}))
	s.E.HandleIssue(enginetest.Issue(0xa, 30e9+20, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Bytes: 4096, Queue: 30e9 + 10, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa, 30e9+500, 0))
	p := s.Persisted()
	if len(p) != 1 || p[0].OpID != w || p[0].Reason != "periodic" || p[0].Pages != 1 || p[0].DirtyToDiskNs != 30e9+500-15 || p[0].Outcome != "written" {
		t.Fatalf("persisted %+v", p)
	}
	if s.E.DirtyPending() != 0 {
		t.Errorf("pending after writeback: %d", s.E.DirtyPending())
	}
	if s.E.Counters().UnattributedBios != 0 {
		t.Errorf("a writeback bio counted as unattributed")
	}
}

// A large folio (16 pages) dirtied by one write: one match of 16 pages.
func TestPersistedLargeFolio(t *testing.T) {
	s := enginetest.NewStream()
	w := uint64(9)<<32 | 2
	s.E.HandleOp(enginetest.WriteOp(w, 0, 65536, record.PageRange{Index: 0, Pages: 16}))
	s.E.HandleWBStart(enginetest.WBStart(35, 0, 100)) // background
	s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 110, enginetest.Match{Op: w, Index: 0, Nr: 16, Dirtied: 15}))
	s.E.HandleIssue(enginetest.Issue(0xa, 120, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Bytes: 65536, Queue: 110, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	p := s.Persisted()
	if len(p) != 1 || p[0].Pages != 16 || p[0].Reason != "background" || s.E.DirtyPending() != 0 {
		t.Fatalf("persisted %+v pending %d", p, s.E.DirtyPending())
	}
}

// A page dirtied, written back, dirtied again by a second write: two
// persisted records, each for its own call.
func TestPageDirtiedTwice(t *testing.T) {
	s := enginetest.NewStream()
	w1, w2 := uint64(9)<<32|1, uint64(9)<<32|2
	s.E.HandleOp(enginetest.WriteOp(w1, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 100, enginetest.Match{Op: w1, Index: 0, Nr: 1, Dirtied: 10}))
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Bytes: 4096, Queue: 100, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa, 150, 0))
	s.E.HandleOp(enginetest.WriteOp(w2, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 300, enginetest.Match{Op: w2, Index: 0, Nr: 1, Dirtied: 200})) // bio pointer recycled
	s.E.HandleIssue(enginetest.Issue(0xa, 310, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Bytes: 4096, Queue: 300, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa, 350, 0))
	p := s.Persisted()
	if len(p) != 2 || p[0].OpID != w1 || p[1].OpID != w2 || p[1].DirtyToDiskNs != 150 {
		t.Fatalf("persisted %+v", p)
	}
	// The same page overwritten while still dirty: the second write dirtied
	// nothing (no clean->dirty), so its data goes out with the first call.
	s2 := enginetest.NewStream()
	s2.E.HandleOp(enginetest.WriteOp(w1, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s2.E.HandleOp(enginetest.WriteOp(w2, 1, 1))
	if s2.E.DirtyPending() != 1 {
		t.Errorf("pending %d, want 1", s2.E.DirtyPending())
	}
}

// Pages truncated before writeback: "removed", no longer pending.
func TestPageTruncatedBeforeWriteback(t *testing.T) {
	s := enginetest.NewStream()
	w := uint64(9)<<32 | 3
	s.E.HandleOp(enginetest.WriteOp(w, 0, 8192, record.PageRange{Index: 0, Pages: 2}))
	for i := uint64(0); i < 2; i++ {
		s.E.HandleDirtyGone(&bpf.IopathDirtyGoneEv{Type: uint32(bpf.IopathEvTypeEV_DIRTY_GONE), Dev: enginetest.Dev, Ino: 42, Index: i, OpId: w, Ts: 50, Nr: 1, Pid: 100})
	}
	p := s.Persisted()
	if len(p) != 2 || p[0].Outcome != "removed" || s.E.DirtyPending() != 0 {
		t.Fatalf("persisted %+v pending %d", p, s.E.DirtyPending())
	}
}

// One bio carrying pages of two calls (on the same inode) and a second bio
// of another inode in the same request.
func TestBioCoveringSeveralCallsAndInodes(t *testing.T) {
	s := enginetest.NewStream()
	a, b, c := uint64(1)<<32|1, uint64(2)<<32|1, uint64(3)<<32|1
	s.E.HandleOp(enginetest.WriteOp(a, 0, 4096, record.PageRange{Index: 0, Pages: 1}))
	s.E.HandleOp(enginetest.WriteOp(b, 4096, 4096, record.PageRange{Index: 1, Pages: 1}))
	oc := enginetest.WriteOp(c, 0, 4096, record.PageRange{Index: 0, Pages: 1})
	oc.Ino = 43
	s.E.HandleOp(oc)
	s.E.HandleWBStart(enginetest.WBStart(35, 2, 1)) // sync
	s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 100, enginetest.Match{Op: a, Index: 0, Nr: 1, Dirtied: 10}, enginetest.Match{Op: b, Index: 1, Nr: 1, Dirtied: 20}))
	s.E.HandleWBBio(enginetest.WBBio(0xb2, 43, 35, 0, 101, enginetest.Match{Op: c, Index: 0, Nr: 1, Dirtied: 30}))
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite,
		enginetest.Own{Bio: 0xb1, Bytes: 8192, Queue: 100, Flags: engine.OwnWriteback},
		enginetest.Own{Bio: 0xb2, Bytes: 4096, Queue: 101, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	p := s.Persisted()
	if len(p) != 3 {
		t.Fatalf("persisted %+v", p)
	}
	got := map[uint64]uint64{}
	for _, x := range p {
		got[x.OpID] = x.Ino
		if x.Reason != "sync" || x.PersistedNs != 200 {
			t.Errorf("%+v", x)
		}
	}
	if got[a] != 42 || got[b] != 42 || got[c] != 43 || s.E.DirtyPending() != 0 {
		t.Errorf("per-call inodes %v, pending %d", got, s.E.DirtyPending())
	}
}

// fsync: the caller submits the data bio itself; reason fsync, attributed to
// the fsync call, whose record waits for the bio.
func TestPersistedByFsync(t *testing.T) {
	s := enginetest.NewStream()
	w, f := uint64(9)<<32|1, uint64(9)<<32|2
	s.E.HandleOp(enginetest.WriteOp(w, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 9, f, 100, enginetest.Match{Op: w, Index: 0, Nr: 1, Dirtied: 15}))
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: f, Bio: 0xb1, Bytes: 4096, Queue: 100, Flags: engine.OwnWriteback}))
	s.E.HandleIssue(enginetest.Issue(0xc, 120, enginetest.FlWrite|enginetest.FlSync|1<<18|1<<17, enginetest.Own{Op: f, Bio: 0xb9, Bytes: 0, Queue: 115, Flags: engine.OwnJournal}))
	s.E.HandleComplete(enginetest.Done(0xa, 300, 0))
	s.E.HandleComplete(enginetest.Done(0xc, 320, 0))
	fo := enginetest.Op(f, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, 90, 330)
	fo.BiosQueued = 1
	s.E.HandleOp(fo)
	p := s.Persisted()
	if len(p) != 1 || p[0].Reason != "fsync" || p[0].ByOpID != f {
		t.Fatalf("persisted %+v", p)
	}
	var rec *record.Syscall
	for _, c := range s.Syscalls() {
		if c.OpID == f {
			rec = c
		}
	}
	if rec == nil || len(rec.Bios) != 2 || rec.Bios[0].Kind != "data" || rec.Bios[1].Kind != "journal" {
		t.Fatalf("fsync record %+v", rec)
	}
}

// A failed write request: outcome failed with the block status.
func TestPersistFailed(t *testing.T) {
	s := enginetest.NewStream()
	w := uint64(9)<<32 | 1
	s.E.HandleOp(enginetest.WriteOp(w, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 100, enginetest.Match{Op: w, Index: 0, Nr: 1, Dirtied: 15}))
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Bytes: 4096, Queue: 100, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa, 300, 10))
	p := s.Persisted()
	if len(p) != 1 || p[0].Outcome != "failed" || p[0].Error != "BLK_STS_IOERR" {
		t.Fatalf("persisted %+v", p)
	}
}

// More matches than fit one record: continuation parts are joined.
func TestWBBioContinuation(t *testing.T) {
	s := enginetest.NewStream()
	var ms []enginetest.Match
	for i := uint64(0); i < 20; i++ {
		id := uint64(i+1)<<32 | 1
		s.E.HandleOp(enginetest.WriteOp(id, i*4096, 4096, record.PageRange{Index: i, Pages: 1}))
		ms = append(ms, enginetest.Match{Op: id, Index: i, Nr: 1, Dirtied: 10})
	}
	first := enginetest.WBBio(0xb1, 42, 35, 0, 100, ms[:16]...)
	second := enginetest.WBBio(0xb1, 42, 35, 0, 100, ms[16:]...)
	second.Part = 1
	s.E.HandleWBBio(first)
	s.E.HandleWBBio(second)
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Bytes: 81920, Queue: 100, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	if p := s.Persisted(); len(p) != 20 || s.E.DirtyPending() != 0 {
		t.Fatalf("persisted %d records, pending %d", len(p), s.E.DirtyPending())
	}
}

// A writeback bio split by the block layer: one writeback record with both
// parts' bytes, persisted when the last part completes, counted once.
func TestSplitWritebackBio(t *testing.T) {
	s := enginetest.NewStream()
	w := uint64(9)<<32 | 1
	s.E.HandleOp(enginetest.WriteOp(w, 0, 8<<20, record.PageRange{Index: 0, Pages: 2048}))
	s.E.HandleWBStart(enginetest.WBStart(35, 0, 1))
	s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 100, enginetest.Match{Op: w, Index: 0, Nr: 2048, Dirtied: 10, BioPages: 2048}))
	s.E.HandleSplit(&bpf.IopathBioSplitEv{Type: uint32(bpf.IopathEvTypeEV_BIO_SPLIT), Split: 0xb2, Parent: 0xb1, Ts: 101})
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite, enginetest.Own{Bio: 0xb2, Sector: 0, Bytes: 4 << 20, Queue: 100, Flags: engine.OwnWriteback}))
	s.E.HandleIssue(enginetest.Issue(0xb, 111, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Sector: 8192, Bytes: 4 << 20, Queue: 100, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xb, 300, 0))
	if len(s.Persisted()) != 0 {
		t.Fatal("persisted before the split-off part completed")
	}
	s.E.HandleComplete(enginetest.Done(0xa, 400, 0))
	p := s.Persisted()
	var wbs []*record.Writeback
	for _, r := range s.Recs {
		if x, ok := r.(*record.Writeback); ok {
			wbs = append(wbs, x)
		}
	}
	if len(p) != 1 || p[0].PersistedNs != 400 || p[0].Pages != 2048 || len(wbs) != 1 || len(wbs[0].Bios) != 2 {
		t.Fatalf("persisted %+v writeback %+v", p, wbs)
	}
	if sum := s.E.Summary(); sum.Files[0].DiskBytesWrite != 8<<20 || sum.Pids[0].DiskBytesWrite != 8<<20 {
		t.Errorf("disk bytes written: file %d, process %d; want 8 MiB each", sum.Files[0].DiskBytesWrite, sum.Pids[0].DiskBytesWrite)
	}
}

// A writeback bio whose request completed unseen by BPF (the sandbox's
// kernel hides some block_rq_complete events, docs/kernel-notes.md): its
// pages persist with a bound, persisted_before_ns, instead of a time.
// Before, they stayed pending forever (TestTraceCpCopy: 4096 of 51,200
// destination pages never persisted). The bound is the reuse of the
// request's address, or the end's count of requests in flight; an fsync's
// own writeback bio too; a split bio with one part seen, one unseen, is
// bounded by the later of the two.
func TestWritebackCompletionUnseen(t *testing.T) {
	w := uint64(9)<<32 | 1
	flusher := func(s *enginetest.Stream) {
		s.E.HandleOp(enginetest.WriteOp(w, 0, 1, record.PageRange{Index: 0, Pages: 1}))
		s.E.HandleWBStart(enginetest.WBStart(35, 3, 90))
		s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 100, enginetest.Match{Op: w, Index: 0, Nr: 1, Dirtied: 15}))
		s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Bytes: 4096, Queue: 100, Flags: engine.OwnWriteback}))
	}
	for _, c := range []struct {
		name   string
		feed   func(s *enginetest.Stream)
		before uint64
	}{
		{"reused", func(s *enginetest.Stream) {
			flusher(s)
			s.E.HandleIssue(enginetest.Issue(0xa, 700, enginetest.FlRead)) // the address again: the first had ended
		}, 700},
		{"end", func(s *enginetest.Stream) {
			flusher(s)
			s.E.EndUnseen(enginetest.Dev, 0, 900, 950) // the disk counted none in flight
		}, 950},
		{"fsync", func(s *enginetest.Stream) {
			f := uint64(9)<<32 | 2
			s.E.HandleOp(enginetest.WriteOp(w, 0, 1, record.PageRange{Index: 0, Pages: 1}))
			s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 9, f, 100, enginetest.Match{Op: w, Index: 0, Nr: 1, Dirtied: 15}))
			s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: f, Bio: 0xb1, Bytes: 4096, Queue: 100, Flags: engine.OwnWriteback}))
			s.E.HandleIssue(enginetest.Issue(0xa, 600, enginetest.FlRead))
		}, 600},
		{"split", func(s *enginetest.Stream) {
			s.E.HandleOp(enginetest.WriteOp(w, 0, 8192, record.PageRange{Index: 0, Pages: 2}))
			s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 35, 0, 100, enginetest.Match{Op: w, Index: 0, Nr: 2, Dirtied: 15}))
			s.E.HandleSplit(&bpf.IopathBioSplitEv{Type: uint32(bpf.IopathEvTypeEV_BIO_SPLIT), Split: 0xb2, Parent: 0xb1, Ts: 101})
			s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlWrite, enginetest.Own{Bio: 0xb2, Sector: 0, Bytes: 4096, Queue: 100, Flags: engine.OwnWriteback}))
			s.E.HandleIssue(enginetest.Issue(0xb, 111, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Sector: 8, Bytes: 4096, Queue: 100, Flags: engine.OwnWriteback}))
			s.E.HandleComplete(enginetest.Done(0xb, 300, 0))
			s.E.EndUnseen(enginetest.Dev, 0, 400, 500)
		}, 500},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := enginetest.NewStream()
			c.feed(s)
			p := s.Persisted()
			if len(p) != 1 || p[0].OpID != w || p[0].Outcome != record.OutcomeWritten || p[0].PersistedNs != 0 ||
				p[0].PersistedBeforeNs != c.before || p[0].DirtyToDiskNs != 0 {
				t.Fatalf("persisted %+v: want one, written, persisted before %d (no time)", p, c.before)
			}
			if s.E.DirtyPending() != 0 {
				t.Errorf("%d pages still pending", s.E.DirtyPending())
			}
		})
	}
}

// After the dirty_pages map overflowed, a flusher bio carries followed and
// unfollowed pages: the file's row and its writers' rows count the same
// bytes, the followed pages' (BioPages), so that a single writer's row and
// its file's agree and the writers' rows sum to the file's. The file's row
// counted the whole bio (dd of 64 MiB with --max-dirty-pages 10: dd 10.0
// MiB, its file 16.0 MiB).
func TestWritebackBytesAfterOverflow(t *testing.T) {
	s := enginetest.NewStream()
	a, b := uint64(1)<<32|1, uint64(2)<<32|1
	s.E.HandleOp(enginetest.WriteOp(a, 0, 8192, record.PageRange{Index: 0, Pages: 2}))
	ob := enginetest.WriteOp(b, 8192, 8192, record.PageRange{Index: 2, Pages: 2})
	ob.Pid = 200
	s.E.HandleOp(ob)
	s.E.HandleWBStart(enginetest.WBStart(35, 0, 100)) // background
	// 8 pages in the bio: a's page 0 and b's page 2 were followed; a's
	// page 1, b's page 3 and 4 more pages the map had no room for.
	ev := enginetest.WBBio(0xb1, 42, 35, 0, 110, enginetest.Match{Op: a, Index: 0, Nr: 1, Dirtied: 15, BioPages: 1},
		enginetest.Match{Op: b, Index: 2, Nr: 1, Dirtied: 15, BioPages: 1})
	ev.Match[1].Pid = 200
	ev.Pages = 8
	s.E.HandleWBBio(ev)
	s.E.HandleIssue(enginetest.Issue(0xa, 120, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Bytes: 8 * 4096, Queue: 110, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	if p := s.Persisted(); len(p) != 2 || p[0].BytesWritten != 4096 || p[1].BytesWritten != 4096 {
		t.Fatalf("persisted %+v: want two of 4096 bytes", p)
	}
	sum := s.E.Summary()
	pids := map[uint32]uint64{}
	for _, p := range sum.Pids {
		pids[p.Pid] = p.DiskBytesWrite
	}
	if len(sum.Files) != 1 || sum.Files[0].DiskBytesWrite != 8192 || pids[100] != 4096 || pids[200] != 4096 {
		t.Errorf("disk bytes written: file %+v, processes %v; want the followed pages' on both: file 8192, pids 100 and 200 4096 each", sum.Files, pids)
	}
}
