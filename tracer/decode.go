package tracer

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/iopath/iopath/bpf"
	"golang.org/x/sys/unix"
)

// Range and readahead flags, mirrored from bpf/common.h.
const (
	rangeAdded   = 1
	rangeDirtied = 2
	raSync       = 1
	raAsync      = 2
	raOrder      = 3
)

var sysNames = map[uint32]string{
	uint32(bpf.IopathOpSysSYS_READ): "read", uint32(bpf.IopathOpSysSYS_PREAD64): "pread64",
	uint32(bpf.IopathOpSysSYS_READV): "readv", uint32(bpf.IopathOpSysSYS_PREADV): "preadv",
	uint32(bpf.IopathOpSysSYS_PREADV2): "preadv2", uint32(bpf.IopathOpSysSYS_WRITE): "write",
	uint32(bpf.IopathOpSysSYS_PWRITE64): "pwrite64", uint32(bpf.IopathOpSysSYS_WRITEV): "writev",
	uint32(bpf.IopathOpSysSYS_PWRITEV): "pwritev", uint32(bpf.IopathOpSysSYS_PWRITEV2): "pwritev2",
	uint32(bpf.IopathOpSysSYS_FSYNC): "fsync", uint32(bpf.IopathOpSysSYS_FDATASYNC): "fdatasync",
	uint32(bpf.IopathOpSysSYS_SYNC_FILE_RANGE): "sync_file_range", uint32(bpf.IopathOpSysSYS_SYNC): "sync",
	uint32(bpf.IopathOpSysSYS_SYNCFS): "syncfs", uint32(bpf.IopathOpSysSYS_VFS_READ): "vfs_read",
	uint32(bpf.IopathOpSysSYS_VFS_WRITE): "vfs_write", uint32(bpf.IopathOpSysSYS_SENDFILE): "sendfile",
	uint32(bpf.IopathOpSysSYS_SPLICE): "splice", uint32(bpf.IopathOpSysSYS_COPY_FILE_RANGE): "copy_file_range",
}

// sysNameTab is sysNames as an array: a call's name is an index, not a map
// lookup, on the per-event path.
var sysNameTab = func() (t [32]string) {
	for nr, name := range sysNames {
		t[nr%32] = name
	}
	return t
}()

// sysName names a call (bpf enum op_sys); "" for an unknown number.
func sysName(s uint32) string {
	if s < uint32(len(sysNameTab)) {
		return sysNameTab[s]
	}
	return ""
}

func isWriteSys(s uint32) bool {
	return (s >= uint32(bpf.IopathOpSysSYS_WRITE) && s <= uint32(bpf.IopathOpSysSYS_PWRITEV2)) ||
		s == uint32(bpf.IopathOpSysSYS_VFS_WRITE)
}

func isSyncSys(s uint32) bool {
	return s >= uint32(bpf.IopathOpSysSYS_FSYNC) && s <= uint32(bpf.IopathOpSysSYS_SYNCFS)
}

func isReadName(n string) bool {
	switch n {
	case "read", "pread64", "readv", "preadv", "preadv2", "vfs_read", "sendfile", "splice", "copy_file_range":
		return true
	}
	return false
}

func isWriteName(n string) bool {
	switch n {
	case "write", "pwrite64", "writev", "pwritev", "pwritev2", "vfs_write":
		return true
	}
	return false
}

// cBytes views a NUL-terminated C char array in place, up to its NUL (no
// copy: lookups in the engine's caches then cost no allocation).
func cBytes(b []int8) []byte {
	if len(b) == 0 {
		return nil
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b))
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		return raw[:i]
	}
	return raw
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string { return string(cBytes(b)) }

// appendOpPath appends the path the kernel recorded for a call (dentry
// names, deepest first) to dst; nothing when it recorded none. A caller
// passing a stack buffer builds the path without allocating.
func appendOpPath(dst []byte, o *bpf.IopathOp) []byte {
	n := int(o.PathDepth)
	if n == 0 {
		return dst
	}
	n = min(n, len(o.Path))
	if o.PathDone != 0 {
		dst = append(dst, '/')
	} else {
		dst = append(dst, ".../"...) // the walk stopped before the root
	}
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, cBytes(o.Path[i][:])...)
		if o.PathTrunc&(1<<i) != 0 {
			dst = append(dst, "…"...) // this name was cut at PART_LEN-1 bytes
		}
		if i > 0 {
			dst = append(dst, '/')
		}
	}
	return dst
}

// opPath joins the dentry names the kernel recorded (deepest first).
func opPath(o *bpf.IopathOp) string { return string(appendOpPath(nil, o)) }

// pathBufLen holds the longest path a record can carry: ".../", 8 names of
// up to 47 bytes, their separators and "…".
const pathBufLen = 4 + 8*48 + 3

// syscallRecord turns a call's kernel record into its JSON record (bios are
// attached later by the engine). Page-cache arithmetic, per call:
//   - pages_requested: pages spanned by the bytes the call returned
//     (reads and writes; 0 for O_DIRECT and errors);
//   - pages_missed: requested pages the call itself inserted into the cache;
//   - pages_hit = requested - missed (never negative);
//   - pages_added: every page the call inserted, readahead beyond the request included.
//
// Strings repeated across calls (comm, dev, path) come from the engine's
// caches; the path also updates the engine's per-file path memory.
func (e *Engine) syscallRecord(o *bpf.IopathOp) *Syscall {
	var rec *Syscall
	var blk *recordBlock
	if o.NrRanges > 0 || o.NrRa > 0 || o.BiosQueued > 0 {
		blk = &recordBlock{}
		rec = &blk.rec
	} else {
		rec = new(Syscall)
	}
	*rec = Syscall{
		Type: "syscall", OpID: o.OpId, TimeNs: o.StartNs, Pid: o.Pid, Tid: o.Tid, Comm: e.comm(cBytes(o.Comm[:])),
		Syscall: sysName(o.Sys), Fd: o.Fd, Path: e.opPath(o), Dev: e.devName(o.Dev), Ino: o.Ino, FS: e.fsName(o.FsMagic),
		Offset: o.Offset, RequestedBytes: o.Count, ReturnedBytes: o.Ret, DurationNs: sub(o.EndNs, o.StartNs),
		BlockedNs: o.BlockedNs, DirtiedPages: o.DirtiedPages, OtherDirtiedPages: o.OtherDirtied, ThrottleNs: o.ThrottleNs,
		ThrottlePauses: o.ThrottlePauses, ThrottleMaxPauseNs: o.MaxPauseNs, Direct: o.F_flags&unix.O_DIRECT != 0, kdev: o.Dev,
		Cache: Cache{Readahead: []Readahead{}, Lookups: o.Lookups},
	}
	if rec.Syscall == "" {
		rec.Syscall = fmt.Sprintf("sys_%d", o.Sys)
	}
	rec.SyncFlags = syncRangeFlags(o)
	if o.OutIno != 0 {
		rec.OutDev, rec.OutIno, rec.OutPath, rec.outKdev = e.devName(o.OutDev), o.OutIno, e.paths[fkey(o.OutDev, o.OutIno)], o.OutDev
	}
	if o.Ret < 0 {
		rec.Error = unix.ErrnoName(unix.Errno(-o.Ret))
		if rec.Error == "" {
			rec.Error = fmt.Sprintf("errno %d", -o.Ret)
		}
		rec.ReturnedBytes = 0
	}
	var first, last uint64
	if o.Ret > 0 && !isSyncSys(o.Sys) && !rec.Direct {
		first = o.Offset >> 12
		last = (o.Offset + uint64(o.Ret) - 1) >> 12
		rec.Cache.PagesRequested = last - first + 1
	}
	n := int(o.NrRanges)
	if n > len(o.Ranges) {
		n = len(o.Ranges)
	}
	// Counts come from the kernel's totals (exact); the ranges, which may
	// be truncated, only say where.
	rec.Cache.PagesAdded = uint64(o.PagesAdded)
	if rec.Cache.PagesRequested > 0 {
		rec.Cache.PagesMissed = uint64(o.PagesInRange)
	}
	if blk != nil {
		rec.Cache.Readahead = blk.ra[:0]
		rec.Bios = blk.bio[:0] // completed by emit
	}
	var beyond uint64 // first added range reaching past the request
	haveBeyond := false
	for i := 0; i < n; i++ {
		r := o.Ranges[i]
		pr := PageRange{Index: r.Index, Pages: r.Nr}
		switch r.Flags {
		case rangeAdded:
			if rec.Cache.AddedRanges == nil && blk != nil {
				rec.Cache.AddedRanges = blk.added[:0]
			}
			rec.Cache.AddedRanges = append(rec.Cache.AddedRanges, pr)
			if in := overlap(r.Index, r.Index+uint64(r.Nr)-1, first, last, rec.Cache.PagesRequested > 0); in < uint64(r.Nr) && !haveBeyond {
				beyond, haveBeyond = r.Index, true
			}
		case rangeDirtied:
			rec.DirtiedRanges = append(rec.DirtiedRanges, pr)
		}
	}
	if o.RangesLost > 0 {
		rec.Truncated = &Truncations{RangePages: o.RangesLost}
	}
	if rec.Cache.PagesMissed > rec.Cache.PagesRequested {
		rec.Cache.PagesMissed = rec.Cache.PagesRequested
	}
	rec.Cache.PagesHit = rec.Cache.PagesRequested - rec.Cache.PagesMissed
	nra := int(o.NrRa)
	if nra > len(o.Ra) {
		nra = len(o.Ra)
	}
	for i := 0; i < nra; i++ {
		r := o.Ra[i]
		kind := "unknown"
		switch r.Kind {
		case raSync:
			kind = "sync"
		case raAsync:
			kind = "async"
		}
		ra := Readahead{Kind: kind, StartIndex: r.Start, Pages: r.Size, AsyncPages: r.AsyncSize, Source: "kernel"}
		if r.Size == 0 {
			// The kernel did not size a window (e.g. 6.18's random-access
			// path reads just the requested pages): report what it added
			// from the trigger index on.
			for _, a := range rec.Cache.AddedRanges {
				if a.Index+uint64(a.Pages) > r.Start {
					ra.Pages += a.Pages - uint32(min(a.Pages, uint32(sub(r.Start, a.Index))))
				}
			}
			ra.Source = "kernel (window from pages added)"
		}
		rec.Cache.Readahead = append(rec.Cache.Readahead, ra)
	}
	if readahead := rec.Cache.PagesAdded - min(rec.Cache.PagesMissed, rec.Cache.PagesAdded); nra == 0 && readahead > 0 && !isWriteSys(o.Sys) {
		// No readahead hook on this kernel: pages inserted past the request
		// were read ahead (sync if the call also missed, else async).
		kind := "async"
		if rec.Cache.PagesMissed > 0 {
			kind = "sync"
		}
		start := beyond
		pages := uint32(readahead)
		if rec.Cache.PagesMissed > 0 && start > first {
			start = first
			pages += uint32(rec.Cache.PagesMissed)
		}
		rec.Cache.Readahead = append(rec.Cache.Readahead, Readahead{Kind: kind, StartIndex: start, Pages: pages, Source: "derived"})
	}
	return rec
}

// recordBlock is a call's record with room for the first element of each
// list a call that missed fills (one added range, one readahead decision,
// one bio): one allocation instead of four for the common miss. Longer
// lists grow out of it by append as usual.
type recordBlock struct {
	rec   Syscall
	added [1]PageRange
	ra    [1]Readahead
	bio   [1]Bio
}

// overlap counts pages of [a0,a1] inside [b0,b1].
func overlap(a0, a1, b0, b1 uint64, valid bool) uint64 {
	if !valid || a1 < b0 || a0 > b1 {
		return 0
	}
	lo, hi := max(a0, b0), min(a1, b1)
	return hi - lo + 1
}
