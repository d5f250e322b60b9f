package tracer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/kernel"
)

// sysDevBlock is where sysfs names block devices by dev_t ("M:m").
const sysDevBlock = "/sys/dev/block"

// diskInflight reads disk kdev's own count of requests in flight (under
// root, sysfs's /sys/dev/block): M:m/inflight, reads plus writes started
// and not ended (from the request's start or its dispatch, by kernel
// version: either way every issued request not yet ended). The block
// layer keeps it only for requests it accounts, which needs
// M:m/queue/iostats = 1; ok is false without that or without the files
// (a partition, a bio-based device, no such disk).
func diskInflight(root string, kdev uint32) (n uint64, ok bool) {
	dir := filepath.Join(root, kernel.Dev(kdev))
	if b, err := os.ReadFile(filepath.Join(dir, "queue", "iostats")); err != nil || strings.TrimSpace(string(b)) != "1" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(dir, "inflight"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	for _, s := range f {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, false
		}
		n += v
	}
	return n, true
}

// endReads is how many times endUnseen reads the disks' counts, endGap
// apart, while requests stay held: each read is a bound of its own (a
// request counted out at one read is ended for good), so the lowest count
// of a busy disk serves. One read left requests held when other
// processes' IO was in flight at that instant (CI, 2026-12-07:
// TestTraceCpCopy's last 16 MiB of writeback without a persisted record).
const (
	endReads = 8
	endGap   = 10 * time.Millisecond
)

// endUnseen runs once the settle is over, before the engine's Flush: the
// requests iopath still holds on a disk are bounded by the disk's own
// count of requests in flight; the oldest beyond it completed unseen
// (engine/endunseen.go). Each count is read between two clock readings;
// then what the ring holds is read, so that a completion under way during
// the read (no longer counted, its event just written) ends its request
// as seen rather than another one. Up to endReads reads, while any
// request is held: at most (endReads-1)×endGap (70 ms) more at the end
// of a trace, and nothing when none is held.
func (t *Tracer) endUnseen() {
	boundHeld(t.Engine, func(kdev uint32) (uint64, bool) { return diskInflight(sysDevBlock, kdev) }, monotonicNow, t.drainNow, endReads, endGap)
}

// drainNow dispatches what the ring holds, without waiting.
func (t *Tracer) drainNow() {
	var rec ringbuf.Record
	t.rd.SetDeadline(time.Unix(1, 0)) // past: read what is there, never wait
	for t.rd.ReadInto(&rec) == nil {
		t.dispatch(rec.RawSample)
	}
}

// boundHeld reads, up to reads times, gap apart, the count of requests in
// flight (inflight) of every disk on which e holds requests, drains the
// ring (drain), and ends the held requests beyond each count; it stops
// when no request is held or no held disk has a count.
func boundHeld(e *engine.Engine, inflight func(kdev uint32) (uint64, bool), now func() uint64, drain func(), reads int, gap time.Duration) {
	type count struct {
		kdev          uint32
		n             uint64
		before, after uint64
	}
	for i := 0; i < reads; i++ {
		if i > 0 {
			time.Sleep(gap)
		}
		var counts []count
		for _, kdev := range e.HeldDisks() {
			before := now()
			if n, ok := inflight(kdev); ok {
				counts = append(counts, count{kdev, n, before, now()})
			}
		}
		if len(counts) == 0 {
			return
		}
		drain()
		for _, c := range counts {
			e.EndUnseen(c.kdev, c.n, c.before, c.after)
		}
	}
}
