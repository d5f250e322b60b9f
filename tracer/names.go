package tracer

import (
	"unsafe"

	"github.com/iopath/iopath/bpf"
)

// pathNameOnly mirrors PATH_NAME_ONLY (bpf/common.h): an EV_PATH that names
// path_ino (an in-kernel copy's output file) and is not its thread's path.
const pathNameOnly = 2

// nameOnly takes an EV_PATH if it is a name-only record and reports
// whether it was: the file it names gets that path (its rows, writeback and
// persisted records).
func (e *Engine) nameOnly(raw []byte) bool {
	at := unsafe.Offsetof(bpf.IopathOp{}.PathDone) - pathStart
	if uintptr(len(raw)) < at+4 || *(*uint32)(unsafe.Pointer(&raw[at]))&pathNameOnly == 0 {
		return false // the common case: looked at without a copy
	}
	p := &e.dec.pathBuf
	fill(bytesOf(p)[pathStart:], raw)
	p.PathDone &^= pathNameOnly
	if p.PathDepth == 0 {
		return true
	}
	e.rename(fkey(p.PathDev, p.PathIno), string(appendOpPath(nil, p)))
	return true
}

// rename records path as the latest name of file k.
func (e *Engine) rename(k fileKey, path string) {
	if old, ok := e.paths[k]; ok && old == path {
		return
	}
	e.paths[k] = path
	if fs := e.files[k]; fs != nil {
		fs.Path = path
	}
}

// requestedBytes is what a call asked for, as the summary sums it: an
// in-kernel copy's length is a bound (cp asks copy_file_range for up to
// SSIZE_MAX bytes), so its bytes copied count instead.
func requestedBytes(rec *Syscall) uint64 {
	if isCopyName(rec.Syscall) && rec.ReturnedBytes >= 0 {
		return uint64(rec.ReturnedBytes)
	}
	return rec.RequestedBytes
}

// accountCopy charges the pages an in-kernel copy dirtied to its output
// file's row (and to the process: they are its dirtied pages).
func (e *Engine) accountCopy(rec *Syscall) {
	if rec.OutIno == 0 {
		return
	}
	e.pid(rec.Pid, rec.Comm).DirtiedPages += uint64(rec.DirtiedPages)
	fs := e.file(fkey(rec.outKdev, rec.OutIno))
	fs.DirtiedPages += uint64(rec.DirtiedPages)
	if rec.OutPath != "" {
		fs.Path = rec.OutPath
	}
}
