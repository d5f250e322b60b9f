package engine

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
	"golang.org/x/sys/unix"
)

type pendingOp struct {
	rec    *record.Syscall
	fault  *record.Fault // a page fault's record (faults.go) instead of rec
	queued uint32        // op.bios_queued
	// queuedBytes: op.bio_bytes, the bytes of those bios at queue time; a
	// bio split before issue is two bios with those bytes between them
	queuedBytes uint64
	bios        []*bioRef
	firstTs     uint64
	kdev        uint32 // kernel dev_t of the call's file
	isWrite     bool
	// commitNeeded: its flushes are those of the jbd2 commit ext4 said it
	// needed (flushreq.go, commitNeed); a wake no longer changes them.
	commitNeeded bool
}

func (e *Engine) op(id uint64, ts uint64) *pendingOp {
	p := e.ops[id]
	if p == nil {
		p = e.newOp(id, ts)
	}
	return p
}

// newOp adds a pending call, making room first if the map is full.
func (e *Engine) newOp(id uint64, ts uint64) *pendingOp {
	limit := e.MaxPending
	if limit <= 0 {
		limit = defPending
	}
	if len(e.ops) >= limit {
		e.evictPending()
	}
	p := reuse(&e.freeOps)
	p.firstTs = ts
	e.ops[id] = p
	return p
}

// evictPending makes room in a full pending map by evicting its oldest
// calls (by first event): a scan and sort per MaxPending/evictShare
// insertions. Calls with a record are released with what they have; bios
// whose call never arrived (its EV_OP lost) are dropped.
func (e *Engine) evictPending() {
	type age struct{ ts, id uint64 }
	ages := make([]age, 0, len(e.ops))
	for id, p := range e.ops {
		ages = append(ages, age{p.firstTs, id})
	}
	slices.SortFunc(ages, func(a, b age) int { return cmp.Compare(a.ts, b.ts) })
	for _, a := range ages[:len(ages)/evictShare+1] {
		p := e.ops[a.id]
		e.counters.EvictedCalls++
		if p.ready() {
			e.release(a.id, p)
			continue
		}
		delete(e.ops, a.id)
		e.putOp(p)
	}
}

// HandleOp takes an EV_OP record (a call at its exit).
func (e *Engine) HandleOp(o *bpf.IopathOp) {
	e.seen(o.EndNs)
	if o.Sys == SysFault {
		e.handleFault(o)
		e.persistedNamed(o.OpId) // persistwait.go
		return
	}
	rec := e.syscallRecord(o)
	rec.Unavailable = e.Unavailable
	if isRequestSys(rec.Syscall) {
		e.noteRequestFile(rec, o) // asyncio.go
	}
	isWrite := sysClass(o.Sys) == record.ClassWrite
	if o.DirtiedPages > 0 { // writes, and in-kernel copies (their output's pages)
		e.dirtyOf[o.OpId] = fkey(o.Dev, o.Ino)
		if o.OutIno != 0 {
			e.dirtyOf[o.OpId] = fkey(o.OutDev, o.OutIno)
		}
		e.adjustDirty(o.OpId, int64(o.DirtiedPages))
	}
	e.accountCopy(rec, o.OutDev) // totals.go
	if isWrite && o.Ret > 0 && kernel.MemoryOnly(rec.FS) {
		e.memoryWrites.Add(1)
	}
	p := e.ops[o.OpId]
	if p == nil {
		if o.BiosQueued == 0 {
			// Most calls queue no bio and none named them: the record is
			// complete now, with no pending state to create and delete.
			e.emit(rec, o.Dev, nil, 0, isWrite)
			e.persistedNamed(o.OpId) // persistwait.go
			return
		}
		p = e.newOp(o.OpId, o.StartNs)
	}
	p.rec = rec
	p.queued, p.queuedBytes = o.BiosQueued, uint64(o.BioBytes)
	p.kdev = o.Dev
	p.isWrite = isWrite
	e.tryRelease(o.OpId, p)
	e.persistedNamed(o.OpId) // persistwait.go
}

// tryRelease prints a call once its record and all its bios are complete.
func (e *Engine) tryRelease(id uint64, p *pendingOp) {
	if !p.ready() {
		return
	}
	e.flushesUnseen(p)  // flushunseen.go
	e.directCallDone(p) // directunseen.go
	if n, bytes := queuedSeen(p.bios); n < p.queued || bytes < p.queuedBytes {
		return
	}
	for _, b := range p.bios {
		if !b.done {
			return
		}
	}
	e.release(id, p)
}

func (e *Engine) release(id uint64, p *pendingOp) {
	delete(e.ops, id)
	e.dropBios(p, hidden) // flushreq.go
	if p.fault != nil {
		e.emitFault(p.fault, p.kdev, p.bios, p.queued)
	} else {
		e.emit(p.rec, p.kdev, p.bios, p.queued, p.isWrite)
	}
	e.putOp(p)
}

// ready says whether the op's record (a call's or a fault's) has arrived.
func (p *pendingOp) ready() bool { return p.rec != nil || p.fault != nil }

// startNs is when the op started (its record has arrived).
func (p *pendingOp) startNs() uint64 {
	if p.fault != nil {
		return p.fault.TimeNs
	}
	return p.rec.TimeNs
}

// endNs is when the op ended (its record has arrived).
func (p *pendingOp) endNs() uint64 {
	if p.fault != nil {
		return p.fault.TimeNs + p.fault.DurationNs
	}
	return p.rec.TimeNs + p.rec.DurationNs
}

// emit completes a call's record with its bios (queued: how many the
// kernel says it queued), accounts it and hands it to Out.
func (e *Engine) emit(rec *record.Syscall, kdev uint32, bios []*bioRef, queued uint32, isWrite bool) {
	if n, _ := queuedSeen(bios); n < queued {
		e.counters.IncompleteBios += uint64(queued - n)
		e.counters.NeverIssued += uint64(queued - n) // queued, never seen issued
	}
	if rec.Bios == nil || cap(rec.Bios) < len(bios) {
		rec.Bios = make([]record.Bio, 0, len(bios)) // empty, not nil, for a call without bios: "bios":[]
	}
	rec.Bios = rec.Bios[:0]
	if len(bios) > 1 {
		slices.SortStableFunc(bios, func(a, b *bioRef) int { return cmp.Compare(a.IssueNs, b.IssueNs) })
	}
	var readBytes uint64
	for _, b := range bios {
		if !b.done {
			e.counters.IncompleteBios++
		}
		if isWrite && b.Rwbs != "" && b.Rwbs[0] == 'R' {
			rec.ReadBeforeWritePages += (b.Bytes + 4095) / 4096
		}
		if b.Rwbs != "" && (b.Rwbs[0] == 'R') {
			readBytes += uint64(b.Bytes)
		}
		if record.SyncsDevice(rec) || b.flags&ownFlushReq != 0 {
			b.Kind = bioKind(b)
		}
		rec.Bios = append(rec.Bios, b.Bio)
	}
	unseenTimes(rec) // flushunseen.go
	if record.SyncsDevice(rec) {
		rec.DeviceFlush = e.deviceFlush(rec, kdev) // flush.go
		if rec.Syscall == "sync" || rec.Syscall == "syncfs" {
			rec.SyncWriteback = e.syncWriteback(rec, kdev) // syncwb.go
		}
	}
	if isRequestSys(rec.Syscall) {
		e.requestPart(rec, kdev, bios, readBytes) // asyncio.go
		return
	}
	e.account(rec, kdev, readBytes)
	e.Out(rec)
}

// Tick releases calls that have waited HoldNs (kernel time) for bios that
// never completed or were never issued, e.g. remapped by device mapper.
func (e *Engine) Tick(now uint64) {
	if now > e.lastTs {
		e.lastTs = now
	}
	for id, p := range e.ops {
		if p.ready() && e.lastTs > p.endNs()+e.HoldNs {
			e.release(id, p)
		}
	}
	e.asyncTick()       // asyncio.go
	e.persistWaitTick() // persistwait.go
}

// Flush releases every pending call (end of trace), in op order.
func (e *Engine) Flush() {
	ids := make([]uint64, 0, len(e.ops))
	for id, p := range e.ops {
		if p.ready() {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return e.ops[ids[i]].startNs() < e.ops[ids[j]].startNs() })
	for _, id := range ids {
		e.release(id, e.ops[id])
	}
	e.asyncFlush()       // asyncio.go
	e.persistWaitFlush() // persistwait.go
	e.dropUnrecorded()
}

// CauseNoRecord is the unattributed cause of a bio whose call or fault
// never produced a record: a fault whose end was never seen
// (faults_unended), a call still running at the end of the trace, a record
// lost in the ring buffer (lost_events).
const CauseNoRecord = "no_record"

// dropUnrecorded ends the trace's calls whose record never came: their
// bios go to the unattributed counts of the process that queued them
// (cause no_record), so no disk byte leaves the totals.
func (e *Engine) dropUnrecorded() {
	for id, p := range e.ops {
		if p.ready() {
			continue
		}
		for _, b := range p.bios {
			// rwbs: R or W, after F for a preflush (FWS)
			e.unattributedBio(b.pid, b.Bytes, CauseNoRecord, strings.ContainsRune(b.Rwbs, 'R'), strings.ContainsRune(b.Rwbs, 'W'))
		}
		delete(e.ops, id)
		e.putOp(p)
	}
}

// syscallRecord turns a call's kernel record into its JSON record (bios are
// attached later by emit; the page cache by pageCache, readahead by
// readahead). Strings repeated across calls (comm, dev, path) come from the engine's
// caches; the path also updates the engine's per-file path memory.
func (e *Engine) syscallRecord(o *bpf.IopathOp) *record.Syscall {
	var rec *record.Syscall
	var blk *recordBlock
	if o.NrRanges > 0 || o.NrRa > 0 || o.BiosQueued > 0 {
		blk = &recordBlock{}
		rec = &blk.rec
	} else {
		rec = new(record.Syscall)
	}
	*rec = record.Syscall{
		Type: record.TypeSyscall, OpID: o.OpId, TimeNs: o.StartNs, Pid: o.Pid, Tid: o.Tid, Comm: e.comm(cBytes(o.Comm[:])),
		Syscall: SysName(o.Sys), Fd: o.Fd, Path: e.opPath(o), Dev: e.devName(o.Dev), Ino: o.Ino, FS: e.fsName(o.FsMagic),
		Offset: o.Offset, RequestedBytes: o.Count, ReturnedBytes: o.Ret, DurationNs: sub(o.EndNs, o.StartNs),
		BlockedNs: o.BlockedNs, DirtiedPages: o.DirtiedPages, OtherDirtiedPages: o.OtherDirtied, ThrottleNs: o.ThrottleNs,
		ThrottlePauses: o.ThrottlePauses, ThrottleMaxPauseNs: o.MaxPauseNs, Direct: o.F_flags&unix.O_DIRECT != 0,
		Cache: record.Cache{Readahead: []record.Readahead{}, Lookups: o.Lookups},
	}
	if rec.Syscall == "" {
		rec.Syscall = fmt.Sprintf("sys_%d", o.Sys)
	}
	rec.SyncFlags = syncRangeFlags(o)
	rec.Dsync = record.IsWrite(rec.Syscall) && o.F_flags&unix.O_DSYNC != 0 // O_SYNC includes it
	if o.OutIno != 0 {
		rec.OutDev, rec.OutIno, rec.OutPath = e.devName(o.OutDev), o.OutIno, e.paths[fkey(o.OutDev, o.OutIno)]
	}
	if o.Ret < 0 {
		rec.Error = errnoName(-o.Ret) // asyncio.go
		rec.ReturnedBytes = 0
	}
	if blk != nil {
		rec.Cache.Readahead = blk.ra[:0]
		rec.Bios = blk.bio[:0] // completed by emit
	}
	rec.Advice = adviceName(o)
	first, beyond := pageCache(rec, o, blk)
	if sysClass(o.Sys) == record.ClassWrite && kernel.MemoryOnly(rec.FS) {
		// tmpfs pages are memory, not cached disk blocks (shmem adds
		// them without the page-cache tracepoint): no hit, no miss.
		rec.MemoryOnly = true
		rec.Cache.PagesHit, rec.Cache.PagesMissed = 0, 0
	}
	readahead(rec, o, first, beyond)
	return rec
}

// recordBlock is a call's record with room for the first element of each
// list a call that missed fills (one added range, one readahead decision,
// one bio): one allocation instead of four for the common miss. Longer
// lists grow out of it by append as usual.
type recordBlock struct {
	rec   record.Syscall
	added [1]record.PageRange
	ra    [1]record.Readahead
	bio   [1]record.Bio
}

// sync_file_range(2) is not an fsync: it starts writeback of a range
// (SYNC_FILE_RANGE_WRITE) and may wait for writeback already running
// before (WAIT_BEFORE) or for the one it started (WAIT_AFTER); it writes
// no metadata and never flushes the device cache (include/uapi/linux/fs.h,
// fs/sync.c).
var syncRangeFlagNames = []struct {
	bit  uint32
	name string
}{{unix.SYNC_FILE_RANGE_WAIT_BEFORE, "WAIT_BEFORE"}, {unix.SYNC_FILE_RANGE_WRITE, "WRITE"}, {unix.SYNC_FILE_RANGE_WAIT_AFTER, "WAIT_AFTER"}}

// syncRangeFlags names sync_file_range's flags ("" for other calls; "none"
// for no flag: the kernel then does nothing).
func syncRangeFlags(o *bpf.IopathOp) string {
	if o.Sys != uint32(bpf.IopathOpSysSYS_SYNC_FILE_RANGE) {
		return ""
	}
	var names []string
	for _, f := range syncRangeFlagNames {
		if o.SysFlags&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}
