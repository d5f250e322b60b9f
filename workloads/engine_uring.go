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
}

// uringOpts are the ring's and its requests' options (--uring-async, --sqpoll).
type uringOpts struct {
	async  bool // IOSQE_ASYNC on every SQE
	sqpoll bool // IORING_SETUP_SQPOLL
	fixed  bool // the file registered (IORING_REGISTER_FILES), SQEs name index 0 (IOSQE_FIXED_FILE)
	link   int  // > 0: chains of this many SQEs per submit call (IOSQE_IO_LINK)
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
	if opts.fixed {
		if err := r.registerFiles([]int32{int32(fd)}); err != nil {
			r.close()
			return nil, err
		}
	}
	return &uringEngine{syncCounter: syncCounter{fd: fd}, r: r, write: write, buf: buf, stride: stride, bs: bs, opts: opts}, nil
}

func (e *uringEngine) prep(slot int, off int64) {
	q := e.r.next() // never nil: the loop has at most depth ≤ entries requests out
	q.opcode = uringOpRead
	if e.write {
		q.opcode = uringOpWrite
	}
	q.fd = int32(e.fd)
	if e.opts.fixed {
		q.fd, q.flags = 0, uringSQEFixedFile // index 0 of the registered files
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
}

func (e *uringEngine) calls() []SyscallCount {
	return append([]SyscallCount{
		{Name: "io_uring_enter (submit)", Calls: e.submits, Bytes: e.bytes},
		{Name: "io_uring_enter (wait)", Calls: e.waits},
	}, e.counts()...)
}

func (e *uringEngine) close() error { return e.r.close() }
