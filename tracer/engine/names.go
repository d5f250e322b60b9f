package engine

import (
	"bytes"
	"unsafe"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
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

// OpPath joins the dentry names the kernel recorded (deepest first).
func OpPath(o *bpf.IopathOp) string { return string(appendOpPath(nil, o)) }

// pathBufLen holds the longest path a record can carry: ".../", its names
// (PATH_PARTS of up to PART_LEN - 1 bytes), their separators and "…".
const pathBufLen = 4 + len(bpf.IopathOp{}.Path)*len(bpf.IopathOp{}.Path[0]) + len("…")
