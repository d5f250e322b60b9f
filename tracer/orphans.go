package tracer

import "github.com/iopath/iopath/bpf"

// Events that arrive before the event they complete. The ring buffer
// orders records by reservation, and block_rq_issue reserves its record
// after it has marked the request in flight: a request completed on another
// CPU in between (the issuing vCPU preempted, measured here: ~1 in 3000
// requests on this 2-vCPU VM) has its completion in the stream before its
// issue. The completion is kept (by request, and for a flush sequence by
// bio) and applied when the issue arrives, if it is later than the issue.

const maxOrphans = 4096 // kept early completions; beyond, the oldest are counted as orphans

type orphanState struct {
	rqs     map[uint64]bpf.IopathRqDoneEv
	flushes map[uint64]bpf.IopathFlushDoneEv
}

// keepOrphan remembers a completion of a request not seen issued.
func (e *Engine) keepOrphan(ev *bpf.IopathRqDoneEv) {
	if e.orphans.rqs == nil {
		e.orphans.rqs = map[uint64]bpf.IopathRqDoneEv{}
	}
	if len(e.orphans.rqs) >= maxOrphans {
		e.counters.OrphanCompletes += uint64(len(e.orphans.rqs))
		clear(e.orphans.rqs)
	}
	e.orphans.rqs[ev.Rq] = *ev
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
	if e.orphans.flushes == nil {
		e.orphans.flushes = map[uint64]bpf.IopathFlushDoneEv{}
	}
	if len(e.orphans.flushes) >= maxOrphans {
		e.counters.OrphanCompletes += uint64(len(e.orphans.flushes))
		clear(e.orphans.flushes)
	}
	e.orphans.flushes[ev.Bio] = *ev
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
