package tracer

import (
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

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

// maxEarlierPaths bounds the earlier names kept per file; more are counted.
const maxEarlierPaths = 16

type renameState struct {
	gens    map[fileKey]uint32 // i_generation of the inode last named
	retired []FileSummary      // rows of deleted files whose inode number was reused
}

// sameInode says whether gen is the generation of the inode last named k
// (0: unknown, taken as the same).
func (e *Engine) sameInode(k fileKey, gen uint32) bool {
	old, ok := e.renames.gens[k]
	return !ok || gen == 0 || old == gen
}

// named records that the file k (an inode of generation gen) is called
// path now. A new generation is a new file on a reused inode number: the
// old file's row is kept apart, under its own name. Otherwise a new name
// becomes the row's, and the old one is listed as earlier.
func (e *Engine) named(k fileKey, gen uint32, path string) {
	if e.renames.gens == nil {
		e.renames.gens = map[fileKey]uint32{}
	}
	if !e.sameInode(k, gen) {
		if fs := e.files[k]; fs != nil {
			if fs.Path == "" {
				fs.Path = e.paths[k]
			}
			e.renames.retired = append(e.renames.retired, *fs)
			delete(e.files, k)
		}
		delete(e.paths, k)
	}
	if gen != 0 {
		e.renames.gens[k] = gen
	}
	old := e.paths[k]
	e.rename(k, path)
	if fs := e.files[k]; fs != nil {
		fs.Generation = e.renames.gens[k]
		if old != "" && old != path && !slices.Contains(fs.EarlierPaths, old) && len(fs.EarlierPaths) < maxEarlierPaths {
			fs.EarlierPaths = append(fs.EarlierPaths, old)
		}
	} else if old != "" && old != path {
		e.file(k).EarlierPaths = []string{old}
	}
}

// retiredFiles are the summary rows of deleted files whose inode number a
// later file reused.
func (e *Engine) retiredFiles() []FileSummary {
	out := make([]FileSummary, 0, len(e.renames.retired))
	for _, f := range e.renames.retired {
		finish(&f.Totals)
		out = append(out, f)
	}
	return out
}

// maxDirScan bounds the directory entries looked at per renamed file.
const maxDirScan = 4096

// resolveRenamed names, at the end of a trace, files renamed after their
// last traced call: a row whose path no longer leads to its inode gets the
// name the inode has now in the same directory (PostgreSQL installs a WAL
// segment by renaming pg_wal/xlogtemp.N), the old one listed as earlier;
// a file deleted or moved elsewhere keeps the name it was last seen under.
func (e *Engine) resolveRenamed() {
	for k, fs := range e.files {
		p := fs.Path
		if p == "" || p[0] != '/' {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil && st.Ino == k.ino && kdevOf(st.Dev) == k.dev {
			continue
		}
		dir := filepath.Dir(p)
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, _ := d.Readdirnames(maxDirScan)
		d.Close()
		for _, n := range names {
			if err := unix.Lstat(filepath.Join(dir, n), &st); err == nil && st.Ino == k.ino && kdevOf(st.Dev) == k.dev {
				e.named(k, 0, filepath.Join(dir, n))
				break
			}
		}
	}
}

// kdevOf converts a userspace dev_t to the kernel's (major<<20 | minor).
func kdevOf(dev uint64) uint64 {
	return uint64(unix.Major(dev))<<20 | uint64(unix.Minor(dev))
}
