package engine

import (
	"fmt"
	"os"
	"strings"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

// Device cache flushes (bpf/flush.c). A bio asking for REQ_PREFLUSH or
// REQ_FUA on a device with a volatile write cache is sequenced by the block
// layer's flush machinery: a separate flush request (rwbs "FF", no bio,
// issued by kblockd) serves every request waiting at that moment, and the
// waiting request then ends without ever being issued itself (an empty
// flush, fsync's), or ends a second time after its data (jbd2's commit
// block: pre-flush, data, post-flush on a device without FUA). EV_FLUSH_DONE
// reports that end with the flush request that served it (blk-flush.c,
// verified on 6.18).
//
// The joins:
//   - an empty flush bio of a call becomes one bio of the call, kind flush,
//     with the flush request's rwbs and device time (it was never issued);
//   - a bio issued in a flush sequence (OwnFlushSeq) is held until its
//     EV_FLUSH_DONE; the flush that served it is added to the call's bios
//     as one more (kind flush), not counted against the bios it queued;
//   - several calls' flushes merged into one request each get that request
//     (same issue and completion times): it served them all.

// OwnFlushSeq is OWN_FLUSH_SEQ (bpf/events.h, enum own_flag): the bio's
// request was in a flush sequence at issue. ownFlushReq marks, in userspace
// only, a bio that stands for a flush request (above every kernel bit).
const (
	OwnFlushSeq = uint32(bpf.IopathOwnFlagOWN_FLUSH_SEQ)
	ownFlushReq = 1 << 31
)

type flushState struct {
	wait   map[uint64]*bioRef // issued bios in a flush sequence, by bio pointer, until their final end
	caches map[uint32]string  // kernel dev_t -> queue/write_cache ("write back", "write through", "")
	reqs   flushReqs          // flush request runs named at their issue, journal commits (flushreq.go)
}

// awaitsFlush says whether a completed bio still waits for the end of its
// flush sequence (only a call's bios are held: writeback records are not).
func awaitsFlush(b *bioRef) bool {
	return b.flags&OwnFlushSeq != 0 && b.opID != 0
}

// holdForFlush remembers a call's bio issued in a flush sequence.
func (e *Engine) holdForFlush(b *bioRef) {
	if !awaitsFlush(b) {
		return
	}
	if e.flush.wait == nil {
		e.flush.wait = map[uint64]*bioRef{}
	}
	if old, ok := e.flush.wait[b.bioP]; ok {
		e.unref(old)
	}
	if len(e.flush.wait) >= defPending {
		// Only lost EV_FLUSH_DONE records leave entries behind: start over.
		for _, old := range e.flush.wait {
			e.unref(old)
		}
		clear(e.flush.wait)
	}
	b.refs++
	e.flush.wait[b.bioP] = b
}

// HandleFlushDone takes an EV_FLUSH_DONE record.
func (e *Engine) HandleFlushDone(ev *bpf.IopathFlushDoneEv) {
	e.seen(ev.DoneNs)
	switch {
	case ev.OwnFlags&OwnFlushUnseen != 0:
		e.flushUnseen(ev) // flushunseen.go
		return
	case ev.OwnFlags&OwnCommitWait != 0:
		e.commitWait(ev) // flushreq.go
		return
	case ev.OwnFlags&OwnCommitNeed != 0:
		e.commitNeed(ev) // flushreq.go
		return
	case ev.OwnFlags&OwnFlushEnd != 0:
		e.flushEnd(ev)
		return
	case ev.OwnFlags&OwnFlushServes != 0 && ev.FlushIssueNs == ev.DoneNs:
		// At the flush's issue (a final end is later than any issue
		// that served it: flush.c sets done_ns to the issue here).
		e.flushServes(ev)
		return
	}
	// The final end of a waiting request. Flushes named at their issue
	// (OwnFlushServes on the bio) are the call's already; else the last
	// flush of the queue issued after the bio was queued served it.
	named := ev.OwnFlags&OwnFlushServes != 0
	fl := record.Bio{Dev: e.devName(ev.Dev), QueueNs: ev.QueueNs, IssueNs: ev.FlushIssueNs, CompleteNs: ev.FlushDoneNs,
		D2CNs: sub(ev.FlushDoneNs, ev.FlushIssueNs), Q2CNs: sub(ev.DoneNs, ev.QueueNs), Kind: record.BioFlush,
		Rwbs: e.rwbsName(ev.FlushFlags), Error: kernel.BlkStatus(ev.FlushError)}
	if ev.FlushRq == 0 {
		// Ended with no flush request issued after it was queued (the
		// flush machinery found nothing to do): its own end is all there is.
		fl.Rwbs, fl.IssueNs, fl.CompleteNs, fl.D2CNs, fl.Error = e.rwbsName(ev.RqFlags), 0, ev.DoneNs, 0, kernel.BlkStatus(ev.Error)
	}
	if b, ok := e.flush.wait[ev.Bio]; ok {
		// Its data was issued and completed: the sequence is over now.
		delete(e.flush.wait, ev.Bio)
		b.done = true
		if b.Error == "" {
			b.Error = kernel.BlkStatus(ev.Error)
		}
		if p, ok := e.ops[b.opID]; ok {
			if ev.FlushRq != 0 && !named {
				p.bios = append(p.bios, e.flushRef(fl, b.opID, b.pid))
			}
			e.tryRelease(b.opID, p)
		}
		e.unref(b)
		return
	}
	if ev.OpId == 0 {
		// No call waits for it. An empty one was never issued: count it
		// here (a bio with data was, at its issue).
		if ev.Bytes == 0 && ev.OwnFlags&(OwnWriteback|OwnCommitRec) == 0 {
			e.unattributed(ev.Pid, ev.OwnFlags, 0)
		}
		return
	}
	if ev.Bytes != 0 {
		e.keepFlushOrphan(ev) // its data's issue or completion has not arrived yet
		return
	}
	// An empty flush bio: never issued, the flush request stands for it.
	p := e.op(ev.OpId, ev.QueueNs)
	if named && e.endNamedFlush(p, ev) {
		e.tryRelease(ev.OpId, p)
		return
	}
	f := e.flushRef(fl, ev.OpId, ev.Pid)
	f.bioP = ev.Bio
	p.bios = append(p.bios, f)
	e.tryRelease(ev.OpId, p)
}

// endNamedFlush ends the flush bio that stands for call p's empty flush
// bio ev.Bio, named at its flush's issue; it says whether there is one. A
// flush whose completion was not seen ended before this final end.
func (e *Engine) endNamedFlush(p *pendingOp, ev *bpf.IopathFlushDoneEv) bool {
	for _, b := range p.bios {
		if b.flags&ownFlushReq == 0 || b.bioP != ev.Bio {
			continue
		}
		if !b.done {
			b.done = true
			b.CompletedBeforeNs = ev.DoneNs
			e.counters.CompletionsUnseen++
		}
		return true
	}
	return false
}

// flushRef is a completed bio standing for a flush request, held by one call.
func (e *Engine) flushRef(fl record.Bio, opID uint64, pid uint32) *bioRef {
	f := e.newBio()
	*f = bioRef{Bio: fl, done: true, refs: 1, opID: opID, pid: pid, flags: ownFlushReq}
	return f
}

// deviceFlush says what happened to the device cache for a call of the
// fsync family on device kdev: FlushDone when one of its bios is a flush
// request, else what the device's write cache mode implies. On a device
// with a volatile cache, a call that succeeded with no flush seen is
// FlushUnavailable: a flush served it that iopath did not see (ext4 with
// barriers always flushes, from the call or from the journal commit it
// waited for), or none did (nobarrier): the trace cannot tell.
func (e *Engine) deviceFlush(rec *record.Syscall, kdev uint32) record.DeviceFlush {
	if rec.Syscall == "sync_file_range" {
		return record.FlushNotRequested
	}
	if !record.IsSync(rec.Syscall) && rec.ReturnedBytes == 0 && rec.Error == "" {
		// A dsync write that wrote nothing synced nothing (the kernel
		// calls generic_write_sync only after bytes were written): no
		// device_flush. Before, it said unavailable on a write-back disk.
		return ""
	}
	for i := range rec.Bios {
		if rec.Bios[i].Kind == record.BioFlush && rec.Bios[i].IssueNs != 0 {
			return record.FlushDone
		}
	}
	switch e.writeCache(kdev) {
	case "write through":
		return record.FlushNotNeeded
	case "":
		if rec.Syscall == "sync" {
			return record.FlushNone
		}
		return record.FlushNoDevice
	}
	if rec.Error != "" || rec.Syscall == "sync" || rec.Syscall == "syncfs" {
		return record.FlushNone
	}
	return record.FlushUnavailable
}

// writeCache reads a block device's queue/write_cache (sysfs, cached per
// device: set it before the trace starts). A partition's queue is its
// disk's; "" when kdev is no block device (tmpfs's anonymous devices).
func (e *Engine) writeCache(kdev uint32) string {
	if v, ok := e.flush.caches[kdev]; ok {
		return v
	}
	if e.flush.caches == nil {
		e.flush.caches = map[uint32]string{}
	}
	v := ""
	if e.WriteCache != nil {
		v = e.WriteCache(kdev)
	} else {
		base := fmt.Sprintf("/sys/dev/block/%d:%d", kdev>>20, kdev&(1<<20-1))
		for _, p := range []string{base + "/queue/write_cache", base + "/../queue/write_cache"} {
			if b, err := os.ReadFile(p); err == nil {
				v = strings.TrimSpace(string(b))
				break
			}
		}
	}
	e.flush.caches[kdev] = v
	return v
}

// queuedSeen counts a call's bios that stand for bios it queued, and their
// bytes: all but the flush requests added after a bio's flush sequence
// (flushRef with no bio of its own). A bio split before issue
// (block_split) counts twice for one queued, its bytes once.
func queuedSeen(bios []*bioRef) (n uint32, bytes uint64) {
	for _, b := range bios {
		if b.flags&ownFlushReq != 0 && b.bioP == 0 {
			continue
		}
		n++
		bytes += uint64(b.Bytes)
	}
	return n, bytes
}

// Events that arrive before the event they complete. The ring buffer
// orders records by reservation, and block_rq_issue reserves its record
// after it has marked the request in flight: a request completed on another
// CPU in between (the issuing vCPU preempted, measured: ~1 in 3000 requests
// on a 2-vCPU VM) has its completion in the stream before its issue. The
// completion is kept (by request, and for a flush sequence by bio) and
// applied when the issue arrives, if it is later than the issue.

const maxOrphans = 4096 // kept early completions; beyond, the oldest are counted as orphans

type orphanState struct {
	rqs     map[uint64]bpf.IopathRqDoneEv
	flushes map[uint64]bpf.IopathFlushDoneEv
}

// keepOrphan remembers a completion of a request not seen issued.
func (e *Engine) keepOrphan(ev *bpf.IopathRqDoneEv) {
	keep(&e.orphans.rqs, ev.Rq, *ev, &e.counters.OrphanCompletes)
}

// replayOrphan applies a kept completion of request rq issued at ts.
func (e *Engine) replayOrphan(rq, ts uint64) {
	ev, ok := e.orphans.rqs[rq]
	if !ok {
		return
	}
	delete(e.orphans.rqs, rq)
	if ev.Ts < ts {
		e.counters.OrphanCompletes++ // an older request's: its issue was before the trace
		return
	}
	e.HandleComplete(&ev)
}

// keepFlushOrphan remembers the end of a flush sequence whose bio's issue
// has not arrived yet.
func (e *Engine) keepFlushOrphan(ev *bpf.IopathFlushDoneEv) {
	keep(&e.orphans.flushes, ev.Bio, *ev, &e.counters.OrphanCompletes)
}

// replayFlushOrphan applies a kept end of bio's flush sequence, once the
// bio's request has completed (HandleComplete) and it waits in flush.wait.
func (e *Engine) replayFlushOrphan(bio uint64) {
	ev, ok := e.orphans.flushes[bio]
	if !ok {
		return
	}
	delete(e.orphans.flushes, bio)
	e.HandleFlushDone(&ev)
}

// keep stores v under k in a bounded map (created on first use); a full
// map is cleared and what it held is counted in lost.
func keep[V any](m *map[uint64]V, k uint64, v V, lost *uint64) {
	if *m == nil {
		*m = map[uint64]V{}
	}
	if len(*m) >= maxOrphans {
		*lost += uint64(len(*m))
		clear(*m)
	}
	(*m)[k] = v
}
