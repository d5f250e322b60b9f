package workloads

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uringEngine issues each request as an IORING_OP_READ or IORING_OP_WRITE
// SQE on its own ring. submit is io_uring_enter(to_submit=n); wait takes
// what is already in the CQ ring and only calls io_uring_enter(GETEVENTS)
// when that is not enough, like fio's io_uring engine.
type uringEngine struct {
	syncCounter
	r       *ring
	write   bool
	buf     []byte // depth slots of stride bytes
	stride  int64
	bs      int64
	raw     bool
	submits int64 // io_uring_enter calls that submitted
	waits   int64 // io_uring_enter calls that waited
	bytes   int64 // bytes submitted
	opts    uringOpts
	fixed   bool  // the file is registered (--fixed-files, or SQPOLL before 5.11): SQEs name index 0
	prepErr error // an SQE prep could not get (the SQ ring stayed full): submit returns it
}

// uringOpts are the ring's and its requests' options (--uring-async, --sqpoll).
type uringOpts struct {
	async  bool // IOSQE_ASYNC on every SQE
	sqpoll bool // IORING_SETUP_SQPOLL
	// fixed registers the file and names it by index 0 (--fixed-files;
	// tests: the SQPOLL path of kernels before 5.11).
	fixed bool
	link  int // > 0: chains of this many SQEs per submit call (IOSQE_IO_LINK)
}

func newUringEngine(depth, fd int, write bool, buf []byte, stride, bs int64, opts uringOpts) (*uringEngine, error) {
	var flags uint32
	if opts.sqpoll {
		flags = uringSetupSQPoll
	}
	r, err := newRing(uint32(depth), flags)
	if err != nil {
		return nil, err
	}
	e := &uringEngine{syncCounter: syncCounter{fd: fd}, r: r, write: write, buf: buf, stride: stride, bs: bs, opts: opts}
	switch {
	case opts.fixed:
		err = r.registerFiles([]int32{int32(fd)}, "--fixed-files; drop it")
	case opts.sqpoll && r.features&uringFeatSQPollNonfixed == 0:
		// Before 5.11 the SQPOLL thread takes registered files only.
		err = r.registerFiles([]int32{int32(fd)}, "needed for --sqpoll on kernels without IORING_FEAT_SQPOLL_NONFIXED, before 5.11")
	}
	if err != nil {
		r.close()
		return nil, err
	}
	e.fixed = opts.fixed || (opts.sqpoll && r.features&uringFeatSQPollNonfixed == 0)
	return e, nil
}

// prep fills the next SQE. The loop has at most depth ≤ entries requests
// out, but with SQPOLL the ring can still look full for a moment (waitSQ);
// an SQE it cannot get is kept as an error for submit.
func (e *uringEngine) prep(slot int, off int64) {
	if e.prepErr != nil {
		return
	}
	q, err := e.r.next()
	if err != nil {
		e.prepErr = err
		return
	}
	q.opcode = uringOpRead
	if e.write {
		q.opcode = uringOpWrite
	}
	q.fd = int32(e.fd)
	if e.fixed {
		q.fd, q.flags = 0, uringSQEFixedFile // registered file 0
	}
	q.off = uint64(off)
	q.addr = uint64(uintptr(unsafe.Pointer(&e.buf[int64(slot)*e.stride])))
	q.len = uint32(e.bs)
	q.userData = uint64(slot)
	if e.opts.async {
		q.flags |= uringSQEAsync
	}
}

func (e *uringEngine) submit(n int) (int, error) {
	if e.prepErr != nil {
		return 0, e.prepErr
	}
	if e.opts.link > 0 {
		e.linkChains(n)
	}
	var flags uint32
	if e.opts.sqpoll {
		// The polling thread takes the SQEs: io_uring_enter only wakes it
		// if it went idle, and returns n.
		flags = uringEnterSQWakeup
	}
	for {
		k, err := e.r.enter(uint32(n), 0, flags, e.raw)
		e.submits++
		if errors.Is(err, unix.EINTR) {
			continue
		}
		e.bytes += int64(k) * e.bs
		return k, err
	}
}

// linkChains links the n SQEs this submit passes (the kernel takes them
// from its SQ head on) into chains of opts.link: IOSQE_IO_LINK on each but
// the last of a chain, and not on the last SQE, so that no chain continues
// past this call.
func (e *uringEngine) linkChains(n int) {
	head := atomic.LoadUint32(e.r.sqHead)
	for i := range n {
		q := &e.r.sqes[(head+uint32(i))&e.r.sqMask]
		if (i+1)%e.opts.link != 0 && i != n-1 {
			q.flags |= uringSQELink
		}
	}
}

func (e *uringEngine) wait(min int, out []completion) (int, error) {
	n := e.r.reap(out)
	for n < min {
		_, err := e.r.enter(0, uint32(min-n), uringEnterGetEvents, e.raw)
		e.waits++
		if err != nil && !errors.Is(err, unix.EINTR) {
			return n, err
		}
		n += e.r.reap(out[n:])
	}
	return n, nil
}

func (e *uringEngine) reset(raw bool) {
	e.raw, e.submits, e.waits, e.bytes, e.fsyncs, e.fdatasyncs = raw, 0, 0, 0, 0, 0
	e.r.sqWaits = 0
}

func (e *uringEngine) calls() []SyscallCount {
	c := []SyscallCount{
		{Name: "io_uring_enter (submit)", Calls: e.submits, Bytes: e.bytes},
		{Name: "io_uring_enter (wait)", Calls: e.waits},
	}
	if e.r.sqWaits > 0 { // SQPOLL: waits for a free SQ entry (ring.waitSQ)
		c = append(c, SyscallCount{Name: "io_uring_enter (sq wait)", Calls: e.r.sqWaits})
	}
	return append(c, e.counts()...)
}

func (e *uringEngine) close() error { return e.r.close() }
