package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

const faultTid = 7

func faultID(seq uint64) uint64 { return faultTid<<32 | seq }

// A cold fault on page 0: read-around of 2048 pages (page_cache_ra_order
// alone, as 6.18's tracepoints show it), two bios, a retry after the wait;
// then later faults consume that window: one counted by the kernel (not
// streamed), one that waited for a page still in flight (no bio of its
// own). Every bio belongs to the first fault; the summary counts them all.
func TestFaultReadAroundConsumedByLaterFaults(t *testing.T) {
	s := enginetest.NewStream()
	first := enginetest.Fault(faultID(1), 0, 0x7f0000000000, engine.FaultMajor|engine.FaultFilemap|engine.FaultRetried, 1000, 900_000)
	first.BlockedNs, first.BiosQueued = 850_000, 2
	enginetest.AddRange(first, 0, 2048, engine.RangeAdded)
	r := &first.Ra[0]
	r.Kind, r.Index, r.Start, r.Size, r.AsyncSize = engine.RAOrder, 0, 0, 2048, 512
	first.NrRa = 1
	first.AroundIndex, first.AroundPages = 0, 16
	s.E.HandleIssue(enginetest.Issue(0xa, 2000, enginetest.FlRead|enginetest.FlRahead,
		enginetest.Own{Op: faultID(1), Bio: 0xb1, Sector: 0, Bytes: 1 << 20, Queue: 1500},
		enginetest.Own{Op: faultID(1), Bio: 0xb2, Sector: 2048, Bytes: 1 << 20, Queue: 1600}))
	s.E.HandleOp(first)
	if len(s.Faults()) != 0 {
		t.Fatal("fault released before its bios completed")
	}
	s.E.HandleComplete(enginetest.Done(0xa, 800_000, 0))
	// The kernel counted 60 minor faults in the window without streaming them.
	var st bpf.IopathFaultStat
	st.Faults = 60
	s.E.AddFaults(bpf.IopathFaultKey{File: bpf.IopathAggFileKey{Ino: 42, Dev: enginetest.Dev}, Pid: 100}, st)
	// A fault on page 1024 that slept on a page of the window still in flight.
	wait := enginetest.Fault(faultID(2), 1024, 0x7f0000400000, engine.FaultFilemap|engine.FaultRetried, 1_000_000, 1_300_000)
	wait.BlockedNs = 280_000
	s.E.HandleOp(wait)
	s.E.Flush()

	fs := s.Faults()
	if len(fs) != 2 {
		t.Fatalf("got %d fault records, want 2", len(fs))
	}
	f := fs[0]
	if !f.Major || !f.Retried || f.Write || f.Index != 0 || f.Address != 0x7f0000000000 || len(f.Bios) != 2 {
		t.Errorf("first fault: %+v", f)
	}
	if f.Cache.PagesMissed != 1 || f.Cache.PagesHit != 0 || f.Cache.PagesAdded != 2048 {
		t.Errorf("first fault cache: %+v", f.Cache)
	}
	if len(f.Cache.Readahead) != 1 || f.Cache.Readahead[0].Kind != record.ReadaheadReadAround || f.Cache.Readahead[0].Pages != 2048 {
		t.Errorf("first fault readahead: %+v", f.Cache.Readahead)
	}
	if f.FaultAround == nil || f.FaultAround.Pages != 16 {
		t.Errorf("fault-around: %+v", f.FaultAround)
	}
	w := fs[1]
	if w.Major || len(w.Bios) != 0 || w.BlockedNs != 280_000 || w.Cache.PagesHit != 1 || len(w.Cache.Readahead) != 0 {
		t.Errorf("waiting fault: %+v", w)
	}
	if c := s.E.Counters(); c.UnattributedBios != 0 || c.IncompleteBios != 0 {
		t.Errorf("counters %+v", c)
	}
	sum := s.E.Summary()
	p := sum.Pids[0]
	if p.Faults != 62 || p.MajorFaults != 1 || p.FaultDiskBytesRead != 2<<20 || p.DiskBytesRead != 2<<20 || p.Calls != 0 {
		t.Errorf("pid totals: %+v", p.Totals)
	}
	if len(sum.Files) != 1 || sum.Files[0].Faults != 62 {
		t.Errorf("file totals: %+v", sum.Files)
	}
}

// A fault satisfied by fault-around alone (--all streams it): no filemap
// call, no retry, no readahead; and a fault under MADV_RANDOM that read
// only its own page: readahead kind none.
func TestFaultAroundAndNoReadahead(t *testing.T) {
	s := enginetest.NewStream()
	a := enginetest.Fault(faultID(1), 64, 0x7f0000040000, 0, 1000, 3000)
	a.AroundIndex, a.AroundPages = 64, 16
	s.E.HandleOp(a)
	rnd := enginetest.Fault(faultID(2), 5000, 0x7f0001388000, engine.FaultMajor|engine.FaultFilemap|engine.FaultRetried, 10_000, 200_000)
	rnd.BiosQueued, rnd.BlockedNs = 1, 150_000
	enginetest.AddRange(rnd, 5000, 1, engine.RangeAdded)
	s.E.HandleIssue(enginetest.Issue(0xb, 20_000, enginetest.FlRead, enginetest.Own{Op: faultID(2), Bio: 0xb3, Sector: 40000, Bytes: 4096, Queue: 15_000}))
	s.E.HandleOp(rnd)
	s.E.HandleComplete(enginetest.Done(0xb, 180_000, 0))
	fs := s.Faults()
	if len(fs) != 2 {
		t.Fatalf("got %d fault records, want 2", len(fs))
	}
	if f := fs[0]; f.Major || f.Retried || f.Cache.PagesHit != 1 || f.FaultAround == nil || f.FaultAround.Index != 64 || len(f.Bios) != 0 {
		t.Errorf("fault-around fault: %+v", f)
	}
	f := fs[1]
	if !f.Major || len(f.Bios) != 1 || len(f.Cache.Readahead) != 1 || f.Cache.Readahead[0].Kind != record.ReadaheadNone || f.Cache.Readahead[0].Pages != 1 {
		t.Errorf("MADV_RANDOM fault: %+v", f)
	}
}

// A store to a clean mapped page: page_mkwrite dirtied it in the fault;
// the flusher's bio persists it under the fault's op_id.
func TestFaultWriteDirtiesAndPersists(t *testing.T) {
	s := enginetest.NewStream()
	w := enginetest.Fault(faultID(1), 3, 0x7f0000003000, engine.FaultWrite|engine.FaultFilemap, 1000, 5000)
	enginetest.AddRange(w, 3, 1, engine.RangeDirtied)
	s.E.HandleOp(w)
	if got := s.E.DirtyPending(); got != 1 {
		t.Fatalf("dirty pending %d, want 1", got)
	}
	s.E.HandleWBBio(enginetest.WBBio(0xc1, 42, 35, 0, 10_000, enginetest.Match{Op: faultID(1), Index: 3, Nr: 1, Dirtied: 2000, BioPages: 1}))
	s.E.HandleIssue(enginetest.Issue(0xc, 11_000, enginetest.FlWrite, enginetest.Own{Bio: 0xc1, Sector: 24, Bytes: 4096, Queue: 10_500, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xc, 50_000, 0))
	fs := s.Faults()
	if len(fs) != 1 || !fs[0].Write || fs[0].DirtiedPages != 1 {
		t.Fatalf("faults: %+v", fs)
	}
	ps := s.Persisted()
	if len(ps) != 1 || ps[0].OpID != faultID(1) || ps[0].Outcome != record.OutcomeWritten || ps[0].Pages != 1 {
		t.Fatalf("persisted: %+v", ps)
	}
	if f := ps[0].Fault; f == nil || f.Address != 0x7f0000003000 || f.Index != 3 {
		t.Errorf("persisted does not name the fault: %+v", f)
	}
	if s.E.DirtyPending() != 0 {
		t.Errorf("dirty pending after writeback: %d", s.E.DirtyPending())
	}
	// A write call's pages, and a fault's page removed before writeback.
	s.E.HandleOp(enginetest.WriteOp(faultID(2), 0, 4096, record.PageRange{Index: 0, Pages: 1}))
	w = enginetest.Fault(faultID(3), 9, 0x7f0000009000, engine.FaultWrite|engine.FaultFilemap, 60_000, 5000)
	enginetest.AddRange(w, 9, 1, engine.RangeDirtied)
	s.E.HandleOp(w)
	s.E.HandleDirtyGone(enginetest.Gone(faultID(3), 9, 1, 70_000))
	s.E.HandleDirtyGone(enginetest.Gone(faultID(2), 0, 1, 71_000))
	ps = s.Persisted()
	if len(ps) != 3 || ps[1].Fault == nil || ps[1].Fault.Index != 9 || ps[1].Outcome != record.OutcomeRemoved || ps[2].Fault != nil {
		t.Errorf("removed pages: %+v", ps[1:])
	}
}

// madvise(MADV_WILLNEED) reads ahead itself: its pages and bios are its
// own, its advice is named, and no readahead window is derived for it (it
// is not a read). msync is of the fsync family.
func TestAdviceAndMsyncCalls(t *testing.T) {
	s := enginetest.NewStream()
	o := enginetest.Op(faultID(1), bpf.IopathOpSysSYS_MADVISE, 0, 1<<20, 0, 1000, 400_000)
	o.Fd, o.Advice, o.BiosQueued = -1, 3, 1
	enginetest.AddRange(o, 0, 256, engine.RangeAdded)
	s.E.HandleIssue(enginetest.Issue(0xa, 2000, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: faultID(1), Bio: 0xb1, Bytes: 1 << 20, Queue: 1500}))
	s.E.HandleOp(o)
	s.E.HandleComplete(enginetest.Done(0xa, 300_000, 0))
	m := enginetest.Op(faultID(2), bpf.IopathOpSysSYS_MSYNC, 0, 1<<20, 0, 500_000, 600_000)
	m.Fd, m.Advice = -1, 4 // MS_SYNC
	s.E.HandleOp(m)
	calls := s.Syscalls()
	if len(calls) != 2 {
		t.Fatalf("calls %+v", calls)
	}
	if c := calls[0]; c.Syscall != "madvise" || c.Advice != "willneed" || c.Cache.PagesAdded != 256 || len(c.Bios) != 1 || len(c.Cache.Readahead) != 0 {
		t.Errorf("madvise record %+v", c)
	}
	if c := calls[1]; c.Syscall != "msync" || c.Advice != "" || !record.IsSync(c.Syscall) {
		t.Errorf("msync record %+v", c)
	}
	if s.E.Counters().UnattributedBios != 0 {
		t.Errorf("unattributed bios")
	}
}

// Where the filemap_fault hook is a tracepoint (no VM_FAULT_RETRY to read),
// a retry whose second pass left no filemap event (another thread mapped
// the page meanwhile) is inferred from the first pass: it read pages, or
// (a read fault) slept on a locked page. Not from a write fault's sleep
// (page_mkwrite), nor without filemap_fault, nor where the return value is
// seen (InferFaultRetry off).
func TestFaultRetryInferred(t *testing.T) {
	type c struct {
		name           string
		flags          uint32
		added          uint32
		blocked        uint64
		infer, retried bool
	}
	for _, tc := range []c{
		{"read the page, no second event", engine.FaultMajor | engine.FaultFilemap, 1, 90_000, true, true},
		{"waited on a page another thread read", engine.FaultFilemap, 0, 80_000, true, true},
		{"a cached page, no wait", engine.FaultFilemap, 0, 0, true, false},
		{"a write fault slept in page_mkwrite", engine.FaultWrite | engine.FaultFilemap, 0, 50_000, true, false},
		{"a write fault read its page", engine.FaultWrite | engine.FaultFilemap, 1, 50_000, true, true},
		{"no filemap_fault (fault-around)", 0, 0, 10_000, true, false},
		{"fexit: the return value said no retry", engine.FaultMajor | engine.FaultFilemap, 1, 90_000, false, false},
		{"a second event seen", engine.FaultFilemap | engine.FaultRetried, 0, 0, false, true},
		// A pass that returned VM_FAULT_RETRY with a signal pending is not
		// redone: the thread takes the signal (4 threads under a 20 µs
		// itimer: 5130 such records all said "retried ... then redid the
		// fault" beside "ended by SIGALRM ... before the kernel redid the
		// fault").
		{"ended by a signal after reading its page", engine.FaultFilemap | engine.FaultSignal, 1, 90_000, true, false},
		{"ended by a signal after waiting on a page", engine.FaultFilemap | engine.FaultSignal, 0, 80_000, true, false},
		{"redone, then ended by a signal", engine.FaultFilemap | engine.FaultRetried | engine.FaultSignal, 1, 90_000, true, true},
	} {
		s := enginetest.NewStream()
		s.E.InferFaultRetry = tc.infer
		o := enginetest.Fault(faultID(1), 3, 0x7f0000003000, tc.flags, 1000, 200_000)
		o.BlockedNs = tc.blocked
		if tc.added > 0 {
			enginetest.AddRange(o, 3, tc.added, engine.RangeAdded)
		}
		s.E.HandleOp(o)
		if fs := s.Faults(); len(fs) != 1 || fs[0].Retried != tc.retried {
			t.Errorf("%s: faults %+v, want retried %v", tc.name, fs, tc.retried)
		}
	}
}

// Faults the kernel counted on a deleted file stay on its row when a new
// file reuses its inode number (fault_stats is keyed by i_generation, as
// hit_stats is).
func TestFaultsOfReusedInode(t *testing.T) {
	s := enginetest.NewStream()
	for i, gen := range []uint32{11, 22} {
		o := enginetest.Named(enginetest.Op(uint64(7)<<32|uint64(i+1), bpf.IopathOpSysSYS_WRITE, 0, 4096, 4096, 100, 200), "app", []string{"/var/tmp/a.tmp", "/var/tmp/b0"}[i])
		o.PathGen = gen // the same inode number 42, another file
		s.E.HandleOp(o)
	}
	s.E.AddFaults(bpf.IopathFaultKey{File: bpf.IopathAggFileKey{Ino: 42, Dev: enginetest.Dev, Gen: 11}, Pid: 100}, bpf.IopathFaultStat{Faults: 5})
	s.E.AddFaults(bpf.IopathFaultKey{File: bpf.IopathAggFileKey{Ino: 42, Dev: enginetest.Dev, Gen: 22}, Pid: 100}, bpf.IopathFaultStat{Faults: 1})
	got := map[string]uint64{}
	for _, f := range s.E.Summary().Files {
		got[f.Path] = f.Faults
	}
	if got["/var/tmp/a.tmp"] != 5 || got["/var/tmp/b0"] != 1 {
		t.Errorf("faults per file %v, want a.tmp 5 and b0 1", got)
	}
}

// A fault whose end never came (faults_unended: the kernel went back to
// user mode without accounting it, and no signal was delivered to the
// thread, e.g. another thread took the process-wide signal that
// interrupted it) read its page: a bio owned by an op whose EV_OP never
// arrives. At the end of the trace its bytes are counted, unattributed with
// cause no_record, in the process's disk reads; before, they vanished from
// every count (a breaker's 4-thread mmap reader under a 20 µs itimer: 39
// faults unended, 156 KiB missing from disk_bytes_read, unattributed 0).
func TestFaultUnendedBiosCounted(t *testing.T) {
	s := enginetest.NewStream()
	s.E.HandleIssue(enginetest.Issue(0xc, 2000, enginetest.FlRead,
		enginetest.Own{Op: faultID(1), Bio: 0xb1, Sector: 8, Bytes: 4096, Queue: 1500}))
	s.E.HandleComplete(enginetest.Done(0xc, 50_000, 0))
	s.E.Flush()
	c := s.E.Counters()
	if c.UnattributedBios != 1 || c.UnattributedBytes != 4096 {
		t.Errorf("counters %+v, want 1 unattributed bio of 4096 bytes", c)
	}
	sum := s.E.Summary()
	if got := sum.UnattributedCauses[engine.CauseNoRecord]; got.Bios != 1 || got.Bytes != 4096 {
		t.Errorf("unattributed causes %+v", sum.UnattributedCauses)
	}
	if len(sum.Pids) != 1 || sum.Pids[0].DiskBytesRead != 4096 || sum.Pids[0].Unattributed != 1 {
		t.Errorf("pid rows %+v", sum.Pids)
	}
	// A second Flush counts nothing twice.
	s.E.Flush()
	if c := s.E.Counters(); c.UnattributedBios != 1 {
		t.Errorf("after a second Flush: %+v", c)
	}
}

// A fault whose end never came, found open at the thread's next fault or
// exit (bpf/fault.c fault_unended: FaultUnended): a record with end_unseen,
// its bio its own (not unattributed), major unknown and listed so, its
// duration an upper bound; counted in faults, never in major_faults.
// Before, it had no record and its bio was unattributed (no_record).
func TestFaultUnendedRecorded(t *testing.T) {
	s := enginetest.NewStream()
	s.E.HandleIssue(enginetest.Issue(0xc, 2000, enginetest.FlRead,
		enginetest.Own{Op: faultID(1), Bio: 0xb1, Sector: 8, Bytes: 4096, Queue: 1500}))
	s.E.HandleComplete(enginetest.Done(0xc, 50_000, 0))
	o := enginetest.Fault(faultID(1), 3, 0x7f0000003000, engine.FaultFilemap|engine.FaultUnended, 1000, 900_000)
	o.BiosQueued = 1
	enginetest.AddRange(o, 3, 1, engine.RangeAdded)
	s.E.HandleOp(o)
	fs := s.Faults()
	if len(fs) != 1 {
		t.Fatalf("faults %+v, want the unended one", fs)
	}
	f := fs[0]
	if !f.EndUnseen || f.Major || len(f.Bios) != 1 || f.DurationNs != 899_000 || !contains(f.Unavailable, "major (end not seen)") {
		t.Errorf("fault %+v", f)
	}
	c := s.E.Counters()
	p := s.E.Summary().Pids[0]
	if c.UnattributedBios != 0 || p.Faults != 1 || p.MajorFaults != 0 || p.FaultDiskBytesRead != 4096 {
		t.Errorf("unattributed %d; pid faults %d, major %d, fault bytes %d: want 0, 1, 0, 4096", c.UnattributedBios, p.Faults, p.MajorFaults, p.FaultDiskBytesRead)
	}
}
