package tracer

import (
	"unsafe"

	"github.com/iopath/iopath/bpf"
)

// maxPathThreads bounds recordDecoder.paths; past it the map is cleared
// (the kernel resends each thread's path at least every 256 records).
const maxPathThreads = 1 << 16

// recordDecoder restores records the kernel cut short to save ring-buffer
// space and BPF time (bpf/op.h, bpf/block.c):
//   - EV_OP ends after its last path name (path_depth of PATH_PARTS), and a
//     thread's record on the same file as its previous record carries no
//     path at all (path_cached): the path is that earlier record's;
//   - EV_RQ_ISSUE ends after its nr_own owned bios.
//
// A record shorter than its struct is copied into a zeroed buffer, so
// handlers always see a whole struct; they must not keep the pointer.
type recordDecoder struct {
	opBuf    bpf.IopathOp
	issueBuf bpf.IopathRqIssueEv
	// paths: the last path each thread's records carried, by tid.
	paths map[uint32]*threadPath
	// MissingPaths counts records whose omitted path was never seen (the
	// record that carried it was lost).
	MissingPaths uint64
}

type threadPath struct {
	dev   uint32
	ino   uint64
	depth uint32
	done  uint32
	trunc uint32
	path  [8][48]int8
}

// op returns the EV_OP record in raw (at least up to its path field).
func (d *recordDecoder) op(raw []byte) *bpf.IopathOp {
	var o *bpf.IopathOp
	if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathOp{}) {
		o = (*bpf.IopathOp)(unsafe.Pointer(&raw[0]))
	} else {
		o = &d.opBuf
		fill(unsafe.Slice((*byte)(unsafe.Pointer(o)), unsafe.Sizeof(*o)), raw)
	}
	if d.paths == nil {
		d.paths = map[uint32]*threadPath{}
	}
	if o.PathCached == 0 {
		if o.PathDepth == 0 {
			return o
		}
		tp := d.paths[o.Tid]
		if tp == nil {
			if len(d.paths) >= maxPathThreads {
				clear(d.paths)
			}
			tp = &threadPath{}
			d.paths[o.Tid] = tp
		}
		*tp = threadPath{dev: o.Dev, ino: o.Ino, depth: o.PathDepth, done: o.PathDone, trunc: o.PathTrunc, path: o.Path}
		return o
	}
	tp := d.paths[o.Tid]
	if tp == nil || tp.dev != o.Dev || tp.ino != o.Ino {
		d.MissingPaths++
		return o
	}
	if o != &d.opBuf { // a whole record in the ring buffer: copy before filling in
		d.opBuf = *o
		o = &d.opBuf
	}
	o.PathDepth, o.PathDone, o.PathTrunc, o.Path = tp.depth, tp.done, tp.trunc, tp.path
	return o
}

// issue returns the EV_RQ_ISSUE record in raw (at least its header).
func (d *recordDecoder) issue(raw []byte) *bpf.IopathRqIssueEv {
	if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathRqIssueEv{}) {
		return (*bpf.IopathRqIssueEv)(unsafe.Pointer(&raw[0]))
	}
	ev := &d.issueBuf
	fill(unsafe.Slice((*byte)(unsafe.Pointer(ev)), unsafe.Sizeof(*ev)), raw)
	return ev
}

// fill copies raw into buf and zeroes the rest of buf.
func fill(buf, raw []byte) {
	n := copy(buf, raw)
	clear(buf[n:])
}
