package tracer

import (
	"strconv"
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
	// dirty plus under-writeback pages of every file traced calls or write
	// faults dirtied that can still be opened). False with Overflowed > 0:
	// the kernel has no count to give (before 6.5) or no dirtied file was
	// noted.
	Kernel bool
	// Files: the dirtied files asked (Kernel). Deleted of them are gone
	// (their inode freed: the kernel dropped their pages, 0 left);
	// Unavailable could not be opened (no usable name or file handle):
	// their pages are in no count, neither waited on nor said written.
	Files, Deleted, Unavailable int
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
	if k, ok := t.dirtied.kernelDirty(); ok {
		k.Overflowed = d.Overflowed
		return k
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

// dirtiedFiles remembers the files whose pages traced calls or write
// faults dirtied, so the kernel can be asked about them from another
// goroutine than Run's (the engine's own maps belong to Run).
type dirtiedFiles struct {
	mu    sync.Mutex
	files map[dirtiedFile]*fileRef
	// gen gives the inode's i_generation the engine knows (0: unknown);
	// called from the record callback, Run's goroutine. Nil: none known.
	gen func(dev uint32, ino uint64) uint32
}

// dirtiedFile names a file: dev ("major:minor") and inode as its records
// do, and the inode's i_generation as the engine knows it (0: unknown), so
// a file on the inode number of one deleted during the trace is a file of
// its own.
type dirtiedFile struct {
	dev string
	ino uint64
	gen uint32
}

// watch returns out, noting on the way the file of every record that
// dirtied pages: write calls (a copy: its output), msync, asynchronous
// requests and stores through a shared mapping (write faults).
func (d *dirtiedFiles) watch(out func(any)) func(any) {
	return func(r any) {
		switch r := r.(type) {
		case *record.Syscall:
			if r.DirtiedPages > 0 {
				if record.IsCopy(r.Syscall) {
					// A copy's dirtied pages are its output's; the record's
					// fd is its input.
					d.note(r.OutDev, r.OutIno, r.Pid, -1, r.OutPath)
				} else {
					d.note(r.Dev, r.Ino, r.Pid, r.Fd, r.Path)
				}
			}
		case *record.Fault:
			if r.DirtiedPages > 0 {
				d.note(r.Dev, r.Ino, r.Pid, -1, r.Path)
			}
		case *record.Request:
			if r.DirtiedPages > 0 {
				d.note(r.Dev, r.Ino, r.Pid, r.Fd, r.Path)
			}
		}
		if out != nil {
			out(r)
		}
	}
}

// note remembers one dirtied file, finding on first sight how to open it
// later (a file handle, else a name); a file not found yet is looked for
// again at its next records (resolveTries in all).
func (d *dirtiedFiles) note(dev string, ino uint64, pid uint32, fd int64, path string) {
	if ino == 0 {
		return
	}
	var gen uint32
	if d.gen != nil {
		gen = d.gen(kdevOf(dev), ino)
	}
	k := dirtiedFile{dev, ino, gen}
	d.mu.Lock()
	ref, seen := d.files[k]
	d.mu.Unlock()
	if seen && (ref.usable() || ref.tries >= resolveTries) {
		return
	}
	tries := 1
	if seen {
		tries = ref.tries + 1
	}
	// Resolve without the lock: kernelDirty may be reading the map.
	ref = resolveFile(dev, ino, gen, pid, fd, path)
	ref.tries = tries
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.files == nil {
		d.files = map[dirtiedFile]*fileRef{}
	}
	if old, seen := d.files[k]; !seen || !old.usable() {
		d.files[k] = ref
	}
}

// kernelDirty sums the kernel's dirty plus under-writeback pages of the
// dirtied files; false if the kernel has no count (no cachestat(2)) or
// no dirtied file was noted.
func (d *dirtiedFiles) kernelDirty() (DirtyLeft, bool) {
	d.mu.Lock()
	refs := make([]*fileRef, 0, len(d.files))
	for _, r := range d.files {
		refs = append(refs, r)
	}
	d.mu.Unlock()
	if len(refs) == 0 {
		return DirtyLeft{}, false
	}
	left := DirtyLeft{Kernel: true, Files: len(refs)}
	mounts := mountPoints()
	for _, r := range refs {
		n, st := r.dirtyPages(mounts)
		switch st {
		case fileNoCachestat:
			return DirtyLeft{}, false
		case fileDeleted:
			left.Deleted++
		case fileUnavailable:
			left.Unavailable++
		}
		left.Pages += n
	}
	return left, true
}

// byInode returns how to open each dirtied file, by dev and inode number
// (any generation: the engine's pending files have none).
func (d *dirtiedFiles) byInode() map[dirtiedFile]*fileRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[dirtiedFile]*fileRef, len(d.files))
	for k, r := range d.files {
		if r.usable() {
			out[dirtiedFile{dev: k.dev, ino: k.ino}] = r
		}
	}
	return out
}

// kdevOf parses a record's dev ("major:minor") to the kernel's encoding
// (major<<20 | minor); 0 if malformed.
func kdevOf(dev string) uint32 {
	maj, min, ok := strings.Cut(dev, ":")
	a, err1 := strconv.ParseUint(maj, 10, 12)
	b, err2 := strconv.ParseUint(min, 10, 20)
	if !ok || err1 != nil || err2 != nil {
		return 0
	}
	return uint32(a)<<20 | uint32(b)
}
