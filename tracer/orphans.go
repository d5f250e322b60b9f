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
