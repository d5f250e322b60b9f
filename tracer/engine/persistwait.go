package engine

import "github.com/iopath/iopath/record"

// Persisted records that wait for their file's path. A call's record
// arrives at its end; background writeback of the pages a long call
// dirties can run before that (cp's 200 MiB copy_file_range: the flusher
// wrote its output's pages during the call, TestTraceCpCopy), and when no
// earlier record named the file (cp's open is not traced) those persisted
// records had no path. Now such a record waits for the record of the call
// or fault that dirtied its pages, which names the file (a copy's output:
// the name-only EV_PATH just before its EV_OP), and takes the path then.
// Bounded: at most HoldNs of kernel time (as a call waits for its bios)
// and MaxPending/16 records; the oldest go out without a path beyond
// that, and every one at the end.

// waitingPersisted is a persisted record held for op's record.
type waitingPersisted struct {
	rec   *record.Persisted
	op    uint64
	key   fileKey
	since uint64 // e.lastTs when it began to wait
}

// outPersisted hands a persisted record of op's pages on file key to Out,
// or holds it when the file has no path yet and op's record (arrived: its
// dirtied pages are counted, dirtyOf) has not arrived.
func (e *Engine) outPersisted(rec *record.Persisted, op uint64, key fileKey, arrived bool) {
	if rec.Path != "" || arrived || op == 0 {
		e.Out(rec)
		return
	}
	limit := e.MaxPending
	if limit <= 0 {
		limit = defPending
	}
	if len(e.pathWait) >= max(limit/16, 1) {
		e.releasePathWait(func(*waitingPersisted) bool { return true }, 1)
	}
	e.pathWait = append(e.pathWait, waitingPersisted{rec: rec, op: op, key: key, since: e.lastTs})
	if e.pathWaitOps == nil {
		e.pathWaitOps = map[uint64]int{}
	}
	e.pathWaitOps[op]++
}

// persistedNamed releases, once op's record has arrived (and named its
// file), the persisted records that waited for it, with the path.
func (e *Engine) persistedNamed(op uint64) {
	// Every op's record passes here: look the op up rather than scan the
	// (up to MaxPending/16) waiting records for each.
	if e.pathWaitOps[op] == 0 {
		return
	}
	e.releasePathWait(func(w *waitingPersisted) bool { return w.op == op }, len(e.pathWait))
}

// persistWaitFlush releases every waiting record (the end of a trace).
func (e *Engine) persistWaitFlush() {
	e.releasePathWait(func(*waitingPersisted) bool { return true }, len(e.pathWait))
}

// persistWaitTick releases the records that have waited HoldNs.
func (e *Engine) persistWaitTick() {
	if len(e.pathWait) == 0 {
		return
	}
	e.releasePathWait(func(w *waitingPersisted) bool { return e.lastTs > w.since+e.HoldNs }, len(e.pathWait))
}

// releasePathWait hands to Out, in arrival order, up to n of the waiting
// records for which pick says so, each with its file's path as known now.
func (e *Engine) releasePathWait(pick func(*waitingPersisted) bool, n int) {
	keep := e.pathWait[:0]
	for i := range e.pathWait {
		w := e.pathWait[i]
		if n > 0 && pick(&w) {
			n--
			if w.rec.Path == "" {
				w.rec.Path = e.paths[w.key]
			}
			if e.pathWaitOps[w.op]--; e.pathWaitOps[w.op] <= 0 {
				delete(e.pathWaitOps, w.op)
			}
			e.Out(w.rec)
			continue
		}
		keep = append(keep, w)
	}
	clear(e.pathWait[len(keep):])
	e.pathWait = keep
}
