package tracer

import (
	"reflect"
	"slices"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// Synthetic event builders. Kernel dev_t 254:0 = 254<<20.
const testDev = 254 << 20

// Request flags on 6.18: op in the low 8 bits, RAHEAD bit 19, SYNC bit 11.
const (
	flRead   = 0
	flWrite  = 1
	flRahead = 1 << 19
	flSync   = 1 << 11
)

type stream struct {
	t    *testing.T
	e    *Engine
	recs []any
}

func newStream(t *testing.T) *stream {
	s := &stream{t: t}
	s.e = NewEngine(Linux618(), func(r any) { s.recs = append(s.recs, r) })
	return s
}

func opEv(id uint64, sys bpf.IopathOpSys, off, count uint64, ret int64, start, end uint64) *bpf.IopathOp {
	return &bpf.IopathOp{Type: uint32(bpf.IopathEvTypeEV_OP), Sys: uint32(sys), Pid: 100, Tid: uint32(id >> 32),
		OpId: id, StartNs: start, EndNs: end, Ret: ret, Fd: 3, Offset: off, Count: count, Ino: 42, Dev: testDev}
}

func addRange(o *bpf.IopathOp, index uint64, nr uint32, flags uint32) {
	o.Ranges[o.NrRanges].Index = index
	o.Ranges[o.NrRanges].Nr = nr
	o.Ranges[o.NrRanges].Flags = flags
	o.NrRanges++
	if flags == rangeAdded {
		o.PagesAdded += nr
		if o.Count > 0 {
			o.PagesInRange += uint32(overlap(index, index+uint64(nr)-1, o.Offset>>12, (o.Offset+o.Count-1)>>12, true))
		}
	} else {
		o.DirtiedPages += nr
	}
}

type own struct {
	op     uint64
	bio    uint64
	sector uint64
	bytes  uint32
	queue  uint64
	flags  uint32
	pid    uint32
}

func issueEv(rq uint64, ts uint64, flags uint32, owns ...own) *bpf.IopathRqIssueEv {
	ev := &bpf.IopathRqIssueEv{Type: uint32(bpf.IopathEvTypeEV_RQ_ISSUE), Dev: testDev, Rq: rq, Ts: ts, CmdFlags: flags}
	for i, o := range owns {
		ev.Own[i].OpId = o.op
		ev.Own[i].Bio = o.bio
		ev.Own[i].Sector = o.sector
		ev.Own[i].Bytes = o.bytes
		ev.Own[i].QueueNs = o.queue
		ev.Own[i].Flags = o.flags
		ev.Own[i].Pid = max(o.pid, 100)
		ev.Bytes += o.bytes
		if i == 0 {
			ev.Sector = o.sector
		}
	}
	ev.NrOwn = uint32(len(owns))
	ev.NrBios = uint32(len(owns))
	return ev
}

func doneEv(rq, ts uint64, status uint32) *bpf.IopathRqDoneEv {
	return &bpf.IopathRqDoneEv{Type: uint32(bpf.IopathEvTypeEV_RQ_COMPLETE), Rq: rq, Ts: ts, Error: status}
}

func (s *stream) syscalls() []*record.Syscall {
	var out []*record.Syscall
	for _, r := range s.recs {
		if c, ok := r.(*record.Syscall); ok {
			out = append(out, c)
		}
	}
	return out
}

func (s *stream) persisted() []*record.Persisted {
	var out []*record.Persisted
	for _, r := range s.recs {
		if c, ok := r.(*record.Persisted); ok {
			out = append(out, c)
		}
	}
	return out
}

func TestColdOneByteRead(t *testing.T) {
	s := newStream(t)
	id := uint64(7)<<32 | 1
	// The sync read waits for its bio: issue and completion come before the call's exit.
	s.e.HandleIssue(issueEv(0xa, 110, flRead|flRahead, own{op: id, bio: 0xb1, sector: 800, bytes: 16384, queue: 105}))
	s.e.HandleComplete(doneEv(0xa, 300, 0))
	o := opEv(id, bpf.IopathOpSysSYS_READ, 0, 1, 1, 100, 320)
	addRange(o, 0, 4, rangeAdded)
	o.BiosQueued = 1
	o.NrRa = 1
	o.Ra[0].Size, o.Ra[0].AsyncSize, o.Ra[0].ReqCount, o.Ra[0].Kind = 4, 3, 1, raSync
	s.e.HandleOp(o)
	calls := s.syscalls()
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
	s := newStream(t)
	id := uint64(7)<<32 | 2
	s.e.HandleIssue(issueEv(0xa, 110, flRead|flRahead, own{op: id, bio: 0xb1, bytes: 4096, queue: 105}))
	o := opEv(id, bpf.IopathOpSysSYS_READ, 4096, 4096, 4096, 100, 200)
	o.BiosQueued = 1
	addRange(o, 8, 1, rangeAdded)
	s.e.HandleOp(o)
	if len(s.syscalls()) != 0 {
		t.Fatal("released before its bio completed")
	}
	s.e.HandleComplete(doneEv(0xa, 500, 0))
	calls := s.syscalls()
	if len(calls) != 1 || calls[0].Bios[0].CompleteNs != 500 {
		t.Fatalf("records %+v", calls)
	}
	// Page 8 is beyond the requested page 1: a hit plus readahead, derived.
	c := calls[0]
	if c.Cache.PagesHit != 1 || c.Cache.PagesMissed != 0 || c.Cache.Readahead[0].Kind != "async" || c.Cache.Readahead[0].Source != "derived" {
		t.Errorf("cache = %+v", c.Cache)
	}
}

// A request carrying bios of two calls (a merge): each call gets its bio's bytes.
func TestMergedRequestSplitsBytesByBio(t *testing.T) {
	s := newStream(t)
	a, b := uint64(1)<<32|1, uint64(2)<<32|1
	s.e.HandleIssue(issueEv(0xa, 110, flRead,
		own{op: a, bio: 0xb1, sector: 0, bytes: 8192, queue: 100},
		own{op: b, bio: 0xb2, sector: 16, bytes: 4096, queue: 101}))
	s.e.HandleComplete(doneEv(0xa, 400, 0))
	for _, id := range []uint64{a, b} {
		o := opEv(id, bpf.IopathOpSysSYS_PREAD64, 0, 4096, 4096, 90, 410)
		o.BiosQueued = 1
		s.e.HandleOp(o)
	}
	calls := s.syscalls()
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
	s := newStream(t)
	id := uint64(3)<<32 | 1
	s.e.HandleIssue(issueEv(0xa, 110, flRead, own{op: id, bio: 0xb1, bytes: 4096, queue: 100}))
	s.e.HandleRequeue(&bpf.IopathRqDoneEv{Type: uint32(bpf.IopathEvTypeEV_RQ_REQUEUE), Rq: 0xa, Ts: 150})
	s.e.HandleIssue(issueEv(0xa, 200, flRead, own{op: id, bio: 0xb1, bytes: 4096, queue: 100}))
	s.e.HandleComplete(doneEv(0xa, 500, 0))
	o := opEv(id, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 90, 510)
	o.BiosQueued = 1
	s.e.HandleOp(o)
	c := s.syscalls()
	if len(c) != 1 || len(c[0].Bios) != 1 || c[0].Bios[0].Requeues != 1 || c[0].Bios[0].D2CNs != 300 {
		t.Fatalf("got %+v", c)
	}
}

// Completions in another order than issues.
func TestOutOfOrderCompletions(t *testing.T) {
	s := newStream(t)
	id := uint64(4)<<32 | 1
	s.e.HandleIssue(issueEv(0xa, 110, flRead, own{op: id, bio: 0xb1, sector: 0, bytes: 4096, queue: 100}))
	s.e.HandleIssue(issueEv(0xb, 120, flRead, own{op: id, bio: 0xb2, sector: 8, bytes: 4096, queue: 101}))
	o := opEv(id, bpf.IopathOpSysSYS_READ, 0, 8192, 8192, 90, 600)
	o.BiosQueued = 2
	s.e.HandleOp(o)
	s.e.HandleComplete(doneEv(0xb, 300, 0))
	if len(s.syscalls()) != 0 {
		t.Fatal("released with one bio in flight")
	}
	s.e.HandleComplete(doneEv(0xa, 400, 10))
	c := s.syscalls()
	if len(c) != 1 || len(c[0].Bios) != 2 || c[0].Bios[0].Error != "BLK_STS_IOERR" || c[0].Bios[1].CompleteNs != 300 {
		t.Fatalf("got %+v", c[0].Bios)
	}
}

// Lost events: a completion that never arrives. Tick releases the call
// after HoldNs and counts the bio as incomplete; a completion for a request
// never seen issued is counted, not crashed on.
func TestLostCompletion(t *testing.T) {
	s := newStream(t)
	id := uint64(5)<<32 | 1
	s.e.HandleIssue(issueEv(0xa, 110, flRead, own{op: id, bio: 0xb1, bytes: 4096, queue: 100}))
	o := opEv(id, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 90, 200)
	o.BiosQueued = 1
	s.e.HandleOp(o)
	s.e.Tick(200 + s.e.HoldNs/2)
	if len(s.syscalls()) != 0 {
		t.Fatal("released too early")
	}
	s.e.Tick(200 + s.e.HoldNs + 1)
	c := s.syscalls()
	if len(c) != 1 || c[0].Bios[0].CompleteNs != 0 || s.e.Counters().IncompleteBios != 1 {
		t.Fatalf("got %+v, counters %+v", c, s.e.Counters())
	}
	s.e.HandleComplete(doneEv(0xdead, 900, 0))
	if s.e.Counters().OrphanCompletes != 1 {
		t.Errorf("orphan completion not counted: %+v", s.e.Counters())
	}
}

// A queued bio whose issue event was lost: the call waits for it, then Flush
// releases it at the end of the trace.
func TestFlushReleasesWaitingCalls(t *testing.T) {
	s := newStream(t)
	o := opEv(uint64(6)<<32|1, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 90, 200)
	o.BiosQueued = 1
	s.e.HandleOp(o)
	s.e.Flush()
	if len(s.syscalls()) != 1 {
		t.Fatal("flush did not release")
	}
}

func TestHitsNeverNegative(t *testing.T) {
	// More pages added in range than requested (a large folio straddling the range).
	o := opEv(1, bpf.IopathOpSysSYS_READ, 4096, 100, 100, 1, 2)
	addRange(o, 0, 16, rangeAdded)
	r := NewEngine(Linux618(), nil).syscallRecord(o)
	if r.Cache.PagesMissed != 1 || r.Cache.PagesHit != 0 || r.Cache.PagesRequested != 1 {
		t.Errorf("cache = %+v", r.Cache)
	}
	// EOF: nothing returned, nothing requested.
	o = opEv(2, bpf.IopathOpSysSYS_READ, 1<<20, 4096, 0, 1, 2)
	if r := NewEngine(Linux618(), nil).syscallRecord(o); r.Cache.PagesRequested != 0 || r.Cache.PagesHit != 0 {
		t.Errorf("EOF cache = %+v", r.Cache)
	}
	// Error: errno name, no bytes.
	o = opEv(3, bpf.IopathOpSysSYS_READ, 0, 4096, -22, 1, 2)
	if r := NewEngine(Linux618(), nil).syscallRecord(o); r.Error != "EINVAL" || r.ReturnedBytes != 0 {
		t.Errorf("error record = %+v", r)
	}
}

func TestUnattributedBiosCounted(t *testing.T) {
	s := newStream(t)
	s.e.HandleIssue(issueEv(0xa, 110, flRead, own{op: 0, bio: 0xb1, bytes: 4096, queue: 100, pid: 300}))
	s.e.HandleComplete(doneEv(0xa, 200, 0))
	sum := s.e.Summary()
	if sum.UnattributedBios != 1 || len(sum.Pids) != 1 || sum.Pids[0].Unattributed != 1 || sum.Pids[0].DiskBytesRead != 4096 {
		t.Fatalf("summary %+v", sum)
	}
}

func TestRwbs(t *testing.T) {
	k := Linux618()
	for flags, want := range map[uint32]string{
		flRead | flRahead:        "RA",
		flWrite | flSync:         "WS",
		flWrite | 1<<18 | 1<<17:  "FWF",
		flRead | flSync | 1<<12:  "RSM",
		2:                        "F",
		3:                        "D",
		flWrite | flSync | 1<<12: "WSM",
	} {
		if got := k.Rwbs(flags); got != want {
			t.Errorf("Rwbs(%#x) = %q, want %q", flags, got, want)
		}
	}
}

func TestDevEncoding(t *testing.T) {
	if Dev(254<<20|3) != "254:3" {
		t.Error(Dev(254<<20 | 3))
	}
	// glibc dev_t for 254:3 is 0xfe03.
	if UserDev(0xfe03) != 254<<20|3 {
		t.Errorf("UserDev = %#x", UserDev(0xfe03))
	}
}

// More inserted ranges than the kernel record keeps: the counts come from
// the kernel's totals, so misses and pages added stay exact.
func TestTruncatedRangesKeepExactCounts(t *testing.T) {
	o := opEv(1, bpf.IopathOpSysSYS_PREAD64, 0, 1<<20, 1<<20, 1, 2)
	for i := uint64(0); i < 24; i++ {
		addRange(o, 2*i+1, 1, rangeAdded) // every other page was cached
	}
	o.PagesAdded, o.PagesInRange, o.RangesLost = 128, 128, 104
	r := NewEngine(Linux618(), nil).syscallRecord(o)
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
	s := newStream(t)
	var snap [][]record.Bio
	s.e.Out = func(r any) {
		s.recs = append(s.recs, r)
		if c, ok := r.(*record.Syscall); ok {
			snap = append(snap, slices.Clone(c.Bios))
		}
	}
	// A call whose completion is late: released by Tick, completed after.
	late := uint64(9)<<32 | 1
	s.e.HandleIssue(issueEv(0xa, 110, flRead, own{op: late, bio: 0xb0, sector: 8, bytes: 4096, queue: 100}))
	o := opEv(late, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 90, 200)
	o.BiosQueued = 1
	s.e.HandleOp(o)
	s.e.Tick(200 + s.e.HoldNs + 1)
	s.e.HandleComplete(doneEv(0xa, 200+s.e.HoldNs+2, 0))
	// Then calls in every event order, two bios each, on recycled tags.
	ts := 1_000 + s.e.HoldNs
	for i := uint64(1); i <= 50; i++ {
		id := uint64(10)<<32 | i
		ts += 1_000
		issue := func() {
			s.e.HandleIssue(issueEv(0xb+i%3, ts+10, flRead,
				own{op: id, bio: 0xc0 + i, sector: i * 16, bytes: 4096, queue: ts + 5},
				own{op: id, bio: 0xd0 + i, sector: i*16 + 8, bytes: 4096, queue: ts + 6}))
		}
		done := func() { s.e.HandleComplete(doneEv(0xb+i%3, ts+100, 0)) }
		op := func() {
			o := opEv(id, bpf.IopathOpSysSYS_READ, i*8192, 8192, 8192, ts, ts+200)
			o.BiosQueued = 2
			s.e.HandleOp(o)
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
	calls := s.syscalls()
	if len(calls) != 51 || len(s.e.ops) != 0 || len(s.e.rqs) != 0 {
		t.Fatalf("%d records, %d calls and %d requests pending", len(calls), len(s.e.ops), len(s.e.rqs))
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
	s := newStream(t)
	id := uint64(11)<<32 | 1
	s.e.HandleIssue(issueEv(0xa, 110, flRead, own{op: id, bio: 0xb1, sector: 24, bytes: 4096, queue: 105}))
	s.e.HandleComplete(doneEv(0xa, 300, 0))
	s.e.HandleOp(opEv(id, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 100, 320)) // bios_queued = 0
	s.e.HandleOp(opEv(id+1, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 400, 420))
	c := s.syscalls()
	if len(c) != 2 || len(c[0].Bios) != 1 || c[0].Bios[0].Sector != 24 || c[1].Bios == nil || len(c[1].Bios) != 0 {
		t.Fatalf("records %+v", c)
	}
	if len(s.e.ops) != 0 {
		t.Errorf("%d calls left pending", len(s.e.ops))
	}
}

// Bios whose call record never arrives (lost EV_OP) must not pile up: the
// pending map is bounded, and what it evicts is counted in the summary.
// An evicted call that has its record is released with what it has.
func TestPendingCallsBounded(t *testing.T) {
	s := newStream(t)
	s.e.MaxPending = 8
	waiting := uint64(12)<<32 | 1
	s.e.HandleIssue(issueEv(0x100, 50, flRead, own{op: waiting, bio: 0xb0, bytes: 4096, queue: 45}))
	o := opEv(waiting, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 40, 60)
	o.BiosQueued = 1
	s.e.HandleOp(o) // held for its bio's completion
	for i := uint64(1); i <= 20; i++ {
		s.e.HandleIssue(issueEv(0x100+i, 100+i, flRead, own{op: uint64(13)<<32 | i, bio: 0xc0 + i, bytes: 4096, queue: 90 + i}))
	}
	if len(s.e.ops) > 8 {
		t.Fatalf("%d calls pending, bound 8", len(s.e.ops))
	}
	ev := s.e.Counters().EvictedCalls
	if ev != 21-uint64(len(s.e.ops)) {
		t.Errorf("evicted %d, but %d of 21 calls are gone", ev, 21-len(s.e.ops))
	}
	c := s.syscalls()
	if len(c) != 1 || c[0].OpID != waiting || len(c[0].Bios) != 1 || c[0].Bios[0].CompleteNs != 0 {
		t.Fatalf("the oldest call was not released with its bio: %+v", c)
	}
	if got := s.e.Summary().MapEvictions["pending_calls"]; got != ev {
		t.Errorf("summary map_evictions.pending_calls = %d, want %d", got, ev)
	}
	// Completions of evicted calls' requests are harmless.
	s.e.HandleComplete(doneEv(0x100, 300, 0))
	s.e.HandleComplete(doneEv(0x101, 301, 0))
	if len(s.syscalls()) != 1 {
		t.Errorf("a completion re-released an evicted call")
	}
}

// The engine caches comm, filesystem, device and path strings; a record
// must still carry its own call's values when they change from call to call.
func TestCachedStringsFollowChanges(t *testing.T) {
	s := newStream(t)
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
		{"cat", 0xef53, testDev, "a"}, {"dd", 0xef53, testDev, ""}, {"cat", 0x58465342, testDev | 1, "b"},
		{"cat", 0, testDev, "b"}, {"dd", 0x1234, testDev, ""},
	} {
		o := opEv(uint64(20)<<32|uint64(i+1), bpf.IopathOpSysSYS_READ, 0, 1, 1, 100, 200)
		copy(o.Comm[:], []int8{0, 0, 0, 0})
		for j := range len(w.comm) {
			o.Comm[j] = int8(w.comm[j])
		}
		o.FsMagic, o.Dev = w.magic, w.dev
		if w.path != "" {
			setPath(o, w.path)
		}
		s.e.HandleOp(o)
		fs := FSName(w.magic)
		p := "/" + w.path
		if w.path == "" {
			// No path in the record (its path record was lost): none,
			// never the inode's last one, which may be another link.
			p = ""
		}
		wants = append(wants, want{w.comm, fs, Dev(w.dev), p})
	}
	for i, c := range s.syscalls() {
		if got := (want{c.Comm, c.FS, c.Dev, c.Path}); got != wants[i] {
			t.Errorf("call %d: got %+v, want %+v", i, got, wants[i])
		}
	}
}
