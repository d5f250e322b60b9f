package engine_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
	"github.com/iopath/iopath/tracer/kernel"
)

// oneRecord feeds a call that queued no bio to an engine and returns its record.
func oneRecord(t *testing.T, o *bpf.IopathOp) *record.Syscall {
	t.Helper()
	s := enginetest.NewStream()
	s.E.HandleOp(o)
	c := s.Syscalls()
	if len(c) != 1 {
		t.Fatalf("%d records for one call", len(c))
	}
	return c[0]
}

func TestColdOneByteRead(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(7)<<32 | 1
	// The sync read waits for its bio: issue and completion come before the call's exit.
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id, Bio: 0xb1, Sector: 800, Bytes: 16384, Queue: 105}))
	s.E.HandleComplete(enginetest.Done(0xa, 300, 0))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_READ, 0, 1, 1, 100, 320)
	enginetest.AddRange(o, 0, 4, engine.RangeAdded)
	o.BiosQueued = 1
	o.NrRa = 1
	o.Ra[0].Size, o.Ra[0].AsyncSize, o.Ra[0].ReqCount, o.Ra[0].Kind = 4, 3, 1, engine.RASync
	s.E.HandleOp(o)
	calls := s.Syscalls()
	if len(calls) != 1 {
		t.Fatalf("got %d records, want 1", len(calls))
	}
	c := calls[0]
	if c.Cache.PagesRequested != 1 || c.Cache.PagesMissed != 1 || c.Cache.PagesHit != 0 || c.Cache.PagesAdded != 4 {
		t.Errorf("cache = %+v", c.Cache)
	}
	if len(c.Bios) != 1 || c.Bios[0].Bytes != 16384 || c.Bios[0].Rwbs != "RA" || c.Bios[0].D2CNs != 190 || c.Bios[0].Q2CNs != 195 {
		t.Errorf("bios = %+v", c.Bios)
	}
	if len(c.Cache.Readahead) != 1 || c.Cache.Readahead[0].Kind != "sync" || c.Cache.Readahead[0].Pages != 4 {
		t.Errorf("readahead = %+v", c.Cache.Readahead)
	}
}

// The call's record arrives before its async-readahead bio completes: it is
// held until the completion, then released with the bio's timing.
func TestRecordWaitsForBio(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(7)<<32 | 2
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id, Bio: 0xb1, Bytes: 4096, Queue: 105}))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_READ, 4096, 4096, 4096, 100, 200)
	o.BiosQueued = 1
	enginetest.AddRange(o, 8, 1, engine.RangeAdded)
	s.E.HandleOp(o)
	if len(s.Syscalls()) != 0 {
		t.Fatal("released before its bio completed")
	}
	s.E.HandleComplete(enginetest.Done(0xa, 500, 0))
	calls := s.Syscalls()
	if len(calls) != 1 || calls[0].Bios[0].CompleteNs != 500 {
		t.Fatalf("records %+v", calls)
	}
	// Page 8 is beyond the requested page 1: a hit plus readahead, derived.
	c := calls[0]
	if c.Cache.PagesHit != 1 || c.Cache.PagesMissed != 0 || c.Cache.Readahead[0].Kind != "async" || c.Cache.Readahead[0].Source != "derived" {
		t.Errorf("cache = %+v", c.Cache)
	}
}

// A 1 MiB readahead bio split before issue (block_split: 1040384 + 8192
// bytes, measured on this machine's virtio disk) is two bios for the one
// the call queued: the record waits for both, by bytes (op.bio_bytes).
// Before, the first part met the count (bios_queued 1) and released the
// record; the second part's issue then made a call with no record, whose
// bio was dropped at the end (4 cold pread threads: 1-3 MiB of 64 MiB
// missing from the file's disk bytes).
func TestSplitBioHoldsRecord(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(7)<<32 | 4
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id, Bio: 0xb2, Sector: 800, Bytes: 1040384, Queue: 105}))
	s.E.HandleComplete(enginetest.Done(0xa, 300, 0))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_READ, 0, 1<<20, 1<<20, 100, 320)
	enginetest.AddRange(o, 0, 256, engine.RangeAdded)
	o.BiosQueued, o.BioBytes = 1, 1<<20
	s.E.HandleOp(o)
	if len(s.Syscalls()) != 0 {
		t.Fatal("released with 1040384 of the 1 MiB the call queued")
	}
	s.E.HandleIssue(enginetest.Issue(0xb, 400, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id, Bio: 0xb1, Sector: 800 + 2032, Bytes: 8192, Queue: 105}))
	s.E.HandleComplete(enginetest.Done(0xb, 500, 0))
	s.E.Flush()
	calls := s.Syscalls()
	if len(calls) != 1 || len(calls[0].Bios) != 2 || calls[0].Bios[0].Bytes+calls[0].Bios[1].Bytes != 1<<20 {
		t.Fatalf("records %+v", calls)
	}
	if c := s.E.Counters(); c.UnattributedBios != 0 || c.IncompleteBios != 0 {
		t.Errorf("counters %+v", c)
	}
	if p := s.E.Summary().Pids[0]; p.DiskBytesRead != 1<<20 {
		t.Errorf("pid disk bytes read %d", p.DiskBytesRead)
	}
}

// A request carrying bios of two calls (a merge): each call gets its bio's bytes.
func TestMergedRequestSplitsBytesByBio(t *testing.T) {
	s := enginetest.NewStream()
	a, b := uint64(1)<<32|1, uint64(2)<<32|1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead,
		enginetest.Own{Op: a, Bio: 0xb1, Sector: 0, Bytes: 8192, Queue: 100},
		enginetest.Own{Op: b, Bio: 0xb2, Sector: 16, Bytes: 4096, Queue: 101}))
	s.E.HandleComplete(enginetest.Done(0xa, 400, 0))
	for _, id := range []uint64{a, b} {
		o := enginetest.Op(id, bpf.IopathOpSysSYS_PREAD64, 0, 4096, 4096, 90, 410)
		o.BiosQueued = 1
		s.E.HandleOp(o)
	}
	calls := s.Syscalls()
	if len(calls) != 2 || calls[0].Bios[0].Bytes != 8192 || calls[1].Bios[0].Bytes != 4096 {
		t.Fatalf("calls %+v", calls)
	}
	if calls[0].Bios[0].RequestBytes != 12288 || calls[0].Bios[0].RequestBios != 2 {
		t.Errorf("request totals %+v", calls[0].Bios[0])
	}
}

// Requeue: the same request issued twice (kworker/N:1H); one bio, requeues=1,
// D2C measured from the second issue.
func TestRequeuedRequest(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(3)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead, enginetest.Own{Op: id, Bio: 0xb1, Bytes: 4096, Queue: 100}))
	s.E.HandleRequeue(&bpf.IopathRqDoneEv{Type: uint32(bpf.IopathEvTypeEV_RQ_REQUEUE), Rq: 0xa, Ts: 150})
	s.E.HandleIssue(enginetest.Issue(0xa, 200, enginetest.FlRead, enginetest.Own{Op: id, Bio: 0xb1, Bytes: 4096, Queue: 100}))
	s.E.HandleComplete(enginetest.Done(0xa, 500, 0))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 90, 510)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	c := s.Syscalls()
	if len(c) != 1 || len(c[0].Bios) != 1 || c[0].Bios[0].Requeues != 1 || c[0].Bios[0].D2CNs != 300 {
		t.Fatalf("got %+v", c)
	}
}

// Completions in another order than issues.
func TestOutOfOrderCompletions(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(4)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead, enginetest.Own{Op: id, Bio: 0xb1, Sector: 0, Bytes: 4096, Queue: 100}))
	s.E.HandleIssue(enginetest.Issue(0xb, 120, enginetest.FlRead, enginetest.Own{Op: id, Bio: 0xb2, Sector: 8, Bytes: 4096, Queue: 101}))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_READ, 0, 8192, 8192, 90, 600)
	o.BiosQueued = 2
	s.E.HandleOp(o)
	s.E.HandleComplete(enginetest.Done(0xb, 300, 0))
	if len(s.Syscalls()) != 0 {
		t.Fatal("released with one bio in flight")
	}
	s.E.HandleComplete(enginetest.Done(0xa, 400, 10))
	c := s.Syscalls()
	if len(c) != 1 || len(c[0].Bios) != 2 || c[0].Bios[0].Error != "BLK_STS_IOERR" || c[0].Bios[1].CompleteNs != 300 {
		t.Fatalf("got %+v", c[0].Bios)
	}
}

// Lost events: a completion that never arrives. Tick releases the call
// after HoldNs and counts the bio as incomplete; a completion for a request
// never seen issued is counted, not crashed on.
func TestLostCompletion(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(5)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead, enginetest.Own{Op: id, Bio: 0xb1, Bytes: 4096, Queue: 100}))
	o := enginetest.Op(id, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 90, 200)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	s.E.Tick(200 + s.E.HoldNs/2)
	if len(s.Syscalls()) != 0 {
		t.Fatal("released too early")
	}
	s.E.Tick(200 + s.E.HoldNs + 1)
	c := s.Syscalls()
	if len(c) != 1 || c[0].Bios[0].CompleteNs != 0 || s.E.Counters().IncompleteBios != 1 {
		t.Fatalf("got %+v, counters %+v", c, s.E.Counters())
	}
	s.E.HandleComplete(enginetest.Done(0xdead, 900, 0))
	if s.E.Counters().OrphanCompletes != 1 {
		t.Errorf("orphan completion not counted: %+v", s.E.Counters())
	}
}

// A queued bio whose issue event was lost: the call waits for it, then Flush
// releases it at the end of the trace.
func TestFlushReleasesWaitingCalls(t *testing.T) {
	s := enginetest.NewStream()
	o := enginetest.Op(uint64(6)<<32|1, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 90, 200)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	s.E.Flush()
	if len(s.Syscalls()) != 1 {
		t.Fatal("flush did not release")
	}
}

func TestHitsNeverNegative(t *testing.T) {
	// More pages added in range than requested (a large folio straddling the range).
	o := enginetest.Op(1, bpf.IopathOpSysSYS_READ, 4096, 100, 100, 1, 2)
	enginetest.AddRange(o, 0, 16, engine.RangeAdded)
	r := oneRecord(t, o)
	if r.Cache.PagesMissed != 1 || r.Cache.PagesHit != 0 || r.Cache.PagesRequested != 1 {
		t.Errorf("cache = %+v", r.Cache)
	}
	// EOF: nothing returned, nothing requested.
	o = enginetest.Op(2, bpf.IopathOpSysSYS_READ, 1<<20, 4096, 0, 1, 2)
	if r := oneRecord(t, o); r.Cache.PagesRequested != 0 || r.Cache.PagesHit != 0 {
		t.Errorf("EOF cache = %+v", r.Cache)
	}
	// Error: errno name, no bytes.
	o = enginetest.Op(3, bpf.IopathOpSysSYS_READ, 0, 4096, -22, 1, 2)
	if r := oneRecord(t, o); r.Error != "EINVAL" || r.ReturnedBytes != 0 {
		t.Errorf("error record = %+v", r)
	}
}

// An unattributed bio is counted, and handed to UnattributedBio with its
// timing once its request completed; a writeback bio and a call's bio are not.
func TestUnattributedBiosCounted(t *testing.T) {
	s := enginetest.NewStream()
	type got struct {
		pid   uint32
		cause string
		b     record.Bio
	}
	var seen []got
	s.E.UnattributedBio = func(pid uint32, cause string, b record.Bio) { seen = append(seen, got{pid, cause, b}) }
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead, enginetest.Own{Op: 0, Bio: 0xb1, Sector: 8, Bytes: 4096, Queue: 100, Pid: 300}))
	if len(seen) != 0 {
		t.Fatalf("handed out before its completion: %+v", seen)
	}
	s.E.HandleComplete(enginetest.Done(0xa, 200, 0))
	call := uint64(5)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xc, 300, enginetest.FlRead, enginetest.Own{Op: call, Bio: 0xb2, Bytes: 4096, Queue: 290}))
	s.E.HandleComplete(enginetest.Done(0xc, 400, 0))
	sum := s.E.Summary()
	if sum.UnattributedBios != 1 || len(sum.Pids) != 1 || sum.Pids[0].Unattributed != 1 || sum.Pids[0].DiskBytesRead != 4096 {
		t.Fatalf("summary %+v", sum)
	}
	if len(seen) != 1 || seen[0].pid != 300 || seen[0].cause != "unknown" || seen[0].b.Sector != 8 || seen[0].b.IssueNs != 110 || seen[0].b.CompleteNs != 200 ||
		seen[0].b.D2CNs != 90 || seen[0].b.Q2CNs != 100 || seen[0].b.Bytes != 4096 {
		t.Errorf("UnattributedBio got %+v", seen)
	}
}

// More inserted ranges than the kernel record keeps: the counts come from
// the kernel's totals, so misses and pages added stay exact.
func TestTruncatedRangesKeepExactCounts(t *testing.T) {
	o := enginetest.Op(1, bpf.IopathOpSysSYS_PREAD64, 0, 1<<20, 1<<20, 1, 2)
	for i := uint64(0); i < 24; i++ {
		enginetest.AddRange(o, 2*i+1, 1, engine.RangeAdded) // every other page was cached
	}
	o.PagesAdded, o.PagesInRange, o.RangesLost = 128, 128, 104
	r := oneRecord(t, o)
	if r.Cache.PagesRequested != 256 || r.Cache.PagesMissed != 128 || r.Cache.PagesHit != 128 || r.Cache.PagesAdded != 128 {
		t.Errorf("cache %+v", r.Cache)
	}
	if r.Truncated == nil || r.Truncated.RangePages != 104 {
		t.Errorf("truncation not reported: %+v", r.Truncated)
	}
}

// The engine recycles its pending calls, requests and bios. Records must
// not share that state: a record handed out stays as it was while later
// calls reuse the objects, including a bio whose completion arrives after
// Tick released its call.
func TestRecycledStateKeepsRecords(t *testing.T) {
	s := enginetest.NewStream()
	var snap [][]record.Bio
	s.E.Out = func(r any) {
		s.Recs = append(s.Recs, r)
		if c, ok := r.(*record.Syscall); ok {
			snap = append(snap, slices.Clone(c.Bios))
		}
	}
	// A call whose completion is late: released by Tick, completed after.
	late := uint64(9)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead, enginetest.Own{Op: late, Bio: 0xb0, Sector: 8, Bytes: 4096, Queue: 100}))
	o := enginetest.Op(late, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 90, 200)
	o.BiosQueued = 1
	s.E.HandleOp(o)
	s.E.Tick(200 + s.E.HoldNs + 1)
	s.E.HandleComplete(enginetest.Done(0xa, 200+s.E.HoldNs+2, 0))
	// Then calls in every event order, two bios each, on recycled tags.
	ts := 1_000 + s.E.HoldNs
	for i := uint64(1); i <= 50; i++ {
		id := uint64(10)<<32 | i
		ts += 1_000
		issue := func() {
			s.E.HandleIssue(enginetest.Issue(0xb+i%3, ts+10, enginetest.FlRead,
				enginetest.Own{Op: id, Bio: 0xc0 + i, Sector: i * 16, Bytes: 4096, Queue: ts + 5},
				enginetest.Own{Op: id, Bio: 0xd0 + i, Sector: i*16 + 8, Bytes: 4096, Queue: ts + 6}))
		}
		done := func() { s.E.HandleComplete(enginetest.Done(0xb+i%3, ts+100, 0)) }
		op := func() {
			o := enginetest.Op(id, bpf.IopathOpSysSYS_READ, i*8192, 8192, 8192, ts, ts+200)
			o.BiosQueued = 2
			s.E.HandleOp(o)
		}
		switch i % 3 {
		case 0:
			issue()
			done()
			op()
		case 1:
			issue()
			op()
			done()
		case 2:
			op()
			issue()
			done()
		}
	}
	calls := s.Syscalls()
	if ops, rqs := s.E.Pending(); len(calls) != 51 || ops != 0 || rqs != 0 {
		t.Fatalf("%d records, %d calls and %d requests pending", len(calls), ops, rqs)
	}
	if b := calls[0].Bios; len(b) != 1 || b[0].Sector != 8 || b[0].CompleteNs != 0 {
		t.Errorf("late call's bios changed after its release: %+v", b)
	}
	for i, c := range calls[1:] {
		n := uint64(i + 1)
		if len(c.Bios) != 2 || c.Bios[0].Sector != n*16 || c.Bios[1].Sector != n*16+8 || c.Bios[0].CompleteNs == 0 {
			t.Errorf("call %d: bios %+v", n, c.Bios)
		}
	}
	for i, c := range calls {
		if !reflect.DeepEqual(c.Bios, snap[i]) {
			t.Errorf("record %d changed after it was emitted: %+v, was %+v", i, c.Bios, snap[i])
		}
	}
}

// A call that queued no bio skips the pending map, but bios that named it
// before its record arrived are still joined.
func TestNoBioCallKeepsEarlierBios(t *testing.T) {
	s := enginetest.NewStream()
	id := uint64(11)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0xa, 110, enginetest.FlRead, enginetest.Own{Op: id, Bio: 0xb1, Sector: 24, Bytes: 4096, Queue: 105}))
	s.E.HandleComplete(enginetest.Done(0xa, 300, 0))
	s.E.HandleOp(enginetest.Op(id, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 100, 320)) // bios_queued = 0
	s.E.HandleOp(enginetest.Op(id+1, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 400, 420))
	c := s.Syscalls()
	if len(c) != 2 || len(c[0].Bios) != 1 || c[0].Bios[0].Sector != 24 || c[1].Bios == nil || len(c[1].Bios) != 0 {
		t.Fatalf("records %+v", c)
	}
	if ops, _ := s.E.Pending(); ops != 0 {
		t.Errorf("%d calls left pending", ops)
	}
}

// Bios whose call record never arrives (lost EV_OP) must not pile up: the
// pending map is bounded, and what it evicts is counted in the summary.
// An evicted call that has its record is released with what it has.
func TestPendingCallsBounded(t *testing.T) {
	s := enginetest.NewStream()
	s.E.MaxPending = 8
	waiting := uint64(12)<<32 | 1
	s.E.HandleIssue(enginetest.Issue(0x100, 50, enginetest.FlRead, enginetest.Own{Op: waiting, Bio: 0xb0, Bytes: 4096, Queue: 45}))
	o := enginetest.Op(waiting, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 40, 60)
	o.BiosQueued = 1
	s.E.HandleOp(o) // held for its bio's completion
	for i := uint64(1); i <= 20; i++ {
		s.E.HandleIssue(enginetest.Issue(0x100+i, 100+i, enginetest.FlRead, enginetest.Own{Op: uint64(13)<<32 | i, Bio: 0xc0 + i, Bytes: 4096, Queue: 90 + i}))
	}
	ops, _ := s.E.Pending()
	if ops > 8 {
		t.Fatalf("%d calls pending, bound 8", ops)
	}
	ev := s.E.Counters().EvictedCalls
	if ev != 21-uint64(ops) {
		t.Errorf("evicted %d, but %d of 21 calls are gone", ev, 21-ops)
	}
	c := s.Syscalls()
	if len(c) != 1 || c[0].OpID != waiting || len(c[0].Bios) != 1 || c[0].Bios[0].CompleteNs != 0 {
		t.Fatalf("the oldest call was not released with its bio: %+v", c)
	}
	if got := s.E.Summary().MapEvictions["pending_calls"]; got != ev {
		t.Errorf("summary map_evictions.pending_calls = %d, want %d", got, ev)
	}
	// Completions of evicted calls' requests are harmless.
	s.E.HandleComplete(enginetest.Done(0x100, 300, 0))
	s.E.HandleComplete(enginetest.Done(0x101, 301, 0))
	if len(s.Syscalls()) != 1 {
		t.Errorf("a completion re-released an evicted call")
	}
}

// The engine caches comm, filesystem, device and path strings; a record
// must still carry its own call's values when they change from call to call.
func TestCachedStringsFollowChanges(t *testing.T) {
	s := enginetest.NewStream()
	setPath := func(o *bpf.IopathOp, name string) {
		o.PathDepth, o.PathDone = 1, 1
		for i := range len(name) {
			o.Path[0][i] = int8(name[i])
		}
	}
	type want struct{ comm, fs, dev, path string }
	var wants []want
	for i, w := range []struct {
		comm  string
		magic uint64
		dev   uint32
		path  string
	}{
		{"cat", 0xef53, enginetest.Dev, "a"}, {"dd", 0xef53, enginetest.Dev, ""}, {"cat", 0x58465342, enginetest.Dev | 1, "b"},
		{"cat", 0, enginetest.Dev, "b"}, {"dd", 0x1234, enginetest.Dev, ""},
	} {
		o := enginetest.Op(uint64(20)<<32|uint64(i+1), bpf.IopathOpSysSYS_READ, 0, 1, 1, 100, 200)
		copy(o.Comm[:], []int8{0, 0, 0, 0})
		for j := range len(w.comm) {
			o.Comm[j] = int8(w.comm[j])
		}
		o.FsMagic, o.Dev = w.magic, w.dev
		if w.path != "" {
			setPath(o, w.path)
		}
		s.E.HandleOp(o)
		fs := kernel.FSName(w.magic)
		p := "/" + w.path
		if w.path == "" {
			// No path in the record (its path record was lost): none,
			// never the inode's last one, which may be another link.
			p = ""
		}
		wants = append(wants, want{w.comm, fs, kernel.Dev(w.dev), p})
	}
	for i, c := range s.Syscalls() {
		if got := (want{c.Comm, c.FS, c.Dev, c.Path}); got != wants[i] {
			t.Errorf("call %d: got %+v, want %+v", i, got, wants[i])
		}
	}
}
