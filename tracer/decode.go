package tracer

import (
	"fmt"
	"unsafe"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine"
)

// maxPathThreads bounds Decoder.paths; past it the map is cleared
// (the kernel resends each thread's path at least every 256 records).
const maxPathThreads = 1 << 16

// Where the two records inside struct op (bpf/events.h) begin and where
// their variable parts start.
var (
	opStart   = unsafe.Offsetof(bpf.IopathOp{}.Type)
	opFixed   = unsafe.Offsetof(bpf.IopathOp{}.Ranges) - opStart
	pathStart = unsafe.Offsetof(bpf.IopathOp{}.PathType)
	pathFixed = unsafe.Offsetof(bpf.IopathOp{}.Path) - pathStart
)

// Decoder rebuilds whole structs from the slices the kernel sends to
// save ring-buffer space and BPF time (bpf/events.h, struct op):
//   - EV_OP is struct op from `type` to its last used page range;
//   - EV_PATH is struct op from `path_type` to its last path name, numbered
//     per thread (path_no); the kernel sends it when a thread's record names
//     another file than its last EV_PATH did (another mount, dentry, parent
//     or name: hard links and renames included), and every 256 records; an
//     EV_OP says which of its thread's EV_PATH records names its file
//     (path_seq, 0 for none);
//   - EV_RQ_ISSUE ends after its nr_own owned bios.
//
// The zero Decoder is ready to use. Handlers get a pointer into the decoder's buffers, valid until the next
// record: they must not keep it.
type Decoder struct {
	opBuf    bpf.IopathOp
	pathBuf  bpf.IopathOp
	issueBuf bpf.IopathRqIssueEv
	// paths: the last path each thread sent, by tid.
	paths map[uint32]*threadPath
	// MissingPaths counts EV_OP records whose EV_PATH never arrived (the
	// kernel sends the path again after a failed send, so only records
	// whose path was sent but lost in userspace's view count here).
	MissingPaths uint64

	// What opBuf holds beyond the last record (so that a stream of records
	// costs one copy each, not a clear and copy of the whole struct):
	opLen   int         // bytes of [opStart:] the previous EV_OP filled
	opPath  *threadPath // whose path is in opBuf's path fields (nil: none)
	opGen   uint64      // ... at which generation
	pathGen uint64      // bumped by every EV_PATH
}

type threadPath struct {
	gen   uint64 // Decoder.pathGen when it was set
	no    uint32 // the kernel's per-thread EV_PATH number
	depth uint32
	done  uint32
	trunc uint32
	igen  uint32 // the inode's i_generation
	path  [8][48]int8
}

func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// fill copies raw into buf and zeroes the rest of buf.
func fill(buf, raw []byte) {
	n := copy(buf, raw)
	clear(buf[n:])
}

// path records an EV_PATH (at least pathFixed bytes).
func (d *Decoder) path(raw []byte) {
	p := &d.pathBuf
	fill(bytesOf(p)[pathStart:], raw)
	if d.paths == nil {
		d.paths = map[uint32]*threadPath{}
	}
	tp := d.paths[p.PathTid]
	if tp == nil {
		if len(d.paths) >= maxPathThreads {
			clear(d.paths)
		}
		tp = &threadPath{}
		d.paths[p.PathTid] = tp
	}
	d.pathGen++
	*tp = threadPath{gen: d.pathGen, no: p.PathNo, depth: p.PathDepth, done: p.PathDone, trunc: p.PathTrunc, igen: p.PathGen, path: p.Path}
}

// pathNameOnly is PATH_NAME_ONLY (bpf/events.h, enum path_done_flag): an
// EV_PATH that names path_ino (an in-kernel copy's output file), not its
// thread's next records' file.
const pathNameOnly = uint32(bpf.IopathPathDoneFlagPATH_NAME_ONLY)

// nameOnly hands a name-only EV_PATH to the engine and reports whether raw
// was one (the thread's path numbering is left alone).
func (d *Decoder) nameOnly(e *engine.Engine, raw []byte) bool {
	at := unsafe.Offsetof(bpf.IopathOp{}.PathDone) - pathStart
	if uintptr(len(raw)) < at+4 || *(*uint32)(unsafe.Pointer(&raw[at]))&pathNameOnly == 0 {
		return false // the common case: looked at without a copy
	}
	p := &d.pathBuf
	fill(bytesOf(p)[pathStart:], raw)
	p.PathDone &^= pathNameOnly
	e.HandleFileName(p)
	return true
}

// op returns the EV_OP record in raw (at least opFixed bytes) as a whole
// struct op, with the path its thread last sent for the file.
func (d *Decoder) op(raw []byte) *bpf.IopathOp {
	o := &d.opBuf
	b := bytesOf(o)[opStart:pathStart]
	n := copy(b, raw)
	if n < d.opLen {
		clear(b[n:d.opLen]) // the previous record's longer tail
	}
	d.opLen = n
	tp := d.paths[o.Tid]
	if o.PathSeq == 0 || tp == nil || tp.no != o.PathSeq {
		if o.PathSeq != 0 {
			d.MissingPaths++
		}
		if d.opPath != nil {
			o.PathDepth, o.PathDone, o.PathTrunc, o.PathGen, o.Path = 0, 0, 0, 0, [8][48]int8{}
			d.opPath = nil
		}
		return o
	}
	if d.opPath != tp || d.opGen != tp.gen {
		o.PathDepth, o.PathDone, o.PathTrunc, o.PathGen, o.Path = tp.depth, tp.done, tp.trunc, tp.igen, tp.path
		d.opPath, d.opGen = tp, tp.gen
	}
	return o
}

// issue returns the EV_RQ_ISSUE record in raw (at least its header).
func (d *Decoder) issue(raw []byte) *bpf.IopathRqIssueEv {
	if uintptr(len(raw)) >= unsafe.Sizeof(bpf.IopathRqIssueEv{}) {
		return (*bpf.IopathRqIssueEv)(unsafe.Pointer(&raw[0]))
	}
	ev := &d.issueBuf
	fill(bytesOf(ev), raw)
	return ev
}

// Dispatch decodes one raw ring-buffer record and hands it to e. It returns
// an error for a short or unknown record.
func (d *Decoder) Dispatch(e *engine.Engine, raw []byte) error {
	if len(raw) < 4 {
		return fmt.Errorf("short record (%d bytes)", len(raw))
	}
	typ := *(*uint32)(unsafe.Pointer(&raw[0]))
	need := func(size uintptr) bool { return uintptr(len(raw)) >= size }
	switch bpf.IopathEvType(typ) {
	case bpf.IopathEvTypeEV_OP:
		if need(opFixed) {
			e.HandleOp(d.op(raw))
			return nil
		}
	case bpf.IopathEvTypeEV_PATH:
		if need(pathFixed) {
			if !d.nameOnly(e, raw) {
				d.path(raw)
			}
			return nil
		}
	case bpf.IopathEvTypeEV_RQ_ISSUE:
		if need(unsafe.Offsetof(bpf.IopathRqIssueEv{}.Own)) {
			e.HandleIssue(d.issue(raw))
			return nil
		}
	case bpf.IopathEvTypeEV_RQ_COMPLETE:
		if need(unsafe.Sizeof(bpf.IopathRqDoneEv{})) {
			e.HandleComplete((*bpf.IopathRqDoneEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_RQ_REQUEUE:
		if need(unsafe.Sizeof(bpf.IopathRqDoneEv{})) {
			e.HandleRequeue((*bpf.IopathRqDoneEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_WB_BIO:
		if need(unsafe.Sizeof(bpf.IopathWbBioEv{})) {
			e.HandleWBBio((*bpf.IopathWbBioEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_WB_START:
		if need(unsafe.Sizeof(bpf.IopathWbStartEv{})) {
			e.HandleWBStart((*bpf.IopathWbStartEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_WB_INODE:
		if need(unsafe.Sizeof(bpf.IopathWbInodeEv{})) {
			e.HandleWBInode((*bpf.IopathWbInodeEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_BIO_SPLIT:
		if need(unsafe.Sizeof(bpf.IopathBioSplitEv{})) {
			e.HandleSplit((*bpf.IopathBioSplitEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_FLUSH_DONE:
		if need(unsafe.Sizeof(bpf.IopathFlushDoneEv{})) {
			e.HandleFlushDone((*bpf.IopathFlushDoneEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_DIRTY_GONE:
		if need(unsafe.Sizeof(bpf.IopathDirtyGoneEv{})) {
			e.HandleDirtyGone((*bpf.IopathDirtyGoneEv)(unsafe.Pointer(&raw[0])))
			return nil
		}
	case bpf.IopathEvTypeEV_AIO_SUBMIT, bpf.IopathEvTypeEV_AIO_REAP, bpf.IopathEvTypeEV_URING_SUBMIT,
		bpf.IopathEvTypeEV_URING_PUNT, bpf.IopathEvTypeEV_URING_COMPLETE, bpf.IopathEvTypeEV_URING_ENTER:
		return d.aio(e, raw) // decode_aio.go
	default:
		return fmt.Errorf("unknown record type %d (%d bytes)", typ, len(raw))
	}
	return fmt.Errorf("record type %d too short (%d bytes)", typ, len(raw))
}
