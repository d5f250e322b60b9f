package tracer

import (
	"fmt"
	"os"
	"strings"

	"github.com/iopath/iopath/bpf"
)

// Device cache flushes (bpf/flush.c). A bio asking for REQ_PREFLUSH or
// REQ_FUA on a device with a volatile write cache is sequenced by the block
// layer's flush machinery: a separate flush request (rwbs "FF", no bio,
// issued by kblockd) serves every request waiting at that moment, and the
// waiting request then ends without ever being issued itself (an empty
// flush, fsync's), or ends a second time after its data (jbd2's commit
// block: pre-flush, data, post-flush on a device without FUA). EV_FLUSH_DONE
// reports that end with the flush request that served it.
//
// The joins:
//   - an empty flush bio of a call becomes one bio of the call, kind flush,
//     with the flush request's rwbs and device time (it was never issued);
//   - a bio issued in a flush sequence (OWN_FLUSH_SEQ) is held until its
//     EV_FLUSH_DONE; the flush that served it is added to the call's bios
//     as one more (kind flush), not counted against the bios it queued;
//   - several calls' flushes merged into one request each get that request
//     (same issue and completion times): it served them all.

// ownFlushSeq mirrors OWN_FLUSH_SEQ (bpf/common.h); ownFlushReq marks, in
// userspace only, a bio that stands for a flush request.
const (
	ownFlushSeq = 4
	ownFlushReq = 1 << 31
)

// Device flush outcomes of fsync-family calls (Syscall.DeviceFlush).
const (
	FlushDone         = "flushed"         // a flush request served the call
	FlushNotNeeded    = "not_needed"      // the device has no volatile write cache ("write through")
	FlushNone         = "none"            // the device has a volatile cache, but no flush served this call
	FlushNotRequested = "not_requested"   // sync_file_range: never flushes the device cache
	FlushNoDevice     = "no_block_device" // tmpfs, proc...: nothing to flush
)

type flushState struct {
	wait   map[uint64]*bioRef // issued bios in a flush sequence, by bio pointer, until their final end
	caches map[uint32]string  // kernel dev_t -> queue/write_cache ("write back", "write through", "")
}

// awaitsFlush says whether a completed bio still waits for the end of its
// flush sequence (only a call's bios are held: writeback records are not).
func (e *Engine) awaitsFlush(b *bioRef) bool {
	return b.flags&ownFlushSeq != 0 && b.opID != 0
}

// holdForFlush remembers a call's bio issued in a flush sequence.
func (e *Engine) holdForFlush(b *bioRef) {
	if !e.awaitsFlush(b) {
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
	dev := e.devName(ev.Dev)
	fl := Bio{Dev: dev, QueueNs: ev.QueueNs, IssueNs: ev.FlushIssueNs, CompleteNs: ev.FlushDoneNs,
		D2CNs: sub(ev.FlushDoneNs, ev.FlushIssueNs), Q2CNs: sub(ev.DoneNs, ev.QueueNs), Kind: "flush",
		Rwbs: e.rwbsName(ev.FlushFlags), RequestBios: 0, Error: BlkStatus(ev.FlushError)}
	if ev.FlushRq == 0 {
		// Ended with no flush request issued after it was queued (the
		// flush machinery found nothing to do): its own end is all there is.
		fl.Rwbs, fl.IssueNs, fl.CompleteNs, fl.D2CNs, fl.Error = e.rwbsName(ev.RqFlags), 0, ev.DoneNs, 0, BlkStatus(ev.Error)
	}
	if b, ok := e.flush.wait[ev.Bio]; ok {
		// Its data was issued and completed: the sequence is over now.
		delete(e.flush.wait, ev.Bio)
		b.done = true
		if b.Error == "" {
			b.Error = BlkStatus(ev.Error)
		}
		if p, ok := e.ops[b.opID]; ok {
			if ev.FlushRq != 0 {
				f := e.flushRef(fl, b.opID, b.pid)
				p.bios = append(p.bios, f)
			}
			e.tryRelease(b.opID, p)
		}
		e.unref(b)
		return
	}
	if ev.Bytes != 0 {
		e.keepFlushOrphan(ev) // its data's issue or completion has not arrived yet
		return
	}
	if ev.OpId == 0 {
		if ev.OwnFlags&ownWriteback == 0 {
			e.unattributed(ev.Pid, ev.OwnFlags, 0)
		}
		return
	}
	// An empty flush bio: never issued, the flush request stands for it.
	p := e.op(ev.OpId, ev.QueueNs)
	f := e.flushRef(fl, ev.OpId, ev.Pid)
	f.bioP = ev.Bio
	p.bios = append(p.bios, f)
	e.tryRelease(ev.OpId, p)
}

// flushRef is a completed bio standing for a flush request, held by one call.
func (e *Engine) flushRef(fl Bio, opID uint64, pid uint32) *bioRef {
	f := e.newBio()
	*f = bioRef{Bio: fl, done: true, refs: 1, opID: opID, pid: pid, flags: ownFlushReq}
	return f
}

// deviceFlush says what happened to the device cache for a call of the
// fsync family: FlushDone when one of its bios is a flush request, else
// what the device's write cache mode implies.
func (e *Engine) deviceFlush(rec *Syscall) string {
	if rec.Syscall == "sync_file_range" {
		return FlushNotRequested
	}
	for i := range rec.Bios {
		if rec.Bios[i].Kind == "flush" && rec.Bios[i].IssueNs != 0 {
			return FlushDone
		}
	}
	switch e.writeCache(rec.kdev) {
	case "write through":
		return FlushNotNeeded
	case "":
		if rec.Syscall == "sync" {
			return FlushNone
		}
		return FlushNoDevice
	}
	return FlushNone
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
	base := fmt.Sprintf("/sys/dev/block/%d:%d", kdev>>20, kdev&(1<<20-1))
	v := ""
	for _, p := range []string{base + "/queue/write_cache", base + "/../queue/write_cache"} {
		if b, err := os.ReadFile(p); err == nil {
			v = strings.TrimSpace(string(b))
			break
		}
	}
	if e.WriteCache != nil {
		v = e.WriteCache(kdev)
	}
	e.flush.caches[kdev] = v
	return v
}

// queuedSeen counts a call's bios that stand for bios it queued: all but
// the flush requests added after a bio's flush sequence (flushRef with no
// bio of its own).
func queuedSeen(bios []*bioRef) uint32 {
	n := uint32(len(bios))
	for _, b := range bios {
		if b.flags&ownFlushReq != 0 && b.bioP == 0 {
			n--
		}
	}
	return n
}

// logFlushDone writes an EV_FLUSH_DONE's join keys to IOPATH_DEBUG_EVENTS.
func logFlushDone(raw []byte) {
	var ev bpf.IopathFlushDoneEv
	fill(bytesOf(&ev), raw)
	fmt.Fprintf(debugEvents, "flushdone bio=%x op=%x own=%d queue=%d done=%d flush_rq=%x issue=%d complete=%d bytes=%d\n",
		ev.Bio, ev.OpId, ev.OwnFlags, ev.QueueNs, ev.DoneNs, ev.FlushRq, ev.FlushIssueNs, ev.FlushDoneNs, ev.Bytes)
}
