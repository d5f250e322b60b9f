package workloads

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux native AIO (libaio's system calls, Linux 2.6+), as in
// include/uapi/linux/aio_abi.h.

// iocb commands.
const (
	iocbCmdPread  = 0
	iocbCmdPwrite = 1
)

// iocb is struct iocb (64 bytes), little-endian layout (aio_key before
// aio_rw_flags), as on amd64 and arm64.
type iocb struct {
	data      uint64 // returned in ioEvent.data: the slot
	key       uint32
	rwFlags   uint32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event (32 bytes): res is bytes done or -errno.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

// aioEngine issues requests with io_submit(2) and reaps them with
// io_getevents(2) on its own AIO context, like fio's libaio engine.
type aioEngine struct {
	syncCounter
	ctx     uintptr // aio_context_t
	iocbs   []iocb  // one per slot
	queue   []uintptr
	events  []ioEvent
	write   bool
	bs      int64
	raw     bool
	submits int64
	waits   int64
	bytes   int64 // bytes submitted
	reaped  int64 // bytes completed
}

func newAioEngine(depth, fd int, write bool, buf []byte, stride, bs int64) (*aioEngine, error) {
	e := &aioEngine{syncCounter: syncCounter{fd: fd}, iocbs: make([]iocb, depth), queue: make([]uintptr, 0, depth), events: make([]ioEvent, depth), write: write, bs: bs}
	_, _, errno := unix.Syscall(unix.SYS_IO_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&e.ctx)), 0)
	if errno != 0 {
		return nil, aioSetupError(errno, depth)
	}
	op := uint16(iocbCmdPread)
	if write {
		op = iocbCmdPwrite
	}
	for i := range e.iocbs {
		e.iocbs[i] = iocb{data: uint64(i), opcode: op, fildes: uint32(fd),
			buf: uint64(uintptr(unsafe.Pointer(&buf[int64(i)*stride]))), nbytes: uint64(bs)}
	}
	return e, nil
}

func (e *aioEngine) prep(slot int, off int64) {
	e.iocbs[slot].offset = off
	e.queue = append(e.queue, uintptr(unsafe.Pointer(&e.iocbs[slot])))
}

func (e *aioEngine) submit(n int) (int, error) {
	for {
		r, _, errno := e.syscall(unix.SYS_IO_SUBMIT, e.ctx, uintptr(n), uintptr(unsafe.Pointer(&e.queue[0])), 0)
		e.submits++
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		k := int(r)
		e.bytes += int64(k) * e.bs
		e.queue = e.queue[:copy(e.queue, e.queue[k:])]
		return k, nil
	}
}

func (e *aioEngine) wait(min int, out []completion) (int, error) {
	for {
		r, _, errno := e.syscall(unix.SYS_IO_GETEVENTS, e.ctx, uintptr(min), uintptr(len(out)), uintptr(unsafe.Pointer(&e.events[0])))
		e.waits++
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		for i, ev := range e.events[:r] {
			out[i] = completion{slot: uint32(ev.data), res: ev.res}
			if ev.res > 0 {
				e.reaped += ev.res
			}
		}
		return int(r), nil
	}
}

// syscall makes a 4-argument system call (the fifth, io_getevents' timeout, is NULL).
func (e *aioEngine) syscall(trap, a1, a2, a3, a4 uintptr) (uintptr, uintptr, unix.Errno) {
	if e.raw {
		return unix.RawSyscall6(trap, a1, a2, a3, a4, 0, 0)
	}
	return unix.Syscall6(trap, a1, a2, a3, a4, 0, 0)
}

func (e *aioEngine) reset(raw bool) {
	e.raw, e.submits, e.waits, e.bytes, e.reaped, e.fsyncs, e.fdatasyncs = raw, 0, 0, 0, 0, 0, 0
	e.queue = e.queue[:0]
}

func (e *aioEngine) calls() []SyscallCount {
	return append([]SyscallCount{
		{Name: "io_submit", Calls: e.submits, Bytes: e.bytes},
		{Name: "io_getevents", Calls: e.waits, Bytes: e.reaped},
	}, e.counts()...)
}

// close destroys the context; io_destroy(2) waits for requests in flight.
func (e *aioEngine) close() error {
	if e.ctx == 0 {
		return nil
	}
	_, _, errno := unix.Syscall(unix.SYS_IO_DESTROY, e.ctx, 0, 0)
	e.ctx = 0
	if errno != 0 {
		return errno
	}
	return nil
}
