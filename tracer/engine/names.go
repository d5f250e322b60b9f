package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

// sysNames names the calls of enum op_sys (bpf/events.h) as records spell
// them (record.Syscall.Syscall).
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
	uint32(bpf.IopathOpSysSYS_RENAME): "rename",
	uint32(bpf.IopathOpSysSYS_MSYNC):  "msync", uint32(bpf.IopathOpSysSYS_MADVISE): "madvise",
	uint32(bpf.IopathOpSysSYS_FADVISE64): "fadvise64", uint32(bpf.IopathOpSysSYS_READAHEAD): "readahead",
	uint32(bpf.IopathOpSysSYS_IO_SUBMIT): "io_submit", uint32(bpf.IopathOpSysSYS_IO_GETEVENTS): "io_getevents",
	uint32(bpf.IopathOpSysSYS_AIO_READ): "libaio_read", uint32(bpf.IopathOpSysSYS_AIO_WRITE): "libaio_write",
	uint32(bpf.IopathOpSysSYS_IO_URING_ENTER): "io_uring_enter",
	uint32(bpf.IopathOpSysSYS_URING_READ):     "io_uring_read", uint32(bpf.IopathOpSysSYS_URING_WRITE): "io_uring_write",
	uint32(bpf.IopathOpSysSYS_EXECVE): "execve",
}

// raw_sys_mask has one bit per enum op_sys value: a compile error here
// when the enum outgrows its 64 bits.
var _ [64 - bpf.IopathOpSysSYS_MAX]struct{}

// sysNameTab and sysClassTab are sysNames, and its names' classes
// (record.ClassOf), as arrays: a call's name and class are an index, not a
// map lookup or a string switch, on the per-event path.
var sysNameTab, sysClassTab = func() (names [bpf.IopathOpSysSYS_MAX]string, classes [bpf.IopathOpSysSYS_MAX]record.Class) {
	for nr, name := range sysNames {
		names[nr], classes[nr] = name, record.ClassOf(name)
	}
	return names, classes
}()

// SysName names a call (bpf enum op_sys); "" for an unknown number.
func SysName(s uint32) string {
	if s < uint32(len(sysNameTab)) {
		return sysNameTab[s]
	}
	return ""
}

// sysClass classifies a call (bpf enum op_sys); ClassOther for an unknown number.
func sysClass(s uint32) record.Class {
	if s < uint32(len(sysClassTab)) {
		return sysClassTab[s]
	}
	return record.ClassOther
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
	if o.PathDone&uint32(bpf.IopathPathDoneFlagPATH_ROOT) != 0 {
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

// OpPath joins the dentry names the kernel recorded (deepest first).
func OpPath(o *bpf.IopathOp) string { return string(appendOpPath(nil, o)) }

// pathBufLen holds the longest path a record can carry: ".../", its names
// (PATH_PARTS of up to PART_LEN - 1 bytes), their separators and "…".
const pathBufLen = 4 + len(bpf.IopathOp{}.Path)*len(bpf.IopathOp{}.Path[0]) + len("…")

// HandleFileName takes a name-only EV_PATH (PATH_NAME_ONLY, its flag
// cleared by the decoder): the name of an in-kernel copy's output file,
// sent before the copy's EV_OP. The file gets that path (its rows,
// writeback and persisted records).
func (e *Engine) HandleFileName(p *bpf.IopathOp) {
	if p.PathDepth == 0 {
		return
	}
	e.rename(fkey(p.PathDev, p.PathIno), string(appendOpPath(nil, p)))
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

// maxEarlierPaths bounds the earlier names kept per file.
const maxEarlierPaths = 16

// renameState remembers what names files across a trace.
type renameState struct {
	gens    map[fileKey]uint32   // i_generation of the inode last named
	retired []record.FileSummary // rows of deleted files whose inode number was reused
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
func (e *Engine) retiredFiles() []record.FileSummary {
	out := make([]record.FileSummary, 0, len(e.renames.retired))
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
// A name in the directory with the row's inode number but another
// i_generation is a new file on the deleted one's reused inode, not its new
// name (ext4 hands a freed inode number to the next file created in its
// group: a deleted WAL segment's row was named after the file created next).
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
		_ = d.Close()
		for _, n := range names {
			np := filepath.Join(dir, n)
			if err := unix.Lstat(np, &st); err != nil || st.Ino != k.ino || kdevOf(st.Dev) != k.dev {
				continue
			}
			if gen := e.renames.gens[k]; gen != 0 {
				if now, err := kernel.Generation(np); err == nil && now != gen {
					break // the inode number reused by a new file
				}
			}
			e.named(k, 0, np)
			break
		}
	}
}

// kdevOf converts a userspace dev_t to the kernel's (major<<20 | minor).
func kdevOf(dev uint64) uint64 {
	return uint64(unix.Major(dev))<<20 | uint64(unix.Minor(dev))
}

// Generation is the i_generation of the inode last named (dev, ino) (from
// its records' path events), 0 when unknown. Like every Engine method, for
// Run's goroutine (its record callback included).
func (e *Engine) Generation(dev uint32, ino uint64) uint32 {
	return e.renames.gens[fkey(dev, ino)]
}
