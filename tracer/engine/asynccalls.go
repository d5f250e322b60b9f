package engine

import (
	"math/bits"
	"slices"
	"strconv"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// The records of asynchronous IO's own system calls (issue 13): io_submit,
// io_getevents / io_pgetevents and io_uring_enter ("type":"async_call").
//
// A submission call's record is joined with its requests (asyncio.go) by
// its op_id, their submit_op_id. By default (as calls that only hit the
// page cache are not streamed) it is printed only right before the first
// of its requests that touched the disk, so that it heads their stories,
// or when it failed; with AllCalls every call is printed, the reaping calls
// too. An io_uring request waits for its io_uring_enter record (sent at
// the call's exit, after the request's own events) so that the call comes
// first.

// asyncCall is a submission call being joined with its requests.
type asyncCall struct {
	rec     *record.AsyncCall // nil: io_uring_enter's record not arrived yet
	pending int               // its requests not released yet
	// libaio: iocbs reported in EV_AIO_SUBMIT records so far, and how many
	// the call's records carry in all.
	seen, total int
	emitted     bool
	waiting     []uint64 // io_uring requests ready before the call's record arrived
	firstNs     uint64   // its first event (Tick gives up HoldNs after it)
}

// reapCall is an io_getevents whose EV_AIO_REAP records are still coming.
type reapCall struct {
	rec   *record.AsyncCall
	total int // events its records carry (ret, at most AIO_MAX_IOCBS)
	got   int
}

func (e *Engine) asyncCall(id, ts uint64) *asyncCall {
	e.async.init()
	c := e.async.calls[id]
	if c == nil {
		c = &asyncCall{firstNs: ts}
		e.async.calls[id] = c
	}
	return c
}

// aioCallRecord notes an EV_AIO_SUBMIT record's part of its io_submit call
// (before its requests are created).
func (e *Engine) aioCallRecord(ev *bpf.IopathAioSubmitEv) *asyncCall {
	c := e.asyncCall(ev.OpId, ev.StartNs)
	if c.rec == nil {
		c.rec = &record.AsyncCall{Type: record.TypeAsyncCall, Engine: record.EngineLibaio, Syscall: "io_submit", OpID: ev.OpId,
			TimeNs: ev.StartNs, DurationNs: sub(ev.EndNs, ev.StartNs), Pid: ev.Pid, Tid: ev.Tid, Comm: e.comm(cBytes(ev.Comm[:])),
			ToSubmit: ev.Nr}
		setCallResult(c.rec, ev.Ret)
		c.total = int(min(ev.Nr, e.aioMaxEvents()))
	}
	return c
}

// aioCallSeen counts n more iocbs of the call reported.
func (e *Engine) aioCallSeen(id uint64, c *asyncCall, n int) {
	c.seen += n
	e.tryCall(id, c)
}

func setCallResult(rec *record.AsyncCall, ret int64) {
	if ret < 0 {
		rec.Error = errnoName(-ret)
		return
	}
	rec.Submitted = uint32(ret)
}

// callRequest notes one more request of a submission call.
func (e *Engine) callRequest(id, ts uint64) {
	if id != 0 {
		e.asyncCall(id, ts).pending++
	}
}

// callHolds says whether an io_uring request ready to print waits for its
// io_uring_enter record, and queues it to be retried then.
func (e *Engine) callHolds(id uint64, r *asyncReq) bool {
	if !r.uring || r.req == nil || r.req.SubmitOpID == 0 {
		return false
	}
	c := e.async.calls[r.req.SubmitOpID]
	if c == nil || c.rec != nil {
		return false
	}
	if !slices.Contains(c.waiting, id) {
		c.waiting = append(c.waiting, id)
	}
	return true
}

// callBefore prints a request's submission call before the request when
// the request touched the disk (the call heads its story) and returns the
// call (nil: none known); callAfter closes it once its last request is out.
func (e *Engine) callBefore(q *record.Request) *asyncCall {
	c := e.async.calls[q.SubmitOpID]
	if q.SubmitOpID == 0 || c == nil {
		return nil
	}
	if c.rec != nil && !c.emitted && q.TouchedDisk() {
		c.emitted = true
		e.Out(c.rec)
	}
	return c
}

func (e *Engine) callAfter(q *record.Request, c *asyncCall) {
	if c != nil {
		c.pending--
		e.tryCall(q.SubmitOpID, c)
	}
}

// tryCall closes a submission call once its record and all its requests are out.
func (e *Engine) tryCall(id uint64, c *asyncCall) {
	if c.rec == nil || c.pending > 0 || c.seen < c.total {
		return
	}
	e.closeCall(id, c)
}

func (e *Engine) closeCall(id uint64, c *asyncCall) {
	delete(e.async.calls, id)
	if c.rec != nil && !c.emitted && (e.AllCalls || c.rec.Error != "") {
		e.Out(c.rec)
	}
}

// uringEnterFlags names IORING_ENTER_* (include/uapi/linux/io_uring.h).
var uringEnterFlags = []string{"GETEVENTS", "SQ_WAKEUP", "SQ_WAIT", "EXT_ARG", "REGISTERED_RING", "ABS_TIMER", "EXT_ARG_REG", "NO_IOWAIT"}

func enterFlags(f uint32) []string {
	var names []string
	for f != 0 {
		b := bits.TrailingZeros32(f)
		f &^= 1 << b
		if b < len(uringEnterFlags) {
			names = append(names, uringEnterFlags[b])
		} else {
			names = append(names, "bit_"+strconv.Itoa(b))
		}
	}
	return names
}

// maxUringDone bounds the CQE times remembered per thread between two of
// its io_uring_enter records; beyond it "completed" is unavailable.
const maxUringDone = 4096

// cqePosted is a CQE of process pid's request posted at ts.
type cqePosted struct {
	ts  uint64
	pid uint32
}

// uringCompleted remembers that thread tid posted a CQE of process pid's
// request at ts, for its io_uring_enter call's "completed" (an interrupt
// that posts one while another process's thread runs is not that call's).
func (e *Engine) uringCompleted(tid, pid uint32, ts uint64) {
	e.async.init()
	if d := e.async.uringDone[tid]; len(d) < maxUringDone+1 {
		e.async.uringDone[tid] = append(d, cqePosted{ts, pid})
	}
}

// HandleUringEnter takes an EV_URING_ENTER record: an io_uring_enter call
// at its exit, after its requests' EV_URING_SUBMIT records.
func (e *Engine) HandleUringEnter(ev *bpf.IopathUringEnterEv) {
	e.seen(ev.EndNs)
	c := e.asyncCall(ev.OpId, ev.StartNs)
	rec := &record.AsyncCall{Type: record.TypeAsyncCall, Engine: record.EngineIOUring, Syscall: "io_uring_enter", OpID: ev.OpId,
		TimeNs: ev.StartNs, DurationNs: sub(ev.EndNs, ev.StartNs), Pid: ev.Pid, Tid: ev.Tid, Comm: e.comm(cBytes(ev.Comm[:])),
		ToSubmit: ev.ToSubmit, MinComplete: ev.MinComplete, Flags: enterFlags(ev.Flags)}
	setCallResult(rec, ev.Ret)
	done := e.async.uringDone[ev.Tid]
	delete(e.async.uringDone, ev.Tid)
	if len(done) > maxUringDone {
		rec.Unavailable = append(rec.Unavailable, "completed")
	} else {
		for _, d := range done {
			if d.pid == ev.Pid && d.ts >= ev.StartNs && d.ts <= ev.EndNs {
				rec.Completed++
			}
		}
	}
	c.rec = rec
	if c.pending == 0 && rec.Submitted == 0 && rec.Error == "" {
		// A wait for completions only: a reaping call.
		delete(e.async.calls, ev.OpId)
		if e.AllCalls {
			e.Out(rec)
		}
		return
	}
	waiting := c.waiting
	c.waiting = nil
	for _, id := range waiting {
		if r := e.async.reqs[id]; r != nil {
			e.tryRequest(id, r)
		}
	}
	e.tryCall(ev.OpId, c)
}

// reapCallRecord takes an EV_AIO_REAP record's part of its io_getevents
// call; ids: the requests its events were matched to (0: not matched). Only
// with AllCalls: a reaping call is not streamed otherwise.
func (e *Engine) reapCallRecord(ev *bpf.IopathAioReapEv, ids []uint64) {
	rc := e.async.reaps[ev.Tid]
	if rc != nil && (ev.First == 0 || rc.rec.OpID != ev.OpId) {
		e.closeReap(ev.Tid, rc) // a record of the previous call was lost
		rc = nil
	}
	if rc == nil {
		rec := &record.AsyncCall{Type: record.TypeAsyncCall, Engine: record.EngineLibaio, Syscall: "io_getevents", OpID: ev.OpId,
			TimeNs: ev.StartNs, DurationNs: sub(ev.Ts, ev.StartNs), Pid: ev.Pid, Tid: ev.Tid,
			MinComplete: ev.MinNr, Completed: uint32(max(ev.Ret, 0))}
		if ps := e.pids[ev.Pid]; ps != nil {
			rec.Comm = ps.Comm // the record has no comm: its process's
		}
		if ev.StartNs == 0 {
			rec.TimeNs, rec.DurationNs = ev.Ts, 0
			rec.Unavailable = append(rec.Unavailable, "op_id", "time_ns", "duration_ns", "min_complete")
		}
		rc = &reapCall{rec: rec, total: int(min(max(ev.Ret, 0), int64(e.aioMaxEvents())))}
		e.async.reaps[ev.Tid] = rc
	}
	for _, id := range ids {
		if id == 0 {
			if !slices.Contains(rc.rec.Unavailable, "reaped_op_ids") {
				rc.rec.Unavailable = append(rc.rec.Unavailable, "reaped_op_ids")
			}
			continue
		}
		rc.rec.ReapedOpIDs = append(rc.rec.ReapedOpIDs, id)
	}
	if rc.got += int(ev.N); rc.got >= rc.total {
		e.closeReap(ev.Tid, rc)
	}
}

func (e *Engine) closeReap(tid uint32, rc *reapCall) {
	delete(e.async.reaps, tid)
	if rc.got < rc.total && !slices.Contains(rc.rec.Unavailable, "reaped_op_ids") {
		rc.rec.Unavailable = append(rc.rec.Unavailable, "reaped_op_ids")
	}
	if e.AllCalls {
		e.Out(rc.rec)
	}
}

// callsTick closes the calls whose requests are all out but whose other
// records never came (lost), HoldNs after their first event.
func (e *Engine) callsTick(flush bool) {
	ids := make([]uint64, 0, len(e.async.calls))
	for id, c := range e.async.calls {
		if c.pending <= 0 && (flush || e.lastTs > c.firstNs+e.HoldNs) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.closeCall(id, e.async.calls[id])
	}
	if flush {
		for tid, rc := range e.async.reaps {
			e.closeReap(tid, rc)
		}
		clear(e.async.uringDone)
	}
}

// aioMaxEvents is AIO_MAX_IOCBS (bpf/events.h) of the loaded build: iocbs
// or io_events reported per call, beyond which the kernel side counts them
// (truncations). 4096 in the main build; 128 in the compat build
// (SetCompat). With 128 in both, a main-build reap of 200 events came out as
// two records with one op_id, the second missing its ids (a breaker).
func (e *Engine) aioMaxEvents() uint32 {
	if e.compat {
		return uint32(bpf.IopathAioLimitAIO_MAX_IOCBS_COMPAT)
	}
	return uint32(bpf.IopathAioLimitAIO_MAX_IOCBS_MAIN)
}

// SetCompat says the compat BPF build is loaded (its smaller limits).
func (e *Engine) SetCompat(on bool) { e.compat = on }
