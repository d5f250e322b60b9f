package tracer

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/iopath/iopath/bpf"
)

// Engine joins the kernel's events into per-call stories. It is plain Go,
// fed decoded events in ring-buffer order, and needs no kernel: tests drive
// it with synthetic streams.
//
// The joins:
//   - call ↔ bios: every owned bio names its call (op_id) in EV_RQ_ISSUE; a
//     call's record is released once its EV_OP has arrived and every bio it
//     queued (op.bios_queued) has completed, or when Tick/Flush gives up.
//   - request ↔ completion: keyed by the request pointer (a recycled tag), in
//     stream order; a second issue before completion is a requeue.
//   - dirty page ↔ writeback: the kernel joins pages in BPF (EV_WB_BIO
//     carries the write calls whose folios a bio writes); completion of its
//     request makes them persisted.
type Engine struct {
	K *Kernel
	// Out receives *Syscall, *Writeback and *Persisted records in the order
	// they become complete.
	Out func(rec any)
	// Unavailable lists record fields this kernel cannot measure (a hook
	// with no mechanism); they are reported as such, not as zeros.
	Unavailable []string
	// HoldNs is how long a call waits for its bios before it is released
	// with the ones seen so far (default 10 s of kernel time: mq-deadline can
	// hold a request for seconds under load).
	HoldNs uint64
	// MaxPending bounds the calls held waiting for their record or their
	// bios (entries; default, and when ≤ 0, 131072: twice the kernel's
	// bio_owners map, so only lost events fill it). When full, the oldest
	// eighth is evicted: calls with a record are released with the bios
	// seen so far, bios whose call never arrived are dropped; both are
	// counted in EngineCounters.EvictedCalls (summary:
	// map_evictions.pending_calls).
	MaxPending int
	// WriteCache, if set, replaces the sysfs lookup of a device's
	// queue/write_cache (tests).
	WriteCache func(kdev uint32) string

	ops      map[uint64]*pendingOp
	rqs      map[uint64]*pendingRq
	wbBios   map[uint64]*wbBio      // by bio pointer, until its request completes
	splitOf  map[uint64]uint64      // split-off writeback bio -> original bio
	workers  map[uint32]workerState // writeback worker tid -> current work
	paths    map[fileKey]string
	pids     map[uint32]*PidSummary
	files    map[fileKey]*FileSummary
	dirty    map[uint64]int64   // write op_id -> dirtied pages not yet persisted or removed
	dirtyTot atomic.Int64       // sum of the positive values of dirty (read by other goroutines)
	dirtyOf  map[uint64]fileKey // write op_id -> its file
	// memoryWrites counts writes to memory-only filesystems (tmpfs): never written back.
	memoryWrites atomic.Int64
	lastTs       uint64
	firstTs      uint64
	counters     EngineCounters
	dec          recordDecoder           // Dispatch's state: short records, omitted paths
	flush        flushState              // device cache flushes (flush.go)
	orphans      orphanState             // completions seen before their issue (orphans.go)
	renames      renameState             // earlier names and generations of files (names.go)
	unattr       map[string]*CauseTotals // unattributed bios by cause (unattributed.go)

	// Caches of strings every record repeats (see intern). A stream is
	// mostly one process on one filesystem: the last comm and filesystem
	// are checked before any map.
	devNames  map[uint32]string
	rwbsNames map[uint32]string
	names     map[string]string
	lastComm  string
	lastMagic uint64
	lastFS    string // FSName(lastMagic); FSName(0) is "", the zero state
	// Free lists: a stream of calls reuses the same few pending objects
	// instead of allocating three per call (see putOp, putRq, unref).
	freeOps  []*pendingOp
	freeRqs  []*pendingRq
	freeBios []*bioRef
}

// Bounds of the engine's caches and free lists (entries). A full cache is
// cleared, not evicted: a miss costs one allocation, never a wrong string.
const (
	maxCached  = 4096
	maxFree    = 1024
	defPending = 1 << 17
	evictShare = 8 // a full pending map evicts its oldest 1/evictShare
)

// EngineCounters are the engine's own losses and oddities.
type EngineCounters struct {
	UnattributedBios  uint64 // bios of traced processes queued outside any traced call
	UnattributedBytes uint64 // ... their bytes at issue
	IncompleteBios    uint64 // bios released without a completion
	Requeues          uint64
	OrphanCompletes   uint64 // completions of requests never seen issued
	EvictedCalls      uint64 // pending calls evicted because the pending map was full (MaxPending)
}

// fileKey names a file. dev is a kernel dev_t widened to 64 bits so the
// struct has no padding: maps then hash it in one pass instead of field by
// field (a per-event cost: three lookups per call).
type fileKey struct {
	dev uint64
	ino uint64
}

func fkey(dev uint32, ino uint64) fileKey { return fileKey{uint64(dev), ino} }

type pendingOp struct {
	rec     *Syscall
	queued  uint32 // op.bios_queued
	bios    []*bioRef
	firstTs uint64
	isWrite bool
}

// bioRef is one owned bio, shared by its request and (when attributed) its
// call. refs counts those holders; the last one to let go recycles it.
type bioRef struct {
	Bio
	done  bool
	refs  uint8
	opID  uint64
	pid   uint32
	bioP  uint64
	flags uint32
}

type pendingRq struct {
	bios     []*bioRef
	requeued bool
}

// wbBio is a write bio carrying tracked dirty folios: its first EV_WB_BIO
// record and the matches of all its parts.
type wbBio struct {
	ev      bpf.IopathWbBioEv
	matches []wbMatch
	// A bio split by the block layer completes in parts: the original
	// pointer (the remainder) and each split-off front part.
	parts    []Bio // completed parts
	pending  int   // split-off parts not completed yet
	selfDone bool  // the original pointer completed
}

type wbMatch struct {
	opID, dirtiedNs, index uint64
	nr, pid, bioPages      uint32
}

type workerState struct {
	reason string
	comm   string
}

// NewEngine returns an engine writing records to out.
func NewEngine(k *Kernel, out func(any)) *Engine {
	return &Engine{
		K: k, Out: out, HoldNs: 10e9, MaxPending: defPending,
		ops: map[uint64]*pendingOp{}, rqs: map[uint64]*pendingRq{}, wbBios: map[uint64]*wbBio{}, splitOf: map[uint64]uint64{},
		workers: map[uint32]workerState{}, paths: map[fileKey]string{}, pids: map[uint32]*PidSummary{},
		files: map[fileKey]*FileSummary{}, dirty: map[uint64]int64{}, dirtyOf: map[uint64]fileKey{},
		devNames: map[uint32]string{}, rwbsNames: map[uint32]string{}, names: map[string]string{},
	}
}

// intern returns b as a string, shared with earlier records that carried
// the same bytes (comm, worker names): a stream of one process's calls then
// allocates its comm once. The lookup with string(b) does not allocate.
func (e *Engine) intern(b []byte) string {
	if s, ok := e.names[string(b)]; ok {
		return s
	}
	if len(e.names) >= maxCached {
		clear(e.names)
	}
	s := string(b)
	e.names[s] = s
	return s
}

// comm interns a task's comm, checking the last one first.
func (e *Engine) comm(b []byte) string {
	if string(b) == e.lastComm {
		return e.lastComm
	}
	e.lastComm = e.intern(b)
	return e.lastComm
}

// fsName is FSName(magic), checking the last filesystem first.
func (e *Engine) fsName(magic uint64) string {
	if magic != e.lastMagic {
		e.lastMagic, e.lastFS = magic, FSName(magic)
	}
	return e.lastFS
}

// devName is Dev(kdev), rendered once per device.
func (e *Engine) devName(kdev uint32) string { return rendered(e.devNames, kdev, Dev) }

// rwbsName is K.Rwbs(cmdFlags), rendered once per distinct flag set (a
// device sees a few dozen).
func (e *Engine) rwbsName(cmdFlags uint32) string { return rendered(e.rwbsNames, cmdFlags, e.K.Rwbs) }

// rendered returns render(k), cached in m (cleared when it holds maxCached
// strings: a miss costs one rendering, never a wrong string).
func rendered(m map[uint32]string, k uint32, render func(uint32) string) string {
	if s, ok := m[k]; ok {
		return s
	}
	if len(m) >= maxCached {
		clear(m)
	}
	s := render(k)
	m[k] = s
	return s
}

// opPath is the call's path, the one its record carries (which becomes the
// file's path), or "" when its path record was lost: not the last path
// seen for the inode, which may be another hard link or an older name. A
// path equal to the one remembered is built on the stack and not allocated
// again.
func (e *Engine) opPath(o *bpf.IopathOp) string {
	key := fkey(o.Dev, o.Ino)
	if o.PathDepth == 0 {
		return ""
	}
	var buf [pathBufLen]byte
	p := appendOpPath(buf[:0], o)
	if old, ok := e.paths[key]; ok && old == string(p) && e.sameInode(key, o.PathGen) {
		return old
	}
	s := string(p)
	e.named(key, o.PathGen, s) // names.go: latest name, earlier names, reused inodes
	return s
}

func (e *Engine) seen(ts uint64) {
	if ts > e.lastTs {
		e.lastTs = ts
	}
	if e.firstTs == 0 || (ts != 0 && ts < e.firstTs) {
		e.firstTs = ts
	}
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

// putOp recycles a call removed from e.ops: it drops the call's hold on its
// bios and keeps the bios slice's storage.
func (e *Engine) putOp(p *pendingOp) {
	for i, b := range p.bios {
		e.unref(b)
		p.bios[i] = nil
	}
	*p = pendingOp{bios: p.bios[:0]}
	recycle(&e.freeOps, p)
}

// reuse pops an object off a free list, or allocates one.
func reuse[T any](free *[]*T) *T {
	if n := len(*free); n > 0 {
		x := (*free)[n-1]
		*free = (*free)[:n-1]
		return x
	}
	return new(T)
}

// recycle pushes x onto a free list of at most maxFree objects.
func recycle[T any](free *[]*T, x *T) {
	if len(*free) < maxFree {
		*free = append(*free, x)
	}
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
		if p.rec != nil {
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
	rec := e.syscallRecord(o)
	rec.Unavailable = e.Unavailable
	isWrite := isWriteSys(o.Sys)
	if o.DirtiedPages > 0 { // writes, and in-kernel copies (their output's pages)
		e.dirtyOf[o.OpId] = fkey(o.Dev, o.Ino)
		if o.OutIno != 0 {
			e.dirtyOf[o.OpId] = fkey(o.OutDev, o.OutIno)
		}
		e.adjustDirty(o.OpId, int64(o.DirtiedPages))
	}
	if isWrite && o.Ret > 0 && MemoryOnly(rec.FS) {
		e.memoryWrites.Add(1)
	}
	p := e.ops[o.OpId]
	if p == nil {
		if o.BiosQueued == 0 {
			// Most calls queue no bio and none named them: the record is
			// complete now, with no pending state to create and delete.
			e.emit(rec, nil, 0, isWrite)
			return
		}
		p = e.newOp(o.OpId, o.StartNs)
	}
	p.rec = rec
	p.queued = o.BiosQueued
	p.isWrite = isWrite
	e.tryRelease(o.OpId, p)
}

// HandleIssue takes an EV_RQ_ISSUE record.
func (e *Engine) HandleIssue(ev *bpf.IopathRqIssueEv) {
	e.seen(ev.Ts)
	if rq, ok := e.rqs[ev.Rq]; ok {
		// Issued again before completing: a requeue (seen here from kworker/N:1H).
		for _, b := range rq.bios {
			b.IssueNs = ev.Ts
			b.Requeues++
		}
		e.counters.Requeues++
		return
	}
	rq := e.newRq()
	n := int(ev.NrOwn)
	if n > len(ev.Own) {
		n = len(ev.Own)
	}
	rwbs := e.rwbsName(ev.CmdFlags)
	dev := e.devName(ev.Dev)
	for i := 0; i < n; i++ {
		own := &ev.Own[i]
		b := e.newBio()
		*b = bioRef{
			Bio: Bio{Dev: dev, Sector: own.Sector, Bytes: own.Bytes, Rwbs: rwbs,
				QueueNs: own.QueueNs, IssueNs: ev.Ts, RequestBytes: ev.Bytes, RequestBios: ev.NrBios},
			opID: own.OpId, pid: own.Pid, bioP: own.Bio, flags: own.Flags, refs: 1,
		}
		rq.bios = append(rq.bios, b)
		switch {
		case own.OpId != 0:
			p := e.op(own.OpId, ev.Ts)
			p.bios = append(p.bios, b)
			b.refs++ // held by the call too
			e.holdForFlush(b)
		case own.Flags&ownWriteback == 0:
			e.unattributed(own.Pid, own.Flags, own.Bytes) // unattributed.go
			ps := e.pid(own.Pid, "")
			if e.K.IsRead(ev.CmdFlags) {
				ps.DiskBytesRead += uint64(own.Bytes)
			} else if e.K.IsWrite(ev.CmdFlags) {
				ps.DiskBytesWrite += uint64(own.Bytes)
			}
		}
	}
	e.rqs[ev.Rq] = rq
	e.replayOrphan(ev.Rq, ev.Ts)
}

func (e *Engine) newRq() *pendingRq { return reuse(&e.freeRqs) }

// putRq recycles a request removed from e.rqs, dropping its hold on its bios.
func (e *Engine) putRq(rq *pendingRq) {
	for i, b := range rq.bios {
		e.unref(b)
		rq.bios[i] = nil
	}
	*rq = pendingRq{bios: rq.bios[:0]}
	recycle(&e.freeRqs, rq)
}

func (e *Engine) newBio() *bioRef { return reuse(&e.freeBios) }

// unref drops one holder of b (its request or its call) and recycles it
// when none is left. Records hold copies (Bio values), never a bioRef.
func (e *Engine) unref(b *bioRef) {
	if b.refs--; b.refs == 0 {
		recycle(&e.freeBios, b)
	}
}

// Bio ownership flags, mirrored from bpf/common.h.
const (
	ownWriteback = 1
	ownJournal   = 2
)

// HandleRequeue takes an EV_RQ_REQUEUE record.
func (e *Engine) HandleRequeue(ev *bpf.IopathRqDoneEv) {
	e.seen(ev.Ts)
	if rq, ok := e.rqs[ev.Rq]; ok {
		rq.requeued = true
	}
}

// HandleComplete takes an EV_RQ_COMPLETE record.
func (e *Engine) HandleComplete(ev *bpf.IopathRqDoneEv) {
	e.seen(ev.Ts)
	rq, ok := e.rqs[ev.Rq]
	if !ok {
		e.keepOrphan(ev) // its issue may still come (orphans.go)
		return
	}
	delete(e.rqs, ev.Rq)
	for _, b := range rq.bios {
		b.done = !e.awaitsFlush(b) // else done at the end of its flush sequence (flush.go)
		b.CompleteNs = ev.Ts
		b.Error = BlkStatus(ev.Error)
		b.D2CNs = sub(ev.Ts, b.IssueNs)
		b.Q2CNs = sub(ev.Ts, b.QueueNs)
	}
	for _, b := range rq.bios {
		if b.flags&ownWriteback != 0 {
			e.writebackDone(b)
		}
		if !b.done {
			e.replayFlushOrphan(b.bioP)
		}
		if b.opID != 0 {
			if p, ok := e.ops[b.opID]; ok {
				e.tryRelease(b.opID, p)
			}
		}
	}
	e.putRq(rq)
}

func sub(a, b uint64) uint64 {
	if a > b && b != 0 {
		return a - b
	}
	return 0
}

// HandleWBBio takes an EV_WB_BIO record: a write bio carrying tracked dirty folios.
func (e *Engine) HandleWBBio(ev *bpf.IopathWbBioEv) {
	e.seen(ev.Ts)
	w := e.wbBios[ev.Bio]
	if ev.Part == 0 || w == nil {
		w = &wbBio{ev: *ev}
		e.wbBios[ev.Bio] = w
	}
	w.ev.Pages = ev.Pages // counted over the whole walk: the last part has the total
	n := min(int(ev.NrMatch), len(ev.Match))
	for i := 0; i < n; i++ {
		m := &ev.Match[i]
		w.matches = append(w.matches, wbMatch{opID: m.OpId, dirtiedNs: m.DirtiedNs, index: m.Index, nr: m.Nr, pid: m.Pid, bioPages: m.BioPages})
	}
}

// HandleWBStart takes an EV_WB_START record: a flusher work item begins.
func (e *Engine) HandleWBStart(ev *bpf.IopathWbStartEv) {
	e.seen(ev.Ts)
	e.workers[ev.Tid] = workerState{reason: e.K.WBReason(ev.Reason), comm: e.intern(cBytes(ev.Comm[:]))}
}

// HandleWBInode takes an EV_WB_INODE record: do_writepages on one inode.
// Only used for the reason when no writeback_start was seen for the worker.
func (e *Engine) HandleWBInode(ev *bpf.IopathWbInodeEv) {
	e.seen(ev.Ts)
	if _, ok := e.workers[ev.Tid]; ok {
		return
	}
	reason := ""
	switch {
	case ev.ForKupdate != 0:
		reason = "periodic"
	case ev.ForBackground != 0:
		reason = "background"
	case ev.ForSync != 0:
		reason = "sync"
	}
	if reason != "" {
		e.workers[ev.Tid] = workerState{reason: reason, comm: e.intern(cBytes(ev.Comm[:]))}
	}
}

// HandleDirtyGone takes an EV_DIRTY_GONE record: a tracked dirty folio left
// the page cache (truncate, hole punch, eviction) before any writeback.
func (e *Engine) HandleDirtyGone(ev *bpf.IopathDirtyGoneEv) {
	e.seen(ev.Ts)
	e.settle(ev.OpId, ev.Nr)
	e.Out(&Persisted{Type: "persisted", OpID: ev.OpId, Pid: ev.Pid, Dev: e.devName(ev.Dev), Ino: ev.Ino,
		Path: e.paths[fkey(ev.Dev, ev.Ino)], Pages: ev.Nr, Outcome: "removed", DirtiedNs: 0})
}

func (e *Engine) settle(opID uint64, pages uint32) {
	if opID == 0 {
		return
	}
	e.adjustDirty(opID, -int64(pages))
}

// adjustDirty changes an op's outstanding dirty pages. The writeback of a
// page can be seen before the call's own record (O_SYNC), so values may go
// negative for a while; only positive values count as pending.
func (e *Engine) adjustDirty(opID uint64, delta int64) {
	old := e.dirty[opID]
	v := old + delta
	if v == 0 {
		delete(e.dirty, opID)
		delete(e.dirtyOf, opID)
	} else {
		e.dirty[opID] = v
	}
	e.dirtyTot.Add(max(v, 0) - max(old, 0))
}

// HandleSplit takes an EV_BIO_SPLIT record: a writeback bio was split.
func (e *Engine) HandleSplit(ev *bpf.IopathBioSplitEv) {
	e.seen(ev.Ts)
	if w, ok := e.wbBios[ev.Parent]; ok {
		w.pending++
		e.splitOf[ev.Split] = ev.Parent
	}
}

// writebackDone handles the completion of a bio carrying tracked pages (or
// of one part of it); the writeback is reported when every part is done.
func (e *Engine) writebackDone(b *bioRef) {
	orig := b.bioP
	if p, ok := e.splitOf[b.bioP]; ok {
		orig = p
		delete(e.splitOf, b.bioP)
	}
	w, ok := e.wbBios[orig]
	if !ok {
		return
	}
	w.parts = append(w.parts, b.Bio)
	if orig == b.bioP {
		w.selfDone = true
	} else {
		w.pending--
	}
	if !w.selfDone || w.pending > 0 {
		return
	}
	delete(e.wbBios, orig)
	// Report the writeback as one: bytes of all parts, done when the last is.
	sort.Slice(w.parts, func(i, j int) bool { return w.parts[i].Sector < w.parts[j].Sector })
	b = &bioRef{Bio: w.parts[0], bioP: orig, flags: b.flags}
	var bytes uint32
	var errs string
	for _, p := range w.parts {
		bytes += p.Bytes
		b.CompleteNs = max(b.CompleteNs, p.CompleteNs)
		b.QueueNs = min(b.QueueNs, p.QueueNs)
		if p.Error != "" {
			errs = p.Error
		}
	}
	b.Error = errs
	wb := &w.ev
	key := fkey(wb.Dev, wb.Ino)
	worker := e.intern(cBytes(wb.Comm[:]))
	reason := "unknown"
	if ws, ok := e.workers[wb.Tid]; ok {
		reason = ws.reason
	}
	var tracked uint32
	for _, m := range w.matches {
		tracked += m.nr
	}
	if wb.OpId != 0 {
		reason = syncReason(wb.Sys)
		for _, m := range w.matches {
			if m.opID == wb.OpId {
				reason = "o_sync" // the call that dirtied the pages wrote them itself
			}
		}
	}
	e.Out(&Writeback{Type: "writeback", TimeNs: b.QueueNs, Worker: worker, WorkerTid: wb.Tid, Reason: reason,
		Dev: e.devName(wb.Dev), Ino: wb.Ino, Path: e.paths[key], OpID: wb.OpId, Bios: w.parts,
		Pages: wb.Pages, TrackedPages: tracked})
	if wb.OpId == 0 {
		// Flusher writeback; bios of a traced call (fsync, O_SYNC) are
		// already counted with the call's record.
		e.file(key).DiskBytesWrite += uint64(bytes)
	}
	// One persisted record per write call per bio.
	type agg struct {
		pages    uint32
		bioPages uint32
		dirtied  uint64
		pid      uint32
	}
	per := map[uint64]*agg{}
	var order []uint64
	for _, m := range w.matches {
		a := per[m.opID]
		if a == nil {
			a = &agg{dirtied: m.dirtiedNs, pid: m.pid}
			per[m.opID] = a
			order = append(order, m.opID)
		}
		a.pages += m.nr
		a.bioPages += m.bioPages
		if m.dirtiedNs < a.dirtied {
			a.dirtied = m.dirtiedNs
		}
	}
	for _, id := range order {
		a := per[id]
		e.settle(id, a.pages)
		outcome := "written"
		if b.Error != "" {
			outcome = "failed"
		}
		written := uint64(a.bioPages) * 4096 // the whole bio as queued, before any split
		if wb.OpId == 0 {
			e.pid(a.pid, "").DiskBytesWrite += written
		}
		e.Out(&Persisted{Type: "persisted", OpID: id, Pid: a.pid, Dev: e.devName(wb.Dev), Ino: wb.Ino, Path: e.paths[key],
			Pages: a.pages, BytesWritten: written, Outcome: outcome, DirtiedNs: a.dirtied, PersistedNs: b.CompleteNs,
			DirtyToDiskNs: sub(b.CompleteNs, a.dirtied), Reason: reason, Worker: worker, WorkerTid: wb.Tid,
			Sector: b.Sector, RequestBytes: b.RequestBytes, ByOpID: wb.OpId, Error: b.Error})
	}
}

// tryRelease prints a call once its record and all its bios are complete.
func (e *Engine) tryRelease(id uint64, p *pendingOp) {
	if p.rec == nil || queuedSeen(p.bios) < p.queued {
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
	e.emit(p.rec, p.bios, p.queued, p.isWrite)
	e.putOp(p)
}

// emit completes a call's record with its bios (queued: how many the
// kernel says it queued), accounts it and hands it to Out.
func (e *Engine) emit(rec *Syscall, bios []*bioRef, queued uint32, isWrite bool) {
	if n := queuedSeen(bios); n < queued {
		e.counters.IncompleteBios += uint64(queued - n) // queued, never seen issued
	}
	if rec.Bios == nil || cap(rec.Bios) < len(bios) {
		rec.Bios = make([]Bio, 0, len(bios)) // empty, not nil, for a call without bios: "bios":[]
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
		if isSyncName(rec.Syscall) || b.flags&ownFlushReq != 0 {
			b.Kind = bioKind(b)
		}
		rec.Bios = append(rec.Bios, b.Bio)
	}
	if isSyncName(rec.Syscall) {
		rec.DeviceFlush = e.deviceFlush(rec)
	}
	e.account(rec, readBytes)
	e.Out(rec)
}

func (e *Engine) pid(pid uint32, comm string) *PidSummary {
	ps := e.pids[pid]
	if ps == nil {
		ps = &PidSummary{Pid: pid}
		e.pids[pid] = ps
	}
	if comm != "" {
		ps.Comm = comm
	}
	return ps
}

func (e *Engine) file(k fileKey) *FileSummary {
	fs := e.files[k]
	if fs == nil {
		fs = &FileSummary{Dev: Dev(uint32(k.dev)), Ino: k.ino, Generation: e.renames.gens[k]}
		e.files[k] = fs
	}
	if fs.Path == "" {
		fs.Path = e.paths[k]
	}
	return fs
}

func (e *Engine) account(rec *Syscall, readBytes uint64) {
	var writeBytes uint64
	for _, b := range rec.Bios {
		if b.Rwbs != "" && b.Rwbs[0] != 'R' {
			writeBytes += uint64(b.Bytes)
		}
	}
	add := func(t *Totals) {
		t.Calls++
		t.StreamedCalls++
		t.BytesRequested += requestedBytes(rec)
		if rec.ReturnedBytes > 0 {
			t.BytesReturned += uint64(rec.ReturnedBytes)
		}
		if isReadName(rec.Syscall) {
			// Cache hits and misses are the read side's; a write's
			// inserted pages are new pages to be dirtied.
			t.PagesHit += rec.Cache.PagesHit
			t.PagesMissed += rec.Cache.PagesMissed
			t.PagesAdded += rec.Cache.PagesAdded
			t.PagesPrefetched += rec.Cache.PagesAdded - min(rec.Cache.PagesMissed, rec.Cache.PagesAdded)
		}
		t.DiskBytesRead += readBytes
		t.DiskBytesWrite += writeBytes
		if rec.OutIno == 0 {
			t.DirtiedPages += uint64(rec.DirtiedPages) // else the output's (accountCopy)
		}
		t.ThrottleNs += rec.ThrottleNs
		t.BlockedNs += rec.BlockedNs
		if isReadName(rec.Syscall) {
			t.ReadCalls++
			req := rec.RequestedBytes
			if isCopyName(rec.Syscall) && rec.ReturnedBytes >= 0 {
				req = uint64(rec.ReturnedBytes) // cp asks copy_file_range for up to SSIZE_MAX bytes
			}
			t.ReadBytesReq += req
		} else if isWriteName(rec.Syscall) {
			t.WriteCalls++
		}
	}
	add(&e.pid(rec.Pid, rec.Comm).Totals)
	if rec.Ino != 0 {
		add(&e.file(fkey(rec.kdev, rec.Ino)).Totals)
	}
	e.accountCopy(rec)
}

// AddHits folds the kernel's aggregate of calls that were not streamed
// (pure cache hits: no insertion, no bio, no wait) into the summary.
func (e *Engine) AddHits(k bpf.IopathStatKey, v bpf.IopathStatVal) {
	add := func(t *Totals) {
		t.Calls += v.Calls
		t.BytesRequested += v.BytesRequested
		t.BytesReturned += v.BytesReturned
		if k.Write == 0 {
			t.PagesHit += v.Pages
			t.ReadCalls += v.Calls
			t.ReadBytesReq += v.BytesRequested
		} else {
			t.WriteCalls += v.Calls
		}
	}
	add(&e.pid(k.Pid, "").Totals)
	if ps := e.pids[k.Pid]; ps.Comm == "" {
		ps.Comm = cString(v.Comm[:])
	}
	fs := e.file(fkey(k.Dev, k.Ino))
	add(&fs.Totals)
	if fs.Path == "" && v.Name[0] != 0 {
		fs.Path = ".../" + cString(v.Name[:]) // only the name: hits are not streamed with their path
	}
}

// Tick releases calls that have waited HoldNs (kernel time) for bios that
// never completed or were never issued, e.g. remapped by device mapper.
func (e *Engine) Tick(now uint64) {
	if now > e.lastTs {
		e.lastTs = now
	}
	for id, p := range e.ops {
		if p.rec != nil && e.lastTs > p.rec.TimeNs+p.rec.DurationNs+e.HoldNs {
			e.release(id, p)
		}
	}
}

// Flush releases every pending call (end of trace), in op order.
func (e *Engine) Flush() {
	ids := make([]uint64, 0, len(e.ops))
	for id, p := range e.ops {
		if p.rec != nil {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return e.ops[ids[i]].rec.TimeNs < e.ops[ids[j]].rec.TimeNs })
	for _, id := range ids {
		e.release(id, e.ops[id])
	}
}

// DirtyPending is the number of pages dirtied by traced write calls and not
// yet seen written or removed.
// Safe to call from any goroutine.
func (e *Engine) DirtyPending() uint64 {
	return uint64(max(e.dirtyTot.Load(), 0))
}

// PendingFile is a file with dirty pages not yet seen written.
type PendingFile struct {
	Dev   uint32 // kernel dev_t
	Ino   uint64
	Path  string
	Pages uint64
}

// PendingFiles lists files whose pages traced calls dirtied and iopath has
// not seen written or removed.
func (e *Engine) PendingFiles() []PendingFile {
	per := map[fileKey]uint64{}
	for op, v := range e.dirty {
		if v > 0 {
			per[e.dirtyOf[op]] += uint64(v)
		}
	}
	var out []PendingFile
	for k, n := range per {
		out = append(out, PendingFile{Dev: uint32(k.dev), Ino: k.ino, Path: e.paths[k], Pages: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ino < out[j].Ino })
	return out
}

// ForgetPending drops a file's pending dirty pages (the kernel says it has
// none left: they were written without iopath seeing the bio) and returns
// how many were dropped.
func (e *Engine) ForgetPending(dev uint32, ino uint64) uint64 {
	var n uint64
	for op, k := range e.dirtyOf {
		if k == fkey(dev, ino) {
			if v := e.dirty[op]; v > 0 {
				n += uint64(v)
				e.adjustDirty(op, -v)
			}
		}
	}
	return n
}

// MemoryOnlyWrites counts writes to filesystems without writeback (tmpfs).
// Safe to call from any goroutine.
func (e *Engine) MemoryOnlyWrites() int64 { return e.memoryWrites.Load() }

// Counters returns the engine's loss counters.
func (e *Engine) Counters() EngineCounters {
	c := e.counters
	c.OrphanCompletes += uint64(len(e.orphans.rqs) + len(e.orphans.flushes)) // kept, issue not seen (yet)
	return c
}

// Summary builds the end-of-trace totals (losses and attach filled by the caller).
func (e *Engine) Summary() *Summary {
	s := &Summary{Type: "summary", MapEvictions: map[string]uint64{}, Truncations: map[string]uint64{},
		Attach: map[string]string{}}
	e.resolveRenamed() // names.go
	if e.lastTs > e.firstTs {
		s.DurationNs = e.lastTs - e.firstTs
	}
	for _, p := range e.pids {
		t := *p
		finish(&t.Totals)
		s.Pids = append(s.Pids, t)
	}
	sort.Slice(s.Pids, func(i, j int) bool { return s.Pids[i].Pid < s.Pids[j].Pid })
	for k, f := range e.files {
		t := *f
		if t.Path == "" {
			t.Path = e.paths[k]
		}
		finish(&t.Totals)
		s.Files = append(s.Files, t)
	}
	s.Files = append(s.Files, e.retiredFiles()...)
	sort.Slice(s.Files, func(i, j int) bool {
		if s.Files[i].Dev != s.Files[j].Dev {
			return s.Files[i].Dev < s.Files[j].Dev
		}
		return s.Files[i].Ino < s.Files[j].Ino
	})
	s.MapEvictions["pending_calls"] = e.counters.EvictedCalls
	s.UnattributedBios = e.counters.UnattributedBios
	s.UnattributedBytes = e.counters.UnattributedBytes
	s.UnattributedCauses = e.unattributedCauses()
	s.IncompleteBios = e.counters.IncompleteBios
	s.DirtyPending = e.DirtyPending()
	return s
}

func finish(t *Totals) {
	t.PagesHitPrefetched = min(t.PagesHit, t.PagesPrefetched)
	t.PagesHitCached = t.PagesHit - t.PagesHitPrefetched
	if t.ReadBytesReq > 0 {
		t.Amplification = float64(t.DiskBytesRead) / float64(t.ReadBytesReq)
	}
}

// bioKind classifies a bio of an fsync-family call.
func bioKind(b *bioRef) string {
	switch {
	case b.flags&ownFlushReq != 0:
		return "flush"
	case b.flags&ownJournal != 0:
		return "journal"
	case b.Bytes == 0 || strings.HasPrefix(b.Rwbs, "F"):
		return "flush"
	case strings.Contains(b.Rwbs, "M"):
		return "metadata"
	}
	return "data"
}

func isSyncName(n string) bool {
	switch n {
	case "fsync", "fdatasync", "sync_file_range", "sync", "syncfs":
		return true
	}
	return false
}

func isCopyName(n string) bool {
	return n == "sendfile" || n == "splice" || n == "copy_file_range"
}
