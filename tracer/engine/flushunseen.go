package engine

import (
	"slices"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// Flush requests whose completion no BPF program saw (docs/kernel-notes.md,
// "Completions BPF never sees"). The calls such a flush served ended in the
// same unseen softirq (flush_end_io ends each waiting request), so their
// empty PREFLUSH bios' ends never reach iopath either. Which calls it
// served is known exactly: bpf/flush.c named each owned bio waiting for it
// at its issue (flushreq.go). Their flush bios are completed, with an
// issue time and no device time, at the first of:
//   - the call's own record (flushesUnseen): a flush the call waited for
//     (its own empty flush bio, or a flush of the journal commit it waited
//     for) completed before the call returned, and its completion event,
//     had BPF seen it, was reserved in the ring before the call's;
//   - the flush request's next issue (flushUnseen: bpf/flush.c reports a
//     flush request issued again with neither a completion nor a requeue
//     seen since: the kernel had ended it).
// A call short of any other bio (a data bio never seen issued) is not
// released by a flush: it waits for that bio as before.

// OwnFlushUnseen is OWN_FLUSH_UNSEEN (bpf/events.h, enum own_flag): an
// EV_FLUSH_DONE that stands for a flush request completed unseen.
const OwnFlushUnseen = uint32(bpf.IopathOwnFlagOWN_FLUSH_UNSEEN)

// flushUnseen takes an EV_FLUSH_DONE marked OwnFlushUnseen: the flush
// request run (FlushRq, FlushIssueNs) had completed by DoneNs.
func (e *Engine) flushUnseen(ev *bpf.IopathFlushDoneEv) {
	fr, ok := e.flush.reqs.reqs[flushKey{ev.FlushRq, ev.FlushIssueNs}]
	if !ok || fr.done {
		return // it served no owned bio
	}
	fr.done = true
	fr.bio.CompletedBeforeNs = ev.DoneNs
	for _, b := range fr.refs {
		if !b.done {
			b.done = true
			b.CompletedBeforeNs = ev.DoneNs
			if !hidden(b) {
				e.counters.CompletionsUnseen++
			}
		}
	}
	e.releaseFlushRefs(fr)
}

// flushesUnseen completes, once call p's record has arrived, the flush
// bios it waited for whose flush completion has not arrived: an fsync-
// family call returns only after them, so they completed unseen, before
// the call returned. Flushes of journal bios merely attributed to the call
// (OwnJournal: the latest call on the device) are not among them: the call
// may have waited for an earlier commit.
func (e *Engine) flushesUnseen(p *pendingOp) {
	if p.rec == nil || !record.SyncsDevice(p.rec) {
		return
	}
	end := p.endNs()
	for _, b := range p.bios {
		if b.done || b.flags&ownFlushReq == 0 || b.IssueNs == 0 || b.IssueNs >= end || (b.bioP == 0 && b.flags&(ownCommitJoin|ownWaited) == 0) {
			continue
		}
		b.done = true
		b.CompletedBeforeNs = end
		if !hidden(b) {
			e.counters.CompletionsUnseen++
		}
	}
}

// unavailableUnseen names, in a record's unavailable list, what a bio
// completed unseen cannot give.
const unavailableUnseen = "bios.complete_ns, d2c_ns, q2c_ns of bios with completed_before_ns (completion not seen by BPF)"

// unseenTimes tightens the bound of a call's bios completed unseen to the
// call's return where the call waited for them (the fsync family and
// O_DIRECT: a bio cannot complete after the call that waited for it
// returned), and says in unavailable which times are missing. An async
// request's part is not waited for by its submission call: io_submit and
// io_uring_enter return before its bios end (directunseen.go bounds them
// by the request's reap or CQE instead), dsync or not: a libaio or io_uring
// write to an O_DSYNC file has Dsync, and before, a bio of an O_DIRECT|
// O_DSYNC one completed unseen was bounded by io_submit's return, before
// the bio's own end.
func unseenTimes(rec *record.Syscall) {
	end := rec.TimeNs + rec.DurationNs
	waited := (record.SyncsDevice(rec) || rec.Direct) && !isRequestSys(rec.Syscall)
	any := false
	for i := range rec.Bios {
		b := &rec.Bios[i]
		if b.CompletedBeforeNs == 0 {
			continue
		}
		any = true
		if waited && end > b.IssueNs && end < b.CompletedBeforeNs {
			b.CompletedBeforeNs = end
		}
	}
	if any && !slices.Contains(rec.Unavailable, unavailableUnseen) {
		rec.Unavailable = append(rec.Unavailable, unavailableUnseen)
	}
}
