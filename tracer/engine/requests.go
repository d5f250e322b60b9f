package engine

import (
	"strings"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

// bioRef is one owned bio, shared by its request and (when attributed) its
// call. refs counts those holders; the last one to let go recycles it.
type bioRef struct {
	record.Bio
	done  bool
	refs  uint8
	opID  uint64
	pid   uint32
	bioP  uint64
	flags uint32
	// inflight: requests in flight on the device when its request was
	// issued, that one included (asyncio.go)
	inflight uint32
}

type pendingRq struct {
	bios     []*bioRef
	requeued bool
	kdev     uint32
	issueNs  uint64 // its latest issue (after a requeue: the issue again)
}

// HandleIssue takes an EV_RQ_ISSUE record.
func (e *Engine) HandleIssue(ev *bpf.IopathRqIssueEv) {
	e.seen(ev.Ts)
	if rq, ok := e.rqs[ev.Rq]; ok {
		if rq.requeued && rq.sameBios(ev) {
			// Issued again after block_rq_requeue (from kworker/N:1H): its
			// owned bios were reported at the first issue (a request in a
			// flush sequence reports them again).
			rq.requeued = false
			rq.issueNs = ev.Ts
			for _, b := range rq.bios {
				b.IssueNs = ev.Ts
				b.Requeues++
			}
			e.counters.Requeues++
			return
		}
		// No requeue in between, or other bios: the kernel ended the first
		// request without iopath seeing its block_rq_complete.
		e.completionLost(ev.Rq, rq, ev.Ts)
	}
	rq := e.newRq()
	rq.kdev, rq.issueNs = ev.Dev, ev.Ts
	inflight := e.rqIssued(ev.Dev) // asyncio.go
	n := int(ev.NrOwn)
	if n > len(ev.Own) {
		n = len(ev.Own)
	}
	rwbs := e.rwbsName(ev.CmdFlags)
	dev := e.devName(ev.Dev)
	// Only a write enters a flush sequence: submit_bio_noacct refuses
	// PREFLUSH/FUA on any other op. A read marked so is a misread
	// rq_flags bit (6.12 before the loader set RQF_FLUSH_SEQ from BTF:
	// bit 4, __RQF_SCHED_TAGS there); waiting for its flush's end would
	// hold the call until the trace ends.
	keep := ^uint32(0)
	if !e.K.IsWrite(ev.CmdFlags) {
		keep = ^OwnFlushSeq
	}
	for i := 0; i < n; i++ {
		own := &ev.Own[i]
		b := e.newBio()
		*b = bioRef{
			Bio: record.Bio{Dev: dev, Sector: own.Sector, Bytes: own.Bytes, Rwbs: rwbs,
				QueueNs: own.QueueNs, IssueNs: ev.Ts, RequestBytes: ev.Bytes, RequestBios: ev.NrBios},
			opID: own.OpId, pid: own.Pid, bioP: own.Bio, flags: own.Flags & keep, refs: 1, inflight: inflight,
		}
		rq.bios = append(rq.bios, b)
		switch {
		case own.OpId != 0:
			p := e.op(own.OpId, ev.Ts)
			p.bios = append(p.bios, b)
			b.refs++          // held by the call too
			e.holdForFlush(b) // flush.go
		case own.Flags&(OwnWriteback|OwnCommitRec) == 0: // a commit record is jbd2's, kept for its flushes (flushreq.go)
			e.unattributedBio(own.Pid, own.Bytes, unattributedCause(own.Flags, rwbs), e.K.IsRead(ev.CmdFlags), e.K.IsWrite(ev.CmdFlags)) // unattributed.go
		}
	}
	e.rqs[ev.Rq] = rq
	e.replayOrphan(ev.Rq, ev.Ts) // flush.go
}

// Bio ownership flags (struct issue_own.flags): bpf/events.h's enum
// own_flag, through bpf2go.
const (
	OwnWriteback = uint32(bpf.IopathOwnFlagOWN_WRITEBACK) // the bio carries tracked dirty pages
	OwnJournal   = uint32(bpf.IopathOwnFlagOWN_JOURNAL)   // queued by jbd2 while a traced fsync-family call waited on its device
)

// sameBios says whether a request issued again at rq's address is rq
// itself: the issue names no owned bio (forgotten at the first issue) or
// only bios rq already holds.
func (rq *pendingRq) sameBios(ev *bpf.IopathRqIssueEv) bool {
	n := min(int(ev.NrOwn), len(ev.Own))
	for i := 0; i < n; i++ {
		held := false
		for _, b := range rq.bios {
			held = held || b.bioP == ev.Own[i].Bio
		}
		if !held {
			return false
		}
	}
	return true
}

// completionLost ends a request whose address was issued again, at
// reissueNs, with no requeue in between (or as a request with other bios):
// the kernel completed and freed the first, but no BPF program saw its
// completion. Its bios are released as completed before reissueNs, with no
// device time (Bio.CompletedBeforeNs), counted in CompletionsUnseen, not
// as incomplete: they did complete. Before, they were taken for a requeue,
// which gave them the next request's completion (and, after a requeue,
// dropped that request's bios).
// The cause, measured on the 6.18 build host (docs/kernel-notes.md,
// "Completions BPF never sees"): no BPF program of any attach type runs
// for a block_rq_complete fired in a softirq on top of a thread of the
// sandbox's init (PID 1), while tracefs records it; ~0.5 % of completions
// under fio fdatasync load, 100 % of those on PID 1's threads.
func (e *Engine) completionLost(key uint64, rq *pendingRq, reissueNs uint64) {
	delete(e.rqs, key)
	e.rqCompleted(rq.kdev) // asyncio.go: it is no longer in flight
	e.completedUnseen(rq, reissueNs)
}

// completedUnseen releases the bios of request rq (already out of e.rqs),
// which the kernel completed before beforeNs although no BPF program saw
// the completion: at the reuse of its address (completionLost) or, at the
// end of a trace, beyond the disk's own count of requests in flight
// (endunseen.go). Each bio gets CompletedBeforeNs, no device time; a
// writeback bio's pages persist by then (writebackDone: persisted_before_ns).
// Each bio of a call still held is counted in CompletionsUnseen; a bio
// whose call was already released (after HoldNs, as incomplete) is not
// counted twice.
func (e *Engine) completedUnseen(rq *pendingRq, beforeNs uint64) {
	for _, b := range rq.bios {
		if b.done && b.CompletedBeforeNs != 0 {
			continue // already bounded, tighter, by its direct IO's end (directunseen.go)
		}
		b.done = true // CompleteNs stays 0: no device time
		b.CompletedBeforeNs = beforeNs
		if b.flags&OwnWriteback != 0 {
			e.writebackDone(b) // writeback.go
		}
		if b.opID == 0 {
			continue
		}
		if p, ok := e.ops[b.opID]; ok {
			e.counters.CompletionsUnseen++
			e.tryRelease(b.opID, p)
		}
	}
	e.putRq(rq)
}

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
		e.keepOrphan(ev) // its issue may still come (flush.go)
		return
	}
	delete(e.rqs, ev.Rq)
	e.rqCompleted(rq.kdev) // asyncio.go
	for _, b := range rq.bios {
		b.done = !awaitsFlush(b) // else done at the end of its flush sequence (flush.go)
		b.CompleteNs = ev.Ts
		b.Error = kernel.BlkStatus(ev.Error)
		b.D2CNs = sub(ev.Ts, b.IssueNs)
		b.Q2CNs = sub(ev.Ts, b.QueueNs)
	}
	for _, b := range rq.bios {
		if b.flags&OwnWriteback != 0 {
			e.writebackDone(b)
		}
		if !b.done {
			e.replayFlushOrphan(b.bioP)
		}
		if b.opID != 0 {
			if p, ok := e.ops[b.opID]; ok {
				e.tryRelease(b.opID, p)
			}
		} else if b.flags&(OwnWriteback|OwnCommitRec) == 0 && e.UnattributedBio != nil {
			e.UnattributedBio(b.pid, unattributedCause(b.flags, b.Rwbs), b.Bio)
		}
	}
	e.putRq(rq)
}

// unattributedCause names why a bio outside any traced call was queued
// (causeName), a discard (rwbs D, DE: online discard of freed blocks on a
// filesystem mounted with -o discard, e.g. in unlink or truncate) marked as
// such: it moves no data, and its bytes are the range it discards.
func unattributedCause(flags uint32, rwbs string) string {
	if strings.HasPrefix(rwbs, "D") {
		return record.DiscardCause + causeName(flags)
	}
	return causeName(flags)
}

func sub(a, b uint64) uint64 {
	if a > b && b != 0 {
		return a - b
	}
	return 0
}

// bioKind classifies a bio of an fsync-family call.
func bioKind(b *bioRef) record.BioKind {
	switch {
	case b.flags&ownFlushReq != 0:
		return record.BioFlush
	case b.flags&OwnJournal != 0:
		return record.BioJournal
	case b.Bytes == 0 || strings.HasPrefix(b.Rwbs, "F"):
		return record.BioFlush
	case strings.Contains(b.Rwbs, "M"):
		return record.BioMetadata
	}
	return record.BioData
}
