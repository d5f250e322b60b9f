package engine

import (
	"cmp"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// Fault flags (struct op.fault_flags, bpf/events.h enum fault_rec_flag).
const (
	FaultWrite       = uint32(bpf.IopathFaultRecFlagFAULT_WRITE)        // a store (x86 error code W)
	FaultMajor       = uint32(bpf.IopathFaultRecFlagFAULT_MAJOR)        // ended as a major fault
	FaultRetried     = uint32(bpf.IopathFaultRecFlagFAULT_RETRIED)      // redone after filemap_fault (VM_FAULT_RETRY)
	FaultFilemap     = uint32(bpf.IopathFaultRecFlagFAULT_FILEMAP)      // filemap_fault ran
	FaultEnded       = uint32(bpf.IopathFaultRecFlagFAULT_ENDED)        // the end was seen: FaultMajor is known
	FaultFilemapSeen = uint32(bpf.IopathFaultRecFlagFAULT_FILEMAP_SEEN) // a filemap_fault hook was attached: FaultRetried is known
	FaultSignal      = uint32(bpf.IopathFaultRecFlagFAULT_SIGNAL)       // ended at a signal's delivery (ret: the signal)
	FaultUnended     = uint32(bpf.IopathFaultRecFlagFAULT_UNENDED)      // no end seen: closed at the thread's next fault or exit
)

// Unavailable entries of a fault whose end was not seen (FaultUnended).
const (
	unavailableFaultMajor    = "major (end not seen)"
	unavailableFaultDuration = "duration_ns (end not seen: an upper bound, to the thread's next fault or exit)"
)

// SysFault is the op kind of a page fault on a file mapping (enum op_sys).
const SysFault = uint32(bpf.IopathOpSysSYS_FAULT)

// handleFault takes the EV_OP record of a fault (sys SYS_FAULT): it joins
// the fault's bios like a call's (the bios carry its op_id) and becomes a
// record.Fault once they have completed.
func (e *Engine) handleFault(o *bpf.IopathOp) {
	rec := e.faultRecord(o)
	if o.DirtiedPages > 0 {
		e.dirtyOf[o.OpId] = fkey(o.Dev, o.Ino)
		e.faultOf[o.OpId] = record.FaultRef{Address: rec.Address, Index: rec.Index}
		e.adjustDirty(o.OpId, int64(o.DirtiedPages))
	}
	p := e.ops[o.OpId]
	if p == nil {
		if o.BiosQueued == 0 {
			e.emitFault(rec, o.Dev, nil, 0)
			return
		}
		p = e.newOp(o.OpId, o.StartNs)
	}
	p.fault = rec
	p.queued, p.queuedBytes = o.BiosQueued, uint64(o.BioBytes)
	p.kdev = o.Dev
	e.tryRelease(o.OpId, p)
}

// retryImplied reports whether what filemap_fault did in a fault implies
// that it returned VM_FAULT_RETRY, for a kernel whose filemap_fault hook
// sees no return value. On a first pass (every x86 user fault may retry)
// filemap_fault drops the mmap or VMA lock before it reads (readahead,
// read-around, or the faulting page alone: pages added) and before it
// sleeps on a locked page, and a pass that dropped the lock returns
// VM_FAULT_RETRY (mm/filemap.c since Linux 5.1). A retry normally shows as
// a second filemap event; a second pass that finds the page already mapped
// by another thread that faulted on it too shows none, and a multithreaded
// program's faults on the same cold pages are mostly such. A read fault's
// sleep is taken as the locked-page wait (a write fault also sleeps in
// page_mkwrite without a retry, so only its pages added count).
//
// A fault ended by a signal (FaultSignal) is the exception: its pass
// returned VM_FAULT_RETRY, but the kernel did not redo it (the thread took
// the signal), so it is retried only when a second pass was seen.
func retryImplied(o *bpf.IopathOp) bool {
	if o.FaultFlags&FaultFilemap == 0 {
		return false // no filemap_fault: fault-around mapped the page
	}
	return o.PagesAdded > 0 || o.FaultFlags&FaultWrite == 0 && o.BlockedNs > 0
}

// faultPath names a fault's file. A fault opened at filemap_fault because
// bpf_find_vma found the mmap lock taken (bpf/fault.c, fault_recover) has
// no struct file, so no path of its own: it gets the inode's latest name
// from the inode's other records ("" when it has none).
func (e *Engine) faultPath(o *bpf.IopathOp) string {
	if o.File == 0 && o.PathDepth == 0 {
		return e.paths[fkey(o.Dev, o.Ino)]
	}
	return e.opPath(o)
}

// faultRecord turns a fault's kernel record into its JSON record.
func (e *Engine) faultRecord(o *bpf.IopathOp) *record.Fault {
	index := o.Offset >> 12
	rec := &record.Fault{
		Type: record.TypeFault, OpID: o.OpId, TimeNs: o.StartNs, Pid: o.Pid, Tid: o.Tid, Comm: e.comm(cBytes(o.Comm[:])),
		Path: e.faultPath(o), Dev: e.devName(o.Dev), Ino: o.Ino, FS: e.fsName(o.FsMagic), Index: index, Address: o.FaultAddr,
		Write: o.FaultFlags&FaultWrite != 0, Major: o.FaultFlags&FaultMajor != 0,
		Retried:    o.FaultFlags&FaultRetried != 0 || e.InferFaultRetry && retryImplied(o) && o.FaultFlags&FaultSignal == 0,
		DurationNs: sub(o.EndNs, o.StartNs), BlockedNs: o.BlockedNs, DirtiedPages: o.DirtiedPages,
		Cache:       record.Cache{PagesRequested: 1, PagesAdded: uint64(o.PagesAdded), Readahead: []record.Readahead{}},
		Unavailable: e.FaultUnavailable,
	}
	if o.FaultFlags&FaultUnended != 0 {
		// Whether the kernel counted it major is unknown; no kernel count
		// includes a fault that went back to user mode unaccounted.
		rec.EndUnseen = true
		rec.Unavailable = append(slices.Clip(rec.Unavailable), unavailableFaultMajor, unavailableFaultDuration)
	}
	if o.FaultFlags&FaultSignal != 0 {
		rec.Signal = unix.SignalName(syscall.Signal(o.Ret))
		if rec.Signal == "" {
			rec.Signal = "signal " + strconv.FormatInt(o.Ret, 10)
		}
	}
	if o.PagesInRange > 0 {
		rec.Cache.PagesMissed = 1
	}
	if !rec.Failed() {
		rec.Cache.PagesHit = 1 - rec.Cache.PagesMissed // a failed fault mapped no page
	}
	if o.AroundPages > 0 {
		rec.FaultAround = &record.PageRange{Index: o.AroundIndex, Pages: o.AroundPages}
	}
	for i := 0; i < int(min(o.NrRanges, uint32(len(o.Ranges)))); i++ {
		r := o.Ranges[i]
		pr := record.PageRange{Index: r.Index, Pages: r.Nr}
		switch r.Flags {
		case RangeAdded:
			rec.Cache.AddedRanges = append(rec.Cache.AddedRanges, pr)
		case RangeDirtied:
			rec.DirtiedRanges = append(rec.DirtiedRanges, pr)
		}
	}
	if o.RangesLost > 0 {
		rec.Truncated = &record.Truncations{RangePages: o.RangesLost}
	}
	rec.Cache.Readahead = faultReadahead(o, rec.Cache)
	return rec
}

// faultReadahead names the fault's readahead decisions. In the fault path
// (mm/filemap.c, 6.18) do_sync_mmap_readahead reads around the page with
// page_cache_ra_order directly (seen alone: read-around), or calls
// page_cache_sync_ra under MADV_SEQUENTIAL (sync); do_async_mmap_readahead
// calls page_cache_async_ra on a PG_readahead page (async). A fault that
// inserted pages with no decision seen: read-around when it added more
// than its own page (derived), else none (MADV_RANDOM, or mmap_miss over
// MMAP_LOTSAMISS: only the faulting page is read).
func faultReadahead(o *bpf.IopathOp, c record.Cache) []record.Readahead {
	out := c.Readahead
	for i := 0; i < int(min(o.NrRa, uint32(len(o.Ra)))); i++ {
		r := o.Ra[i]
		ra := record.Readahead{Kind: record.ReadaheadReadAround, StartIndex: r.Start, Pages: r.Size, AsyncPages: r.AsyncSize, Source: record.SourceKernel}
		switch r.Kind {
		case RASync:
			ra.Kind = record.ReadaheadSync
		case RAAsync:
			ra.Kind = record.ReadaheadAsync
		}
		if r.Size == 0 {
			ra.Pages, ra.Source = addedFrom(c.AddedRanges, r.Start), record.SourceKernelAdded
		}
		out = append(out, ra)
	}
	if len(out) > 0 || c.PagesAdded == 0 {
		return out
	}
	ra := record.Readahead{Kind: record.ReadaheadNone, StartIndex: o.Offset >> 12, Pages: uint32(c.PagesAdded), Source: record.SourceDerived}
	if c.PagesAdded > c.PagesMissed {
		ra.Kind = record.ReadaheadReadAround
		if len(c.AddedRanges) > 0 {
			ra.StartIndex = c.AddedRanges[0].Index
		}
	}
	return append(out, ra)
}

// addedFrom counts the added pages at or after index start.
func addedFrom(added []record.PageRange, start uint64) uint32 {
	var n uint32
	for _, a := range added {
		if a.Index+uint64(a.Pages) > start {
			n += a.Pages - uint32(min(a.Pages, uint32(sub(start, a.Index))))
		}
	}
	return n
}

// emitFault completes a fault's record with its bios, accounts it and
// hands it to Out.
func (e *Engine) emitFault(rec *record.Fault, kdev uint32, bios []*bioRef, queued uint32) {
	if n := uint32(len(bios)); n < queued {
		e.counters.IncompleteBios += uint64(queued - n)
		e.counters.NeverIssued += uint64(queued - n)
	}
	rec.Bios = make([]record.Bio, 0, len(bios))
	slices.SortStableFunc(bios, func(a, b *bioRef) int { return cmp.Compare(a.IssueNs, b.IssueNs) })
	var readBytes uint64
	for _, b := range bios {
		if !b.done {
			e.counters.IncompleteBios++
		}
		if b.Rwbs != "" && b.Rwbs[0] == 'R' {
			readBytes += uint64(b.Bytes)
		}
		rec.Bios = append(rec.Bios, b.Bio)
	}
	add := func(t *record.Totals) {
		t.Faults++
		if rec.Major {
			t.MajorFaults++
		}
		t.FaultDiskBytesRead += readBytes
		t.DiskBytesRead += readBytes
		t.BlockedNs += rec.BlockedNs
		t.DirtiedPages += uint64(rec.DirtiedPages)
	}
	add(&e.pid(rec.Pid, rec.Comm).Totals)
	fs := e.file(fkey(kdev, rec.Ino))
	add(&fs.Totals)
	fs.FS = rec.FS
	e.Out(rec)
}

// AddFaults folds the kernel's count of faults that were not streamed
// (minor, no IO, no wait) into the summary.
func (e *Engine) AddFaults(k bpf.IopathFaultKey, v bpf.IopathFaultStat) {
	e.pid(k.Pid, "").Faults += v.Faults
	if ps := e.pids[k.Pid]; ps.Comm == "" {
		ps.Comm = cString(v.Comm[:])
	}
	fs := e.fileOfGen(k.File.Dev, k.File.Ino, k.File.Gen)
	fs.Faults += v.Faults
	fs.FS = e.fsName(v.FsMagic)
	if fs.Path == "" && v.Name[0] != 0 {
		fs.Path = ".../" + cString(v.Name[:])
	}
}

// madvise(2) and posix_fadvise(2) advice values (include/uapi/asm-generic/mman-common.h,
// include/uapi/linux/fadvise.h; x86-64).
var (
	madvNames = map[uint32]string{0: "normal", 1: "random", 2: "sequential", 3: "willneed", 4: "dontneed", 8: "free",
		9: "remove", 10: "dontfork", 11: "dofork", 12: "mergeable", 13: "unmergeable", 14: "hugepage", 15: "nohugepage",
		20: "cold", 21: "pageout", 22: "populate_read", 23: "populate_write", 25: "collapse"}
	fadvNames = map[uint32]string{0: "normal", 1: "random", 2: "sequential", 3: "willneed", 4: "dontneed", 5: "noreuse"}
)

// adviceName names a madvise/fadvise64 call's advice ("" for other calls).
func adviceName(o *bpf.IopathOp) string {
	names := madvNames
	switch o.Sys {
	case uint32(bpf.IopathOpSysSYS_MADVISE):
	case uint32(bpf.IopathOpSysSYS_FADVISE64):
		names = fadvNames
	default:
		return ""
	}
	if n, ok := names[o.Advice]; ok {
		return n
	}
	return "advice " + strconv.FormatUint(uint64(o.Advice), 10)
}
