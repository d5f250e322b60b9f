package tracer

import (
	"os"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ringWait waits for ring-buffer records in Go's network poller instead of
// in the ring reader's own epoll_wait(2). A goroutine blocked in a system
// call keeps Go's sysmon thread polling (every 20 µs for the first
// millisecond after it takes the goroutine's P back, then backing off up to
// 10 ms): measured with perf on the 4 KiB cold-read benchmark, ~15 % of
// iopath's CPU went to sysmon's wakeups. A goroutine parked in the poller
// lets sysmon sleep until there is work.
//
// The map's file descriptor is duplicated and registered with the poller
// (edge-triggered; the ring buffer's wakeups are wake-ups of its wait
// queue, so each one is an event). The ring reader is then given a
// deadline in the past, so that its own epoll_wait never blocks.
type ringWait struct {
	f  *os.File
	rc syscall.RawConn
}

// newRingWait returns nil if the poller cannot take the ring buffer's fd
// (Run then blocks in the reader, as before).
func newRingWait(m *ebpf.Map) *ringWait {
	fd, err := unix.FcntlInt(uintptr(m.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	f := os.NewFile(uintptr(fd), "ringbuf")
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		f.Close() // not pollable: os.File's deadlines need the poller
		return nil
	}
	return &ringWait{f: f, rc: rc}
}

// wait returns once ready reports true (records are available) or at
// deadline; it reports whether the deadline passed first.
func (w *ringWait) wait(deadline time.Time, ready func() bool) (timedOut bool) {
	if ready() {
		return false
	}
	if w.f.SetReadDeadline(deadline) != nil {
		return true
	}
	err := w.rc.Read(func(uintptr) bool { return ready() })
	return err != nil
}

func (w *ringWait) close() {
	if w != nil {
		w.f.Close()
	}
}
