package workloads

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring (Linux 5.1+; the IORING_OP_READ/WRITE opcodes used here
// are from 5.6): one ring without IOPOLL (SQPOLL on request), read and
// write requests only, driven by io_uring_enter(2). The layouts below are those of
// include/uapi/linux/io_uring.h, which the kernel keeps stable.

// mmap offsets of the ring's three areas.
const (
	uringOffSQRing = 0
	uringOffCQRing = 0x8000000
	uringOffSQEs   = 0x10000000
)

// Bits of uringParams.features.
const (
	uringFeatSingleMmap = 1 << 0 // 5.4: SQ and CQ rings share one mapping
	uringFeatRWCurPos   = 1 << 3 // 5.6, the release that added IORING_OP_READ and IORING_OP_WRITE
	// 5.11: an SQPOLL ring takes files that were not registered; before it
	// the SQPOLL thread refuses them, so the engine registers its file there
	// (IOSQE_FIXED_FILE). Also where IORING_ENTER_SQ_WAIT is known to exist
	// (it came in 5.10, with no feature bit of its own). Debian's 5.10.223
	// has it (features 0x7ff: io_uring backported to the stable series).
	uringFeatSQPollNonfixed = 1 << 7
)

const (
	uringSetupSQPoll    = 1 << 1 // IORING_SETUP_SQPOLL: a kernel thread polls the SQ
	uringSQEFixedFile   = 1 << 0 // IOSQE_FIXED_FILE: sqe->fd is an index into the registered files
	uringSQELink        = 1 << 2 // IOSQE_IO_LINK: the next SQE starts after this one completed
	uringSQEAsync       = 1 << 4 // IOSQE_ASYNC: punt the request to io-wq
	uringEnterSQWakeup  = 1 << 1 // io_uring_enter: wake the SQPOLL thread
	uringEnterGetEvents = 1 << 0 // io_uring_enter: wait for min_complete completions
	uringEnterSQWait    = 1 << 2 // io_uring_enter: wait until the SQ ring has a free entry (SQPOLL)
	uringSQNeedWakeup   = 1 << 0 // SQ ring flags: the SQPOLL thread went idle and must be woken
	uringRegisterFiles  = 2      // io_uring_register: IORING_REGISTER_FILES
	uringOpRead         = 22     // IORING_OP_READ: like pread(2)
	uringOpWrite        = 23     // IORING_OP_WRITE: like pwrite(2)
)

// uringSQOffsets is struct io_sqring_offsets: byte offsets of the SQ ring's
// fields in its mapping.
type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// uringCQOffsets is struct io_cqring_offsets.
type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringParams is struct io_uring_params (120 bytes).
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

// uringSQE is struct io_uring_sqe (64 bytes), with the fields a read or write uses.
type uringSQE struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32
	off           uint64
	addr          uint64
	len           uint32
	rwFlags       uint32
	userData      uint64
	bufIndex      uint16
	personality   uint16
	spliceFdIn    int32
	addr3, pad    uint64
}

// uringCQE is struct io_uring_cqe (16 bytes): res is bytes done or -errno.
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// ring is an io_uring instance and its mapped submission and completion
// queues. Only one thread may use a ring at a time.
type ring struct {
	fd                int
	sqMem, cqMem, sqe []byte // mappings; cqMem is sqMem with IORING_FEAT_SINGLE_MMAP
	sqHead, sqTail    *uint32
	sqMask, entries   uint32
	sqes              []uringSQE
	cqHead, cqTail    *uint32
	cqMask            uint32
	cqes              []uringCQE
	sqFlags           *uint32 // IORING_SQ_NEED_WAKEUP
	tail              uint32  // our SQ tail: SQEs filled in, published to the kernel by submit
	features          uint32
	sqpoll            bool  // IORING_SETUP_SQPOLL: the kernel's thread moves the SQ head
	sqWaits           int64 // io_uring_enter calls of waitSQ
}

// newRing sets up a ring with at least entries submission entries (the
// kernel rounds up to a power of two) and maps its queues. A kernel that
// refuses io_uring gives a *uringRefused error.
func newRing(entries, flags uint32) (*ring, error) {
	p := uringParams{flags: flags}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, refusedError(e)
	}
	r := &ring{fd: int(fd), features: p.features}
	if err := r.mapQueues(&p); err != nil {
		r.close()
		return nil, err
	}
	if p.features&uringFeatRWCurPos == 0 {
		r.close()
		return nil, fmt.Errorf("this kernel's io_uring has no IORING_OP_READ/WRITE (they came with Linux 5.6, together with IORING_FEAT_RW_CUR_POS, which it lacks): use --engine libaio")
	}
	r.sqpoll = flags&uringSetupSQPoll != 0
	return r, nil
}

// mapQueues maps the SQ ring, the CQ ring and the SQE array.
func (r *ring) mapQueues(p *uringParams) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	single := p.features&uringFeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	mmap := func(off int64, size int) ([]byte, error) {
		b, err := unix.Mmap(r.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return nil, fmt.Errorf("mapping the io_uring queues: %w", errnoOf(err))
		}
		return b, nil
	}
	var err error
	if r.sqMem, err = mmap(uringOffSQRing, sqSize); err != nil {
		return err
	}
	r.cqMem = r.sqMem
	if !single {
		if r.cqMem, err = mmap(uringOffCQRing, cqSize); err != nil {
			return err
		}
	}
	if r.sqe, err = mmap(uringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{}))); err != nil {
		return err
	}
	u32 := func(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	r.sqHead, r.sqTail = u32(r.sqMem, p.sqOff.head), u32(r.sqMem, p.sqOff.tail)
	r.sqMask, r.entries = *u32(r.sqMem, p.sqOff.ringMask), p.sqEntries
	r.sqFlags = u32(r.sqMem, p.sqOff.flags)
	r.cqHead, r.cqTail = u32(r.cqMem, p.cqOff.head), u32(r.cqMem, p.cqOff.tail)
	r.cqMask = *u32(r.cqMem, p.cqOff.ringMask)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqe[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&r.cqMem[p.cqOff.cqes])), p.cqEntries)
	// The SQ array maps ring positions to SQE indexes: identity, set once.
	array := unsafe.Slice(u32(r.sqMem, p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.tail = atomic.LoadUint32(r.sqTail)
	return nil
}

// next returns the SQE at our tail, zeroed, and advances the tail. With
// SQPOLL a full SQ ring is waited out (waitSQ); without it the ring is only
// full if the caller queued more requests than it has entries, an error.
func (r *ring) next() (*uringSQE, error) {
	if r.full() {
		if !r.sqpoll {
			return nil, fmt.Errorf("io_uring SQ ring full (%d entries, none consumed): more requests queued than the ring holds", r.entries)
		}
		if err := r.waitSQ(); err != nil {
			return nil, err
		}
	}
	e := &r.sqes[r.tail&r.sqMask]
	*e = uringSQE{}
	r.tail++
	return e, nil
}

func (r *ring) full() bool { return r.tail-atomic.LoadUint32(r.sqHead) >= r.entries }

// sqWaitLimit bounds waitSQ: an SQPOLL thread that takes no entry for this
// long is not coming back.
const sqWaitLimit = 10 * time.Second

// waitSQ waits until the SQPOLL thread took an entry of the full SQ ring.
// The thread advances the SQ head only after it submitted its batch, so the
// completions of that batch can be reaped (and their slots offered again)
// while the ring still looks full (seen on Debian 5.10 under TCG). Where
// the kernel has IORING_FEAT_SQPOLL_NONFIXED (5.11, so IORING_ENTER_SQ_WAIT
// of 5.10 too) io_uring_enter(SQ_WAIT) sleeps until an entry is free;
// otherwise the thread is woken if it went idle (IORING_SQ_NEED_WAKEUP) and
// the head read again.
func (r *ring) waitSQ() error {
	atomic.StoreUint32(r.sqTail, r.tail) // everything queued is the thread's to take
	deadline := time.Now().Add(sqWaitLimit)
	for r.full() {
		if time.Now().After(deadline) {
			return fmt.Errorf("io_uring SQ ring full for %v: the SQPOLL thread took none of its %d entries", sqWaitLimit, r.entries)
		}
		var flags uint32
		if atomic.LoadUint32(r.sqFlags)&uringSQNeedWakeup != 0 {
			flags |= uringEnterSQWakeup // an idle thread would never free an entry
		}
		if r.features&uringFeatSQPollNonfixed != 0 {
			flags |= uringEnterSQWait
		}
		if flags != 0 {
			r.sqWaits++
			if _, err := r.enter(0, 0, flags, false); err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("waiting for a free io_uring SQ entry: %w", err)
			}
		}
		if flags&uringEnterSQWait == 0 {
			time.Sleep(50 * time.Microsecond) // the thread runs (or was woken): read the head again soon
		}
	}
	return nil
}

// enter publishes the filled SQEs (a store-release of the SQ tail: the
// kernel reads no SQE before it sees the tail that covers it) and calls
// io_uring_enter(2) to submit toSubmit of them and, with flags
// uringEnterGetEvents, to wait for minComplete completions. It returns the
// number of SQEs the kernel consumed.
func (r *ring) enter(toSubmit, minComplete, flags uint32, raw bool) (int, error) {
	atomic.StoreUint32(r.sqTail, r.tail)
	var n uintptr
	var e unix.Errno
	if raw {
		n, _, e = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), 0, 0)
	} else {
		n, _, e = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), 0, 0)
	}
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// reap moves up to len(out) completions from the CQ ring into out. The load
// of the CQ tail acquires the kernel's CQE writes; the store of the head
// releases the slots for reuse.
func (r *ring) reap(out []completion) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail && n < len(out); head++ {
		c := &r.cqes[head&r.cqMask]
		out[n] = completion{slot: uint32(c.userData), res: int64(c.res)}
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// registerFiles registers fds with the ring (IORING_REGISTER_FILES, 5.1+):
// SQEs with IOSQE_FIXED_FILE then name them by their index in fds. why is
// what needs it, for the error's line.
func (r *ring) registerFiles(fds []int32, why string) error {
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegisterFiles, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), 0, 0)
	if e != 0 {
		return fmt.Errorf("registering the file with the io_uring (IORING_REGISTER_FILES, %s): %w", why, e)
	}
	return nil
}

// close unmaps the queues and closes the ring; the kernel cancels or waits
// for requests still in flight.
func (r *ring) close() error {
	if r.sqe != nil {
		unix.Munmap(r.sqe)
	}
	if r.cqMem != nil && (r.sqMem == nil || &r.cqMem[0] != &r.sqMem[0]) {
		unix.Munmap(r.cqMem)
	}
	if r.sqMem != nil {
		unix.Munmap(r.sqMem)
	}
	r.sqe, r.cqMem, r.sqMem = nil, nil, nil
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}
