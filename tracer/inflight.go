package tracer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf/ringbuf"
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

// endUnseen runs once the settle is over, before the engine's Flush: the
// requests iopath still holds on a disk are bounded by the disk's own
// count of requests in flight; the oldest beyond it completed unseen
// (engine/endunseen.go). Each count is read between two clock readings;
// then what the ring holds is read, so that a completion under way during
// the read (no longer counted, its event just written) ends its request
// as seen rather than another one.
func (t *Tracer) endUnseen() {
	type count struct {
		kdev          uint32
		n             uint64
		before, after uint64
	}
	var counts []count
	for _, kdev := range t.Engine.HeldDisks() {
		before := monotonicNow()
		if n, ok := diskInflight(sysDevBlock, kdev); ok {
			counts = append(counts, count{kdev, n, before, monotonicNow()})
		}
	}
	if len(counts) == 0 {
		return
	}
	var rec ringbuf.Record
	t.rd.SetDeadline(time.Unix(1, 0)) // past: read what is there, never wait
	for t.rd.ReadInto(&rec) == nil {
		t.dispatch(rec.RawSample)
	}
	for _, c := range counts {
		t.Engine.EndUnseen(c.kdev, c.n, c.before, c.after)
	}
}
