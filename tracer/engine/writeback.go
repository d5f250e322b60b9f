package engine

import (
	"sort"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// wbBio is a write bio carrying tracked dirty folios: its first EV_WB_BIO
// record and the matches of all its parts.
type wbBio struct {
	ev      bpf.IopathWbBioEv
	matches []wbMatch
	// A bio split by the block layer completes in parts: the original
	// pointer (the remainder) and each split-off front part.
	parts    []record.Bio // completed parts
	pending  int          // split-off parts not completed yet
	selfDone bool         // the original pointer completed
}

type wbMatch struct {
	opID, dirtiedNs, index uint64
	nr, pid, bioPages      uint32
}

type workerState struct {
	reason record.Reason
	comm   string
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
	e.workers[ev.Tid] = workerState{reason: record.Reason(e.K.WBReason(ev.Reason)), comm: e.intern(cBytes(ev.Comm[:]))}
}

// HandleWBInode takes an EV_WB_INODE record: do_writepages on one inode.
// Only used for the reason when no writeback_start was seen for the worker.
func (e *Engine) HandleWBInode(ev *bpf.IopathWbInodeEv) {
	e.seen(ev.Ts)
	if _, ok := e.workers[ev.Tid]; ok {
		return
	}
	var reason record.Reason
	switch {
	case ev.ForKupdate != 0:
		reason = record.ReasonPeriodic
	case ev.ForBackground != 0:
		reason = record.ReasonBackground
	case ev.ForSync != 0:
		reason = record.ReasonSync
	}
	if reason != "" {
		e.workers[ev.Tid] = workerState{reason: reason, comm: e.intern(cBytes(ev.Comm[:]))}
	}
}

// HandleDirtyGone takes an EV_DIRTY_GONE record: a tracked dirty folio left
// the page cache (truncate, hole punch, eviction) before any writeback.
func (e *Engine) HandleDirtyGone(ev *bpf.IopathDirtyGoneEv) {
	e.seen(ev.Ts)
	f := e.faultRef(ev.OpId)
	_, arrived := e.dirtyOf[ev.OpId] // the op's record (before settle forgets it)
	e.settle(ev.OpId, ev.Nr)
	key := fkey(ev.Dev, ev.Ino)
	e.outPersisted(&record.Persisted{Type: record.TypePersisted, OpID: e.requestOf(ev.OpId), Pid: ev.Pid, Dev: e.devName(ev.Dev), Ino: ev.Ino,
		Path: e.paths[key], Pages: ev.Nr, Outcome: record.OutcomeRemoved, DirtiedNs: 0, Fault: f}, ev.OpId, key, arrived) // persistwait.go
}

// faultRef names the write fault that dirtied op opID's pages (nil: a
// call, or a fault not seen yet).
func (e *Engine) faultRef(opID uint64) *record.FaultRef {
	if f, ok := e.faultOf[opID]; ok {
		return &f
	}
	return nil
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
		delete(e.faultOf, opID)
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
	// A part completed unseen by BPF (completedUnseen: CompletedBeforeNs)
	// makes the whole a bound: persisted before the latest part's end.
	var before uint64
	for _, p := range w.parts {
		bytes += p.Bytes
		b.CompleteNs = max(b.CompleteNs, p.CompleteNs)
		b.QueueNs = min(b.QueueNs, p.QueueNs)
		if p.Error != "" {
			errs = p.Error
		}
		if p.CompleteNs == 0 {
			before = max(before, p.CompletedBeforeNs)
		}
	}
	if before != 0 {
		before = max(before, b.CompleteNs)
	}
	b.Error = errs
	wb := &w.ev
	key := fkey(wb.Dev, wb.Ino)
	worker := e.intern(cBytes(wb.Comm[:]))
	reason := record.ReasonUnknown
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
				reason = record.ReasonOSync // the call that dirtied the pages wrote them itself
			}
		}
	}
	if reason == record.ReasonSync && wb.OpId == 0 {
		e.noteSyncWB(b.QueueNs, wb.Dev, bytes)
	}
	e.Out(&record.Writeback{Type: record.TypeWriteback, TimeNs: b.QueueNs, Worker: worker, WorkerTid: wb.Tid, Reason: reason,
		Dev: e.devName(wb.Dev), Ino: wb.Ino, Path: e.paths[key], OpID: wb.OpId, Bios: w.parts,
		Pages: wb.Pages, TrackedPages: tracked})
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
		f := e.faultRef(id) // before settle forgets it
		_, arrived := e.dirtyOf[id]
		e.settle(id, a.pages)
		outcome := record.OutcomeWritten
		if b.Error != "" {
			outcome = record.OutcomeFailed
		}
		written := uint64(a.bioPages) * 4096 // the whole bio as queued, before any split
		if wb.OpId == 0 {
			// Flusher writeback (bios of a traced call, fsync or O_SYNC,
			// are counted with the call's record): the writer's row and
			// the file's count the same bytes, those of the pages iopath
			// followed. Others in the bio (not followed after the
			// dirty_pages map overflowed, or dirtied by untraced
			// processes) are in neither: the file's row once counted the
			// whole bio, 16.0 MiB against its single writer's 10.0 MiB.
			e.pid(a.pid, "").DiskBytesWrite += written
			e.file(key).DiskBytesWrite += written
		}
		rec := &record.Persisted{Type: record.TypePersisted, OpID: e.requestOf(id), Pid: a.pid, Dev: e.devName(wb.Dev), Ino: wb.Ino, Path: e.paths[key],
			Pages: a.pages, BytesWritten: written, Outcome: outcome, DirtiedNs: a.dirtied, PersistedNs: b.CompleteNs,
			DirtyToDiskNs: sub(b.CompleteNs, a.dirtied), Reason: reason, Worker: worker, WorkerTid: wb.Tid,
			Sector: b.Sector, RequestBytes: b.RequestBytes, ByOpID: wb.OpId, Error: b.Error, Fault: f}
		if before != 0 {
			rec.PersistedNs, rec.DirtyToDiskNs, rec.PersistedBeforeNs = 0, 0, before
		}
		e.outPersisted(rec, id, key, arrived) // persistwait.go
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

// syncReason is the writeback reason of a bio submitted by a traced call
// of the fsync family (sys: its enum op_sys): the call's name (fsync,
// fdatasync, sync_file_range, syncfs, sync).
func syncReason(sys uint32) record.Reason {
	if sysClass(sys) == record.ClassSync {
		return record.Reason(SysName(sys))
	}
	return record.ReasonFsync
}
