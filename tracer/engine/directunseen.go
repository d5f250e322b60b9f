package engine

import (
	"slices"
	"strings"

	"github.com/iopath/iopath/record"
)

// Direct IO's bios whose completion no BPF program saw (docs/kernel-notes.md,
// "Completions BPF never sees"). A direct read or write ends only after all
// of its bios have: iomap's dio completion (or the old fs/direct-io.c's)
// runs from the last bio's end_io. So the event that shows the IO ended
// proves each of its bios issued before it completed, no later:
//   - a direct read/write call's own record (its sys_exit);
//   - a libaio request's reap (EV_AIO_REAP: io_getevents returned it);
//   - an io_uring request's CQE (EV_URING_COMPLETE).
// Had BPF seen a bio's block_rq_complete, its event was reserved in the one
// ring before the proof's (the completion runs before the dio's end, which
// runs before the proof), so a bio still open when the proof arrives
// completed unseen. Without this, such a call waited for its request's
// address to be issued again (requests.go completionLost: 2-37 ms later,
// or the end of the trace), and its completed_before_ns was that later
// time; a libaio request then even printed a bound after its own reap.

// directDone completes, as completed unseen before beforeNs, the bios of
// op p (a direct call or an async request's part) issued but not completed
// when its end was proven. Bios the IO itself did not wait for are left:
// writeback (a flush of dirty pages before the direct IO is waited for,
// but its pages' persistence is writeback.go's story), journal bios
// attributed to the latest call on the device, flush requests
// (flushunseen.go), and readahead (REQ_RAHEAD, rwbs A: no direct IO
// bio is one). A readahead bio is a page-cache read the call need not wait
// for: ext4 runs an O_DIRECT read of a file it cannot read directly
// (data=journal, encrypted, verity) as a buffered read, whose async
// readahead is left in flight; mballoc's block bitmap prefetch in a direct
// write that allocates is never waited for. Such a bio completes, seen, after
// the call's record (before, it was completed unseen at the call's return,
// its request forgotten, and its real completion counted an orphan). It
// says whether it completed any.
func (e *Engine) directDone(p *pendingOp, beforeNs uint64) bool {
	var ended []*bioRef
	for _, b := range p.bios {
		if b.done || b.IssueNs == 0 || b.IssueNs > beforeNs || b.flags&(OwnWriteback|OwnJournal|ownFlushReq) != 0 || readaheadBio(b.Rwbs) {
			continue
		}
		b.done = true
		b.CompletedBeforeNs = beforeNs
		e.counters.CompletionsUnseen++
		ended = append(ended, b)
	}
	if ended != nil {
		e.dropEndedRqs(ended)
	}
	return ended != nil
}

// directCallDone applies directDone to a direct read or write call whose
// record has arrived (calls.go tryRelease). An async request's part is not
// such a call: io_submit and io_uring_enter return before its bios end.
func (e *Engine) directCallDone(p *pendingOp) {
	if p.rec == nil || !p.rec.Direct || isRequestSys(p.rec.Syscall) ||
		!record.IsRead(p.rec.Syscall) && !record.IsWrite(p.rec.Syscall) {
		return
	}
	e.directDone(p, p.endNs())
}

// requestDone applies directDone to the parts of direct request id whose
// end arrived at ts (a reap or a CQE): its own EV_OP and, for io_uring, the
// parts other threads ran (asyncio.go segReq). A part released by it hands
// itself to the request (requestPart), which may then be printed: the
// caller must not print r again.
func (e *Engine) requestDone(id, ts uint64, r *asyncReq) {
	if p, ok := e.ops[id]; ok && p.rec != nil && p.rec.Direct && e.directDone(p, ts) {
		e.tryRelease(id, p)
	}
	// Only an io_uring request with parts not yet received has parts of
	// other threads in flight: the scan of segReq is skipped for every
	// libaio reap and every complete io_uring request (per CQE otherwise).
	if !r.uring || r.got >= r.want {
		return
	}
	for part, req := range e.async.segReq {
		if req != id {
			continue
		}
		if p, ok := e.ops[part]; ok && p.rec != nil && p.rec.Direct && e.directDone(p, ts) {
			e.tryRelease(part, p)
		}
	}
}

// dropEndedRqs forgets the requests in flight that hold a bio of ended
// (directDone completed them) and whose bios are all done: the kernel has
// ended them, and their addresses' next issue is a new request, not a lost
// completion. Only run when directDone completed a bio: unseen completions
// are rare (~0.5 % under load on the build host), and the requests in
// flight few.
func (e *Engine) dropEndedRqs(ended []*bioRef) {
	for key, rq := range e.rqs {
		holds, done := false, true
		for _, b := range rq.bios {
			holds = holds || slices.Contains(ended, b)
			done = done && b.done
		}
		if holds && done {
			delete(e.rqs, key)
			e.rqCompleted(rq.kdev) // asyncio.go: no longer in flight
			e.putRq(rq)
		}
	}
}

// readaheadBio says whether a request's rwbs marks it REQ_RAHEAD (A: no op
// letter is one, kernel.Rwbs).
func readaheadBio(rwbs string) bool { return strings.Contains(rwbs, "A") }
