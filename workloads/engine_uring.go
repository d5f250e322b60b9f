package workloads

import (
	"errors"
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
}

func newUringEngine(depth, fd int, write bool, buf []byte, stride, bs int64) (*uringEngine, error) {
	r, err := newRing(uint32(depth))
	if err != nil {
		return nil, err
	}
	return &uringEngine{syncCounter: syncCounter{fd: fd}, r: r, write: write, buf: buf, stride: stride, bs: bs}, nil
}

func (e *uringEngine) prep(slot int, off int64) {
	q := e.r.next() // never nil: the loop has at most depth ≤ entries requests out
	q.opcode = uringOpRead
	if e.write {
		q.opcode = uringOpWrite
	}
	q.fd = int32(e.fd)
	q.off = uint64(off)
	q.addr = uint64(uintptr(unsafe.Pointer(&e.buf[int64(slot)*e.stride])))
	q.len = uint32(e.bs)
	q.userData = uint64(slot)
}

func (e *uringEngine) submit(n int) (int, error) {
	for {
		k, err := e.r.enter(uint32(n), 0, 0, e.raw)
		e.submits++
		if errors.Is(err, unix.EINTR) {
			continue
		}
		e.bytes += int64(k) * e.bs
		return k, err
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
