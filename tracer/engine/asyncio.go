package engine

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// The asynchronous-request join (issue 13): libaio iocbs.
//
// Three streams meet per request, keyed by its op_id (the submission call's
// op_id + 1 + the iocb's index, numbered by the kernel):
//   - its EV_OP (sys libaio_read/libaio_write): what the request did while
//     io_submit processed it (cache, readahead, bios, dirtied pages), joined
//     with its bios by calls.go like any call's, then handed here by emit;
//   - the EV_AIO_SUBMIT records of its io_submit: the iocb (user address,
//     user data, opcode, fd, offset, length) and the call's times;
//   - an EV_AIO_REAP of an io_getevents: its result and when the
//     application collected it, matched by (pid, ring, iocb address) to the
//     oldest request of that iocb not reaped yet (an application may reuse
//     an iocb, and its user data, once reaped).
// A request is printed once all three are in, or when Tick gives up
// (HoldNs after its submission: never reaped, or its events were lost; the
// missing fields are listed as unavailable). A reap that arrives before its
// submit record (another thread reaped it while the submitter was still in
// io_submit) waits for it.

// asyncReq is one request being joined.
type asyncReq struct {
	seg      *record.Syscall // its EV_OP's record with its bios (nil: none yet, or none at all); io_uring: merged
	kdev     uint32
	inflight uint32
	readB    uint64
	req      *record.Request // from the submit record (nil: not seen yet)
	subEnd   uint64          // the submission call's exit
	reaped   bool            // libaio: reaped; io_uring: its CQE was posted
	// io_uring: its EV_OPs (one per thread that ran part of it) received,
	// and how many its completion says there are.
	uring     bool
	got, want uint32
	punted    bool
}

type iocbKey struct {
	pid     uint32
	ctx, cb uint64
}

// reqFile is the file behind a process's fd as its last request's EV_OP
// named it: a request with no EV_OP of its own (a cache hit in a batch)
// takes its file from there.
type reqFile struct {
	path, dev, fs string
	ino           uint64
	kdev          uint32
	direct        bool
}

type pidFd struct {
	pid uint32
	fd  int64
}

type asyncState struct {
	files  map[pidFd]reqFile
	segReq map[uint64]uint64 // EV_OP op_id -> its request's op_id, while its bios are in flight
	// dirtiedBy: EV_OP op_id -> its request's, for an io-wq worker's part
	// that dirtied pages: their persisted records name the request.
	dirtiedBy map[uint64]uint64
	reqs      map[uint64]*asyncReq
	byIocb    map[iocbKey][]uint64              // submitted, not reaped, oldest first
	early     map[iocbKey][]*bpf.IopathAioEvent // reaps whose submit record has not arrived
	earlyT    map[iocbKey]uint64                // ... and when they were reaped
	// inflight counts the requests issued and not completed per device
	// (requests.go stamps each bio with it at issue).
	inflight map[uint32]uint32
	Lost     uint64 // requests released without their submit record
	// The submission calls being joined with their requests, by op_id,
	// the io_getevents calls whose records are still coming, by thread,
	// and the CQEs each thread posted since its last io_uring_enter
	// (asynccalls.go).
	calls     map[uint64]*asyncCall
	reaps     map[uint32]*reapCall
	uringDone map[uint32][]cqePosted
}

// maxEarly bounds the reaps waiting for their submit record; beyond it they
// are dropped (their requests print with result unavailable).
const maxEarly = 4096

func (a *asyncState) init() {
	if a.reqs == nil {
		a.reqs = map[uint64]*asyncReq{}
		a.files = map[pidFd]reqFile{}
		a.segReq = map[uint64]uint64{}
		a.dirtiedBy = map[uint64]uint64{}
		a.byIocb = map[iocbKey][]uint64{}
		a.early = map[iocbKey][]*bpf.IopathAioEvent{}
		a.earlyT = map[iocbKey]uint64{}
		a.inflight = map[uint32]uint32{}
		a.calls = map[uint64]*asyncCall{}
		a.reaps = map[uint32]*reapCall{}
		a.uringDone = map[uint32][]cqePosted{}
	}
}

func (e *Engine) asyncReq(id uint64) *asyncReq {
	e.async.init()
	r := e.async.reqs[id]
	if r == nil {
		r = &asyncReq{}
		e.async.reqs[id] = r
	}
	return r
}

// rqIssued and rqCompleted keep the per-device in-flight count (requests.go).
func (e *Engine) rqIssued(kdev uint32) uint32 {
	e.async.init()
	e.async.inflight[kdev]++
	return e.async.inflight[kdev]
}

func (e *Engine) rqCompleted(kdev uint32) {
	if n := e.async.inflight[kdev]; n > 0 {
		e.async.inflight[kdev] = n - 1
	}
}

// isRequestSys says whether a call record is an asynchronous request's.
func isRequestSys(name string) bool {
	switch name {
	case "libaio_read", "libaio_write", "io_uring_read", "io_uring_write":
		return true
	}
	return false
}

// noteRequestFile remembers the file of a request's EV_OP by (pid, fd),
// and which request the EV_OP is part of.
func (e *Engine) noteRequestFile(rec *record.Syscall, o *bpf.IopathOp) {
	e.async.init()
	if o.ReqId == 0 && (o.Sys == uint32(bpf.IopathOpSysSYS_URING_READ) || o.Sys == uint32(bpf.IopathOpSysSYS_URING_WRITE)) {
		e.async.segReq[o.OpId] = 0 // an io-wq worker's IO no event named (bpf/uring.c)
	}
	if o.ReqId != 0 && o.ReqId != o.OpId {
		e.async.segReq[o.OpId] = o.ReqId
		if o.DirtiedPages > 0 {
			if len(e.async.dirtiedBy) >= defPending {
				clear(e.async.dirtiedBy) // older ones keep their part's op_id
			}
			e.async.dirtiedBy[o.OpId] = o.ReqId
		}
	}
	if rec.Ino == 0 {
		return
	}
	if len(e.async.files) >= maxEarly {
		clear(e.async.files)
	}
	e.async.files[pidFd{rec.Pid, rec.Fd}] = reqFile{path: rec.Path, dev: rec.Dev, fs: rec.FS, ino: rec.Ino, kdev: o.Dev, direct: rec.Direct}
}

// requestOf is the op_id persisted records give the pages an op dirtied:
// its request's for part of an io_uring request, else its own.
func (e *Engine) requestOf(opID uint64) uint64 {
	if id, ok := e.async.dirtiedBy[opID]; ok {
		return id
	}
	return opID
}

// requestPart takes a request's EV_OP record, complete with its bios (from emit).
func (e *Engine) requestPart(rec *record.Syscall, kdev uint32, bios []*bioRef, readBytes uint64) {
	id := rec.OpID
	if req, ok := e.async.segReq[id]; ok {
		delete(e.async.segReq, id)
		id = req
	}
	if id == 0 { // no request: its bios are unattributed, by cause
		for _, b := range bios {
			e.unattributedAs(rec.Pid, b.Bytes, "io_uring_worker")
		}
		e.pid(rec.Pid, "").DiskBytesRead += readBytes // an io thread's name is not the process's
		return
	}
	r := e.asyncReq(id)
	r.got++
	if r.inflight == 0 && len(bios) > 0 { // the first bio issued (emit sorted them)
		r.inflight = bios[0].inflight
	}
	r.readB += readBytes
	if r.seg == nil || r.seg.Ino == 0 {
		if r.seg != nil {
			mergeSeg(rec, r.seg)
		}
		r.seg, r.kdev = rec, kdev
	} else {
		mergeSeg(r.seg, rec)
	}
	e.tryRequest(id, r)
}

// mergeSeg adds the part of an io_uring request another thread ran (src)
// to dst: an inline attempt and its io-wq retry ask for the same pages, so
// the pages requested are the larger count and the misses add up.
func mergeSeg(dst, src *record.Syscall) {
	dst.Bios = append(dst.Bios, src.Bios...)
	c, s := &dst.Cache, &src.Cache
	c.PagesRequested = max(c.PagesRequested, s.PagesRequested)
	c.PagesMissed = min(c.PagesMissed+s.PagesMissed, c.PagesRequested)
	c.PagesHit = c.PagesRequested - c.PagesMissed
	c.PagesAdded += s.PagesAdded
	c.AddedRanges = append(c.AddedRanges, s.AddedRanges...)
	c.Readahead = append(c.Readahead, s.Readahead...)
	c.Lookups += s.Lookups
	dst.DirtiedPages += src.DirtiedPages
	dst.DirtiedRanges = append(dst.DirtiedRanges, src.DirtiedRanges...)
	dst.BlockedNs += src.BlockedNs
	dst.Direct = dst.Direct || src.Direct
	if dst.Direct {
		noCacheHits(&dst.Cache)
	}
	if src.Tid != dst.Tid {
		dst.Tid = src.Tid // the worker's
	}
	if end := src.TimeNs + src.DurationNs; end > dst.TimeNs+dst.DurationNs {
		dst.DurationNs = end - dst.TimeNs
	}
}

// noCacheHits clears the page-cache lookup of an O_DIRECT request: as for
// a direct call (pageCache), nothing is requested from the cache, so
// nothing hits or misses there. A part of the request that looked
// buffered is one whose file was not known when it was sent (an io-wq
// worker's part closed after the request's completion dropped its entry
// in bpf/uring.c): its offset and length, not a cache lookup.
func noCacheHits(c *record.Cache) {
	c.PagesRequested, c.PagesHit, c.PagesMissed = 0, 0, 0
}

// aioOps names the iocb opcodes (IOCB_CMD_*, include/uapi/linux/aio_abi.h).
var aioOps = map[uint32]string{0: "read", 1: "write", 2: "fsync", 3: "fdatasync", 5: "poll", 6: "noop", 7: "readv", 8: "writev"}

// iocbOpID is the op_id of iocb k of the io_submit call callID: the call's
// sequence + 1 + k, in the 32-bit sequence half of tid<<32 | seq, which
// wraps inside it as the kernel's does (bpf/aio.c; a thread's sequence
// starts anywhere in 32 bits, bpf/op.h op_slot).
func iocbOpID(callID, k uint64) uint64 {
	return callID&^0xffffffff | uint64(uint32(callID)+1+uint32(k))
}

// HandleAioSubmit takes an EV_AIO_SUBMIT record.
func (e *Engine) HandleAioSubmit(ev *bpf.IopathAioSubmitEv) {
	e.seen(ev.EndNs)
	e.async.init()
	call := e.aioCallRecord(ev) // asynccalls.go
	n := min(int(ev.N), len(ev.Iocb))
	for j := 0; j < n; j++ {
		cb := &ev.Iocb[j]
		k := uint64(ev.First) + uint64(j)
		id := iocbOpID(ev.OpId, k)
		submitted := ev.Ret > 0 && k < uint64(ev.Ret)
		if !submitted {
			if r := e.async.reqs[id]; r == nil && e.ops[id] == nil {
				continue // refused by io_submit, never processed: not a request
			}
		}
		op := aioOps[cb.Opcode]
		if op == "" {
			op = fmt.Sprintf("opcode_%d", cb.Opcode)
		}
		r := e.asyncReq(id)
		call.pending++
		r.subEnd = ev.EndNs
		r.req = &record.Request{
			Type: record.TypeRequest, Engine: record.EngineLibaio, Op: op, OpID: id, SubmitOpID: ev.OpId,
			UserData: cb.UserData, Pid: ev.Pid, Tid: ev.Tid, Comm: e.comm(cBytes(ev.Comm[:])), WorkerTid: ev.Tid,
			Worker: record.WorkerInline, Fd: int64(int32(cb.Fd)), Offset: cb.Offset, RequestedBytes: cb.Nbytes,
			SubmitNs: ev.StartNs,
		}
		if !submitted {
			r.reaped = true // nothing will reap it
			r.req.Unavailable = append(r.req.Unavailable, "result (io_submit stopped before this iocb)")
		} else {
			key := iocbKey{pid: ev.Pid, ctx: ev.Ctx, cb: cb.Iocb}
			if reaps := e.async.early[key]; len(reaps) > 0 {
				e.reapInto(r, reaps[0], e.async.earlyT[key])
				if e.async.early[key] = reaps[1:]; len(reaps) == 1 {
					delete(e.async.early, key)
					delete(e.async.earlyT, key)
				}
			} else {
				e.async.byIocb[key] = append(e.async.byIocb[key], id)
			}
		}
		e.tryRequest(id, r)
	}
	e.aioCallSeen(ev.OpId, call, n)
}

// HandleAioReap takes an EV_AIO_REAP record.
func (e *Engine) HandleAioReap(ev *bpf.IopathAioReapEv) {
	e.seen(ev.Ts)
	e.async.init()
	n := min(int(ev.N), len(ev.Ev))
	var reaped []uint64 // for the call's record, with AllCalls only (asynccalls.go); 0: not matched
	if e.AllCalls {
		reaped = make([]uint64, n)
	}
	for j := 0; j < n; j++ {
		io := &ev.Ev[j]
		key := iocbKey{pid: ev.Pid, ctx: ev.Ctx, cb: io.Iocb}
		ids := e.async.byIocb[key]
		if len(ids) == 0 {
			if len(e.async.early) < maxEarly {
				c := *io
				e.async.early[key] = append(e.async.early[key], &c)
				e.async.earlyT[key] = ev.Ts
			}
			continue
		}
		// The oldest with this user data; else the oldest.
		at := 0
		for i, id := range ids {
			if r := e.async.reqs[id]; r != nil && r.req != nil && r.req.UserData == io.UserData {
				at = i
				break
			}
		}
		id := ids[at]
		if reaped != nil {
			reaped[j] = id
		}
		if ids = slices.Delete(ids, at, at+1); len(ids) == 0 {
			delete(e.async.byIocb, key)
		} else {
			e.async.byIocb[key] = ids
		}
		if r := e.async.reqs[id]; r != nil {
			e.reapInto(r, io, ev.Ts)
			e.requestDone(id, ev.Ts, r) // directunseen.go: may print r
			if e.async.reqs[id] == r {
				e.tryRequest(id, r)
			}
		}
	}
	if e.AllCalls {
		e.reapCallRecord(ev, reaped)
	}
}

func (e *Engine) reapInto(r *asyncReq, io *bpf.IopathAioEvent, ts uint64) {
	r.reaped = true
	r.req.ReapNs = ts
	r.req.Result = record.Result{Bytes: io.Res, Known: true}
	if io.Res < 0 {
		r.req.Result = record.Result{Error: errnoName(-io.Res), Known: true}
	}
}

// kernelErrnos names the kernel-internal codes (include/linux/errno.h)
// that a traced call can end with but user space never sees: the kernel
// restarts the call or the thread dies first (a thread killed by another
// thread's execve: ERESTARTNOINTR).
var kernelErrnos = map[int64]string{512: "ERESTARTSYS", 513: "ERESTARTNOINTR", 514: "ERESTARTNOHAND",
	515: "ENOIOCTLCMD", 516: "ERESTART_RESTARTBLOCK"}

func errnoName(n int64) string {
	if s := unix.ErrnoName(unix.Errno(n)); s != "" {
		return s
	}
	if s, ok := kernelErrnos[n]; ok {
		return s
	}
	return fmt.Sprintf("errno %d", n)
}

// tryRequest prints a request once its submit record, its EV_OP's record
// (if it has one: it is still in e.ops while its bios are in flight) and
// its reap are in.
func (e *Engine) tryRequest(id uint64, r *asyncReq) {
	if r.req == nil || !r.reaped || e.ops[id] != nil || r.got < r.want || e.callHolds(id, r) {
		return
	}
	e.releaseRequest(id, r)
}

func (e *Engine) releaseRequest(id uint64, r *asyncReq) {
	delete(e.async.reqs, id)
	q := r.req
	if q == nil { // the submit record was lost: what the EV_OP says
		e.async.Lost++
		s := r.seg
		q = &record.Request{Type: record.TypeRequest, Engine: record.EngineLibaio, OpID: id, Pid: s.Pid, Tid: s.Tid, Comm: s.Comm,
			WorkerTid: s.Tid, Worker: record.WorkerInline, Fd: s.Fd, Offset: int64(s.Offset), RequestedBytes: s.RequestedBytes,
			SubmitNs: s.TimeNs, Op: "read", Unavailable: []string{"submit_op_id", "user_data", "reap_ns", "result"}}
		if record.IsWrite(s.Syscall) {
			q.Op = "write"
		}
		if r.uring {
			q.Engine = record.EngineIOUring
		}
	} else if !r.reaped {
		q.Unavailable = append(q.Unavailable, "result")
		if !r.uring {
			q.Unavailable = append(q.Unavailable, "reap_ns")
		}
	}
	if r.uring {
		// The application takes its CQE from the ring in its own memory:
		// no system call or event says when.
		q.Unavailable = append(q.Unavailable, "reap_ns")
		if !r.reaped {
			q.Unavailable = append(q.Unavailable, "complete_ns")
		}
	}
	if s := r.seg; s != nil {
		if s.Ino == 0 { // no part knew its file: the fd's last request's
			if f, ok := e.async.files[pidFd{q.Pid, q.Fd}]; ok {
				s.Path, s.Dev, s.Ino, s.FS, s.Direct, r.kdev = f.path, f.dev, f.ino, f.fs, f.direct, f.kdev
			}
		}
		if s.Direct {
			noCacheHits(&s.Cache)
		}
		q.Path, q.Dev, q.Ino, q.FS, q.Direct = s.Path, s.Dev, s.Ino, s.FS, s.Direct
		q.Cache, q.Bios, q.DirtiedPages, q.BlockedNs = s.Cache, s.Bios, s.DirtiedPages, s.BlockedNs
		if slices.Contains(s.Unavailable, unavailableUnseen) { // flushunseen.go unseenTimes
			q.Unavailable = append(q.Unavailable, unavailableUnseen)
		}
		q.InflightAtIssue = r.inflight
		if s.Tid != q.Tid {
			q.WorkerTid = s.Tid
		}
		switch {
		case r.uring: // its CQE's time (HandleUringComplete)
		case s.Direct: // its last bio's end; unavailable if one ended unseen (directunseen.go)
			for _, b := range s.Bios {
				q.CompleteNs = max(q.CompleteNs, b.CompleteNs)
			}
			for _, b := range s.Bios {
				if b.CompleteNs == 0 {
					q.CompleteNs = 0
				}
			}
		default:
			q.CompleteNs = s.TimeNs + s.DurationNs // completed by io_submit itself
		}
		requestedByResult(q)
	} else {
		e.requestWithoutOp(q, r)
	}
	if q.CompleteNs == 0 && !slices.Contains(q.Unavailable, "complete_ns") {
		q.Unavailable = append(q.Unavailable, "complete_ns")
	}
	e.accountRequest(q, r)
	c := e.callBefore(q) // asynccalls.go
	e.Out(q)
	e.callAfter(q, c)
}

// requestedByResult makes a request's pages_requested the pages spanned by
// the bytes it returned, as a call's (pagecache.go): its EV_OP was sent
// before the result was known and counted the bytes asked for (bpf/aio.c,
// bpf/uring.c). A read past EOF (0 bytes) or an error requests none; an
// unknown result keeps the bytes asked for.
func requestedByResult(q *record.Request) {
	c := &q.Cache
	if !q.Result.Known || c.PagesRequested == 0 {
		return
	}
	c.PagesRequested = 0
	if q.Result.Error == "" && q.Result.Bytes > 0 {
		first, last := uint64(q.Offset)>>12, (uint64(q.Offset)+uint64(q.Result.Bytes)-1)>>12
		c.PagesRequested = last - first + 1
	}
	c.PagesMissed = min(c.PagesMissed, c.PagesRequested)
	c.PagesHit = c.PagesRequested - c.PagesMissed
}

// requestWithoutOp completes a request that has no EV_OP: io_submit
// processed it without any marker naming it (bpf/aio.c). A buffered libaio
// read with no marker had no readahead and no page inserted: a cache hit,
// as an untouched call is. A direct one's bios went to the request before
// it. An io_uring request always has a part where iopath follows it
// (bpf/uring.c): without one (a registered file, lost events) its cache
// is not known, never a hit.
func (e *Engine) requestWithoutOp(q *record.Request, r *asyncReq) {
	q.Bios = []record.Bio{}
	q.Cache.Readahead = []record.Readahead{}
	f, ok := e.async.files[pidFd{q.Pid, q.Fd}]
	if !ok {
		q.Unavailable = append(q.Unavailable, "path", "dev", "ino", "cache", "bios")
		return
	}
	q.Path, q.Dev, q.Ino, q.FS, q.Direct, r.kdev = f.path, f.dev, f.ino, f.fs, f.direct, f.kdev
	if q.Direct || record.RequestClass(q.Op) != record.ClassRead || r.uring {
		q.Unavailable = append(q.Unavailable, "cache", "bios")
		return
	}
	if q.Result.Known && q.Result.Error == "" && q.Result.Bytes > 0 {
		first, last := uint64(q.Offset)>>12, (uint64(q.Offset)+uint64(q.Result.Bytes)-1)>>12
		q.Cache.PagesRequested = last - first + 1
		q.Cache.PagesHit = q.Cache.PagesRequested
	}
}

// accountRequest adds a request to its process's and file's totals: counted
// as a request (not a call), its bytes, cache and disk bytes like a call's.
func (e *Engine) accountRequest(q *record.Request, r *asyncReq) {
	var writeBytes uint64
	for _, b := range q.Bios {
		if b.Rwbs != "" && b.Rwbs[0] != 'R' {
			writeBytes += uint64(b.Bytes)
		}
	}
	class := record.RequestClass(q.Op)
	add := func(t *record.Totals) {
		t.Requests++
		t.BytesRequested += q.RequestedBytes
		if q.Result.Known && q.Result.Error == "" && q.Result.Bytes > 0 {
			t.BytesReturned += uint64(q.Result.Bytes)
		}
		switch class {
		case record.ClassRead:
			t.ReadRequests++
			t.ReadBytesReq += q.RequestedBytes
			t.PagesHit += q.Cache.PagesHit
			t.PagesMissed += q.Cache.PagesMissed
			t.PagesAdded += q.Cache.PagesAdded
			t.PagesPrefetched += q.Cache.PagesAdded - min(q.Cache.PagesMissed, q.Cache.PagesAdded)
		case record.ClassWrite:
			t.WriteRequests++
		}
		t.DiskBytesRead += r.readB
		t.DiskBytesWrite += writeBytes
		t.DirtiedPages += uint64(q.DirtiedPages)
		t.BlockedNs += q.BlockedNs
	}
	add(&e.pid(q.Pid, q.Comm).Totals)
	if q.Ino != 0 {
		add(&e.file(fkey(r.kdev, q.Ino)).Totals)
	}
}

// asyncTick releases requests submitted more than HoldNs ago whose reap (or
// submit record) never came.
func (e *Engine) asyncTick() {
	for id, r := range e.async.reqs {
		if e.ops[id] != nil {
			continue
		}
		switch {
		case r.req != nil && e.lastTs > r.subEnd+e.HoldNs:
			e.releaseRequest(id, r)
		case r.req == nil && r.seg != nil && e.lastTs > r.seg.TimeNs+r.seg.DurationNs+e.HoldNs:
			e.releaseRequest(id, r)
		}
	}
	e.callsTick(false)
}

// asyncFlush releases every request (end of trace), in op order.
func (e *Engine) asyncFlush() {
	ids := make([]uint64, 0, len(e.async.reqs))
	for id, r := range e.async.reqs {
		if r.req != nil || r.seg != nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.releaseRequest(id, e.async.reqs[id])
	}
	e.callsTick(true)
	clear(e.async.byIocb)
	clear(e.async.early)
	clear(e.async.earlyT)
}

// uringOps names the io_uring opcodes of requests (IORING_OP_*,
// include/uapi/linux/io_uring.h); others are named by number.
var uringOps = map[uint32]string{0: "nop", 1: "readv", 2: "writev", 3: "fsync", 4: "read_fixed", 5: "write_fixed",
	8: "sync_file_range", 17: "fallocate", 22: "read", 23: "write"}

// HandleUringSubmit takes an EV_URING_SUBMIT record.
func (e *Engine) HandleUringSubmit(ev *bpf.IopathUringSubmitEv) {
	e.seen(ev.Ts)
	op := uringOps[ev.Opcode]
	if op == "" {
		op = fmt.Sprintf("opcode_%d", ev.Opcode)
	}
	r := e.asyncReq(ev.OpId)
	r.uring, r.subEnd = true, ev.Ts
	worker := record.WorkerInline
	if ev.SqThread != 0 {
		worker = record.WorkerSQPoll
	}
	if r.punted {
		worker = record.WorkerIOWQ
	}
	// With SQPOLL, ev.Tid is the iou-sqp thread: the request is charged to
	// the ring's owner, the thread that set it up (bpf/uring.c), under the
	// process's name; ev.Tid is the worker.
	r.req = &record.Request{
		Type: record.TypeRequest, Engine: record.EngineIOUring, Op: op, OpID: ev.OpId, SubmitOpID: ev.SubmitOpId,
		UserData: ev.UserData, Pid: ev.Pid, Tid: ev.OwnerTid, Comm: e.comm(cBytes(ev.Comm[:])), WorkerTid: ev.Tid, Worker: worker,
		Fd: int64(ev.Fd), Offset: ev.Offset, RequestedBytes: ev.Len, SubmitNs: ev.Ts,
	}
	if ev.SqThread != 0 {
		r.req.SubmitOpID = 0
		if ev.OwnerTid == 0 {
			r.req.Unavailable = append(r.req.Unavailable, "tid")
		}
	}
	e.callRequest(r.req.SubmitOpID, ev.Ts)
	e.tryRequest(ev.OpId, r)
}

// HandleUringPunt takes an EV_URING_PUNT record: the request went to io-wq.
func (e *Engine) HandleUringPunt(ev *bpf.IopathUringPuntEv) {
	e.seen(ev.Ts)
	r := e.asyncReq(ev.OpId)
	r.punted = true
	if r.req != nil {
		r.req.Worker = record.WorkerIOWQ
	}
}

// HandleUringComplete takes an EV_URING_COMPLETE record: the request's CQE
// was posted, after ev.Segs EV_OPs named it.
func (e *Engine) HandleUringComplete(ev *bpf.IopathUringCompleteEv) {
	e.seen(ev.Ts)
	e.uringCompleted(ev.Tid, ev.Pid, ev.Ts)
	r := e.asyncReq(ev.OpId)
	r.uring, r.reaped, r.want = true, true, ev.Segs
	if r.req == nil { // its submit record was lost: released by Tick/Flush
		return
	}
	r.req.CompleteNs = ev.Ts
	r.req.Result = record.Result{Bytes: ev.Res, Known: true}
	if ev.Res < 0 {
		r.req.Result = record.Result{Error: errnoName(-ev.Res), Known: true}
	}
	e.requestDone(ev.OpId, ev.Ts, r) // directunseen.go: may print r
	if e.async.reqs[ev.OpId] == r {
		e.tryRequest(ev.OpId, r)
	}
}
