package tracer

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

type match struct {
	op      uint64
	index   uint64
	nr      uint32
	dirtied uint64
}

func wbBioEv(bio uint64, ino uint64, tid uint32, opID uint64, ts uint64, ms ...match) *bpf.IopathWbBioEv {
	ev := &bpf.IopathWbBioEv{Type: uint32(bpf.IopathEvTypeEV_WB_BIO), Dev: testDev, Bio: bio, Ino: ino, Ts: ts, OpId: opID, Tid: tid}
	copy(ev.Comm[:], []int8{'k', 'w', 'o', 'r', 'k', 'e', 'r'})
	for i, m := range ms {
		ev.Match[i].OpId = m.op
		ev.Match[i].Index = m.index
		ev.Match[i].Nr = m.nr
		ev.Match[i].DirtiedNs = m.dirtied
		ev.Match[i].Pid = 100
		ev.Pages += m.nr
	}
	ev.NrMatch = uint32(len(ms))
	return ev
}

func wbStart(tid uint32, reason uint32, ts uint64) *bpf.IopathWbStartEv {
	return &bpf.IopathWbStartEv{Type: uint32(bpf.IopathEvTypeEV_WB_START), Tid: tid, Reason: reason, Ts: ts}
}

func writeOp(id uint64, off uint64, n int64, dirtied ...record.PageRange) *bpf.IopathOp {
	o := opEv(id, bpf.IopathOpSysSYS_WRITE, off, uint64(n), n, 10, 20)
	for _, d := range dirtied {
		addRange(o, d.Index, d.Pages, rangeDirtied)
	}
	return o
}

// A periodic flush of one page dirtied by one write.
func TestPersistedPeriodic(t *testing.T) {
	s := newStream(t)
	w := uint64(9)<<32 | 1
	s.e.HandleOp(writeOp(w, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	if s.e.DirtyPending() != 1 {
		t.Fatalf("pending %d", s.e.DirtyPending())
	}
	s.e.HandleWBStart(wbStart(35, 3, 30e9)) // WB_REASON_PERIODIC on 6.18
	s.e.HandleWBBio(wbBioEv(0xb1, 42, 35, 0, 30e9+10, match{op: w, index: 0, nr: 1, dirtied: 15}))
	s.e.HandleIssue(issueEv(0xa, 30e9+20, flWrite, own{bio: 0xb1, bytes: 4096, queue: 30e9 + 10, flags: ownWriteback}))
	s.e.HandleComplete(doneEv(0xa, 30e9+500, 0))
	p := s.persisted()
	if len(p) != 1 || p[0].OpID != w || p[0].Reason != "periodic" || p[0].Pages != 1 || p[0].DirtyToDiskNs != 30e9+500-15 || p[0].Outcome != "written" {
		t.Fatalf("persisted %+v", p)
	}
	if s.e.DirtyPending() != 0 {
		t.Errorf("pending after writeback: %d", s.e.DirtyPending())
	}
	if s.e.Counters().UnattributedBios != 0 {
		t.Errorf("a writeback bio counted as unattributed")
	}
}

// A large folio (16 pages) dirtied by one write: one match of 16 pages.
func TestPersistedLargeFolio(t *testing.T) {
	s := newStream(t)
	w := uint64(9)<<32 | 2
	s.e.HandleOp(writeOp(w, 0, 65536, record.PageRange{Index: 0, Pages: 16}))
	s.e.HandleWBStart(wbStart(35, 0, 100)) // background
	s.e.HandleWBBio(wbBioEv(0xb1, 42, 35, 0, 110, match{op: w, index: 0, nr: 16, dirtied: 15}))
	s.e.HandleIssue(issueEv(0xa, 120, flWrite, own{bio: 0xb1, bytes: 65536, queue: 110, flags: ownWriteback}))
	s.e.HandleComplete(doneEv(0xa, 200, 0))
	p := s.persisted()
	if len(p) != 1 || p[0].Pages != 16 || p[0].Reason != "background" || s.e.DirtyPending() != 0 {
		t.Fatalf("persisted %+v pending %d", p, s.e.DirtyPending())
	}
}

// A page dirtied, written back, dirtied again by a second write: two
// persisted records, each for its own call.
func TestPageDirtiedTwice(t *testing.T) {
	s := newStream(t)
	w1, w2 := uint64(9)<<32|1, uint64(9)<<32|2
	s.e.HandleOp(writeOp(w1, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s.e.HandleWBBio(wbBioEv(0xb1, 42, 35, 0, 100, match{op: w1, index: 0, nr: 1, dirtied: 10}))
	s.e.HandleIssue(issueEv(0xa, 110, flWrite, own{bio: 0xb1, bytes: 4096, queue: 100, flags: ownWriteback}))
	s.e.HandleComplete(doneEv(0xa, 150, 0))
	s.e.HandleOp(writeOp(w2, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s.e.HandleWBBio(wbBioEv(0xb1, 42, 35, 0, 300, match{op: w2, index: 0, nr: 1, dirtied: 200})) // bio pointer recycled
	s.e.HandleIssue(issueEv(0xa, 310, flWrite, own{bio: 0xb1, bytes: 4096, queue: 300, flags: ownWriteback}))
	s.e.HandleComplete(doneEv(0xa, 350, 0))
	p := s.persisted()
	if len(p) != 2 || p[0].OpID != w1 || p[1].OpID != w2 || p[1].DirtyToDiskNs != 150 {
		t.Fatalf("persisted %+v", p)
	}
	// The same page overwritten while still dirty: the second write dirtied
	// nothing (no clean->dirty), so its data goes out with the first call.
	s2 := newStream(t)
	s2.e.HandleOp(writeOp(w1, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s2.e.HandleOp(writeOp(w2, 1, 1))
	if s2.e.DirtyPending() != 1 {
		t.Errorf("pending %d, want 1", s2.e.DirtyPending())
	}
}

// Pages truncated before writeback: "removed", no longer pending.
func TestPageTruncatedBeforeWriteback(t *testing.T) {
	s := newStream(t)
	w := uint64(9)<<32 | 3
	s.e.HandleOp(writeOp(w, 0, 8192, record.PageRange{Index: 0, Pages: 2}))
	for i := uint64(0); i < 2; i++ {
		s.e.HandleDirtyGone(&bpf.IopathDirtyGoneEv{Type: uint32(bpf.IopathEvTypeEV_DIRTY_GONE), Dev: testDev, Ino: 42, Index: i, OpId: w, Ts: 50, Nr: 1, Pid: 100})
	}
	p := s.persisted()
	if len(p) != 2 || p[0].Outcome != "removed" || s.e.DirtyPending() != 0 {
		t.Fatalf("persisted %+v pending %d", p, s.e.DirtyPending())
	}
}

// One bio carrying pages of two calls (on the same inode) and a second bio
// of another inode in the same request.
func TestBioCoveringSeveralCallsAndInodes(t *testing.T) {
	s := newStream(t)
	a, b, c := uint64(1)<<32|1, uint64(2)<<32|1, uint64(3)<<32|1
	s.e.HandleOp(writeOp(a, 0, 4096, record.PageRange{Index: 0, Pages: 1}))
	s.e.HandleOp(writeOp(b, 4096, 4096, record.PageRange{Index: 1, Pages: 1}))
	oc := writeOp(c, 0, 4096, record.PageRange{Index: 0, Pages: 1})
	oc.Ino = 43
	s.e.HandleOp(oc)
	s.e.HandleWBStart(wbStart(35, 2, 1)) // sync
	s.e.HandleWBBio(wbBioEv(0xb1, 42, 35, 0, 100, match{op: a, index: 0, nr: 1, dirtied: 10}, match{op: b, index: 1, nr: 1, dirtied: 20}))
	s.e.HandleWBBio(wbBioEv(0xb2, 43, 35, 0, 101, match{op: c, index: 0, nr: 1, dirtied: 30}))
	s.e.HandleIssue(issueEv(0xa, 110, flWrite,
		own{bio: 0xb1, bytes: 8192, queue: 100, flags: ownWriteback},
		own{bio: 0xb2, bytes: 4096, queue: 101, flags: ownWriteback}))
	s.e.HandleComplete(doneEv(0xa, 200, 0))
	p := s.persisted()
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
	if got[a] != 42 || got[b] != 42 || got[c] != 43 || s.e.DirtyPending() != 0 {
		t.Errorf("per-call inodes %v, pending %d", got, s.e.DirtyPending())
	}
}

// fsync: the caller submits the data bio itself; reason fsync, attributed to
// the fsync call, whose record waits for the bio.
func TestPersistedByFsync(t *testing.T) {
	s := newStream(t)
	w, f := uint64(9)<<32|1, uint64(9)<<32|2
	s.e.HandleOp(writeOp(w, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s.e.HandleWBBio(wbBioEv(0xb1, 42, 9, f, 100, match{op: w, index: 0, nr: 1, dirtied: 15}))
	s.e.HandleIssue(issueEv(0xa, 110, flWrite|flSync, own{op: f, bio: 0xb1, bytes: 4096, queue: 100, flags: ownWriteback}))
	s.e.HandleIssue(issueEv(0xc, 120, flWrite|flSync|1<<18|1<<17, own{op: f, bio: 0xb9, bytes: 0, queue: 115, flags: ownJournal}))
	s.e.HandleComplete(doneEv(0xa, 300, 0))
	s.e.HandleComplete(doneEv(0xc, 320, 0))
	fo := opEv(f, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, 90, 330)
	fo.BiosQueued = 1
	s.e.HandleOp(fo)
	p := s.persisted()
	if len(p) != 1 || p[0].Reason != "fsync" || p[0].ByOpID != f {
		t.Fatalf("persisted %+v", p)
	}
	var rec *record.Syscall
	for _, c := range s.syscalls() {
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
	s := newStream(t)
	w := uint64(9)<<32 | 1
	s.e.HandleOp(writeOp(w, 0, 1, record.PageRange{Index: 0, Pages: 1}))
	s.e.HandleWBBio(wbBioEv(0xb1, 42, 35, 0, 100, match{op: w, index: 0, nr: 1, dirtied: 15}))
	s.e.HandleIssue(issueEv(0xa, 110, flWrite, own{bio: 0xb1, bytes: 4096, queue: 100, flags: ownWriteback}))
	s.e.HandleComplete(doneEv(0xa, 300, 10))
	p := s.persisted()
	if len(p) != 1 || p[0].Outcome != "failed" || p[0].Error != "BLK_STS_IOERR" {
		t.Fatalf("persisted %+v", p)
	}
}

// More matches than fit one record: continuation parts are joined.
func TestWBBioContinuation(t *testing.T) {
	s := newStream(t)
	var ms []match
	for i := uint64(0); i < 20; i++ {
		id := uint64(i+1)<<32 | 1
		s.e.HandleOp(writeOp(id, i*4096, 4096, record.PageRange{Index: i, Pages: 1}))
		ms = append(ms, match{op: id, index: i, nr: 1, dirtied: 10})
	}
	first := wbBioEv(0xb1, 42, 35, 0, 100, ms[:16]...)
	second := wbBioEv(0xb1, 42, 35, 0, 100, ms[16:]...)
	second.Part = 1
	s.e.HandleWBBio(first)
	s.e.HandleWBBio(second)
	s.e.HandleIssue(issueEv(0xa, 110, flWrite, own{bio: 0xb1, bytes: 81920, queue: 100, flags: ownWriteback}))
	s.e.HandleComplete(doneEv(0xa, 200, 0))
	if p := s.persisted(); len(p) != 20 || s.e.DirtyPending() != 0 {
		t.Fatalf("persisted %d records, pending %d", len(p), s.e.DirtyPending())
	}
}

// A writeback bio split by the block layer: one writeback record with both
// parts' bytes, persisted when the last part completes, counted once.
func TestSplitWritebackBio(t *testing.T) {
	s := newStream(t)
	w := uint64(9)<<32 | 1
	s.e.HandleOp(writeOp(w, 0, 8<<20, record.PageRange{Index: 0, Pages: 2048}))
	s.e.HandleWBStart(wbStart(35, 0, 1))
	s.e.HandleWBBio(wbBioEv(0xb1, 42, 35, 0, 100, match{op: w, index: 0, nr: 2048, dirtied: 10}))
	s.e.HandleSplit(&bpf.IopathBioSplitEv{Type: uint32(bpf.IopathEvTypeEV_BIO_SPLIT), Split: 0xb2, Parent: 0xb1, Ts: 101})
	s.e.HandleIssue(issueEv(0xa, 110, flWrite, own{bio: 0xb2, sector: 0, bytes: 4 << 20, queue: 100, flags: ownWriteback}))
	s.e.HandleIssue(issueEv(0xb, 111, flWrite, own{bio: 0xb1, sector: 8192, bytes: 4 << 20, queue: 100, flags: ownWriteback}))
	s.e.HandleComplete(doneEv(0xb, 300, 0))
	if len(s.persisted()) != 0 {
		t.Fatal("persisted before the split-off part completed")
	}
	s.e.HandleComplete(doneEv(0xa, 400, 0))
	p := s.persisted()
	var wbs []*record.Writeback
	for _, r := range s.recs {
		if x, ok := r.(*record.Writeback); ok {
			wbs = append(wbs, x)
		}
	}
	if len(p) != 1 || p[0].PersistedNs != 400 || p[0].Pages != 2048 || len(wbs) != 1 || len(wbs[0].Bios) != 2 {
		t.Fatalf("persisted %+v writeback %+v", p, wbs)
	}
	if sum := s.e.Summary(); sum.Files[0].DiskBytesWrite != 8<<20 {
		t.Errorf("file disk bytes written %d, want 8 MiB", sum.Files[0].DiskBytesWrite)
	}
}
