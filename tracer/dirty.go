package tracer

import (
	"strings"
	"sync"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// DirtyLeft is what --wait-writeback waits on: the pages traced calls
// dirtied that have not reached the disk yet.
type DirtyLeft struct {
	Pages uint64
	// Overflowed counts dirtied folios the dirty_pages map had no room for
	// (--max-dirty-pages): iopath never sees those written, so its own count
	// cannot reach 0. 0: tracking is complete and Pages is iopath's count.
	Overflowed uint64
	// Kernel: Pages is the kernel's count instead (cachestat(2), Linux 6.5+:
	// dirty plus under-writeback pages of every file the traced calls
	// dirtied). False with Overflowed > 0: some file could not be asked
	// (unknown path, renamed or deleted file, kernel before 6.5).
	Kernel bool
}

// DirtyLeft returns the dirty pages left to wait for. While dirty-page
// tracking is complete that is iopath's count (pages seen dirtied minus
// pages seen written or removed); once the dirty_pages map overflowed it is
// the kernel's own count of the dirtied files, when the kernel can give it.
// Safe to call from any goroutine while Run runs.
func (t *Tracer) DirtyLeft() DirtyLeft {
	d := DirtyLeft{Pages: t.Engine.DirtyPending(), Overflowed: t.counter1(bpf.IopathCounterCNT_DIRTY_FULL)}
	if d.Overflowed == 0 {
		return d
	}
	if n, ok := t.dirtied.kernelDirty(); ok {
		d.Pages, d.Kernel = n, true
	}
	return d
}

// counter1 sums one of the kernel's per-CPU counters.
func (t *Tracer) counter1(idx bpf.IopathCounter) uint64 {
	var per []uint64
	if err := t.counter.Lookup(uint32(idx), &per); err != nil {
		return 0
	}
	var sum uint64
	for _, v := range per {
		sum += v
	}
	return sum
}

// dirtiedFiles remembers the files whose pages traced calls dirtied, so the
// kernel can be asked about them from another goroutine than Run's (the
// engine's own maps belong to Run).
type dirtiedFiles struct {
	mu    sync.Mutex
	files map[dirtiedFile]string // path ("" when unknown)
}

// dirtiedFile names a file as its records do: dev ("major:minor") and inode.
type dirtiedFile struct {
	dev string
	ino uint64
}

// watch returns out, noting on the way the file of every record that
// dirtied pages.
func (d *dirtiedFiles) watch(out func(any)) func(any) {
	return func(r any) {
		if s, ok := r.(*record.Syscall); ok && s.DirtiedPages > 0 {
			d.note(s)
		}
		if out != nil {
			out(r)
		}
	}
}

func (d *dirtiedFiles) note(s *record.Syscall) {
	path := s.Path
	if strings.HasPrefix(path, "...") || record.IsCopy(s.Syscall) {
		// A path cut short cannot be opened; a copy's dirtied pages are
		// its output's, a file the record does not name.
		path = ""
	}
	k := dirtiedFile{s.Dev, s.Ino}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.files == nil {
		d.files = map[dirtiedFile]string{}
	}
	if old, seen := d.files[k]; !seen || old == "" {
		d.files[k] = path
	}
}

// kernelDirty sums the kernel's dirty plus under-writeback pages of the
// dirtied files; false if it cannot tell for one of them.
func (d *dirtiedFiles) kernelDirty() (uint64, bool) {
	d.mu.Lock()
	files := make(map[dirtiedFile]string, len(d.files))
	for k, p := range d.files {
		files[k] = p
	}
	d.mu.Unlock()
	var sum uint64
	for k, p := range files {
		if p == "" {
			return 0, false
		}
		n, ok := kernelDirtyPages(p, k.dev, k.ino)
		if !ok {
			return 0, false
		}
		sum += n
	}
	return sum, true
}
