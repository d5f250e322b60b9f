package tracer

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
	"github.com/iopath/iopath/tracer/kernel"
)

func rawOf(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Records decoded from ring-buffer bytes drive the engine like typed events.
func TestDispatchDecodesRecords(t *testing.T) {
	s := enginetest.NewStream()
	var d Decoder
	id := uint64(7)<<32 | 1
	o := enginetest.Op(id, bpf.IopathOpSysSYS_PREAD64, 8192, 4096, 4096, 100, 300)
	o.BiosQueued = 1
	enginetest.AddRange(o, 2, 1, engine.RangeAdded)
	copy(o.Comm[:], []int8{'c', 'a', 't'})
	o.PathDepth, o.PathDone, o.PathSeq = 2, 1, 1
	copy(o.Path[0][:], []int8{'f'})
	copy(o.Path[1][:], []int8{'t', 'm', 'p'})
	for _, raw := range [][]byte{
		rawOf(t, enginetest.Issue(0xa, 110, enginetest.FlRead, enginetest.Own{Op: id, Bio: 0xb1, Sector: 16, Bytes: 4096, Queue: 105})),
		rawOf(t, enginetest.Done(0xa, 250, 0)),
		pathRec(o),
		opRec(o),
	} {
		if err := d.Dispatch(s.E, raw); err != nil {
			t.Fatal(err)
		}
	}
	c := s.Syscalls()
	if len(c) != 1 || c[0].Comm != "cat" || c[0].Path != "/tmp/f" || c[0].Syscall != "pread64" || len(c[0].Bios) != 1 || c[0].Bios[0].Sector != 16 {
		t.Fatalf("decoded %+v", c)
	}
}

func TestDispatchRejectsBadRecords(t *testing.T) {
	s := enginetest.NewStream()
	var d Decoder
	if err := d.Dispatch(s.E, []byte{1, 0}); err == nil {
		t.Error("short record accepted")
	}
	if err := d.Dispatch(s.E, []byte{99, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("unknown type accepted")
	}
	if err := d.Dispatch(s.E, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("truncated EV_OP accepted")
	}
}

// rawPrefix returns the first n bytes of v's memory, 8-byte aligned, as the
// kernel's cut records arrive.
func rawPrefix[T any](v *T, n uintptr) []byte {
	words := make([]uint64, (n+7)/8)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
	copy(raw, unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v)))
	return raw
}

func pathOf(parts ...string) (p [8][48]int8) {
	for i, s := range parts {
		for j := 0; j < len(s); j++ {
			p[i][j] = int8(s[j])
		}
	}
	return p
}

// pathRec and opRec cut records out of o as bpf/op.h sends them.
func pathRec(o *bpf.IopathOp) []byte {
	p := *o
	p.PathType, p.PathTid, p.PathNo, p.PathIno, p.PathDev = uint32(bpf.IopathEvTypeEV_PATH), o.Tid, o.PathSeq, o.Ino, o.Dev
	return rawPrefix(&p, pathStart+pathFixed+uintptr(o.PathDepth)*48)[pathStart:]
}

func opRec(o *bpf.IopathOp) []byte {
	o.Type = uint32(bpf.IopathEvTypeEV_OP)
	return rawPrefix(o, opStart+opFixed+uintptr(o.NrRanges)*unsafe.Sizeof(o.Ranges[0]))[opStart:]
}

func TestRecordDecoderPaths(t *testing.T) {
	e := engine.New(&kernel.Kernel{}, func(any) {})
	var d Decoder
	dispatch := func(raw []byte) {
		t.Helper()
		if err := d.Dispatch(e, raw); err != nil {
			t.Fatal(err)
		}
	}
	// Thread 7's first path, then a record naming it, with one page range.
	first := bpf.IopathOp{Tid: 7, Ino: 42, Dev: benchDev, PathDepth: 2, PathDone: 1, Path: pathOf("f", "tmp"), Ret: 1,
		NrRanges: 1, AggCalls: 99, Active: 1, PathSeq: 1}
	first.Ranges[0] = bpf.IopathPageRange{Index: 5, Nr: 2, Flags: engine.RangeAdded}
	first.Ranges[1] = bpf.IopathPageRange{Index: 77, Nr: 1} // beyond the cut
	dispatch(pathRec(&first))
	o := d.op(opRec(&first))
	if got := engine.OpPath(o); got != "/tmp/f" || o.Ret != 1 || o.Ranges[0].Nr != 2 {
		t.Fatalf("first record: path %q ret %d range %+v", got, o.Ret, o.Ranges[0])
	}
	if o.Ranges[1] != (bpf.IopathPageRange{}) || o.AggCalls != 0 || o.Active != 0 {
		t.Fatalf("bytes outside the record leaked in: range %+v agg %d active %d", o.Ranges[1], o.AggCalls, o.Active)
	}
	// A shorter path of another thread: no stale names from the longer one.
	dispatch(pathRec(&bpf.IopathOp{Tid: 9, PathSeq: 1, PathDepth: 3, PathDone: 1, Path: pathOf("a", "b", "c")}))
	dispatch(pathRec(&bpf.IopathOp{Tid: 9, PathSeq: 2, PathDepth: 1, PathDone: 1, Path: pathOf("z")}))
	if o := d.op(opRec(&bpf.IopathOp{Tid: 9, Ino: 6, Dev: benchDev, PathSeq: 2})); o.Path[1][0] != 0 || engine.OpPath(o) != "/z" {
		t.Fatalf("tail not zeroed: %q", engine.OpPath(o))
	}
	// Thread 7's next record naming the same path.
	if o = d.op(opRec(&bpf.IopathOp{Tid: 7, Ino: 42, Dev: benchDev, Ret: 2, PathSeq: 1})); engine.OpPath(o) != "/tmp/f" || o.Ret != 2 {
		t.Fatalf("later record: path %q ret %d, want /tmp/f 2", engine.OpPath(o), o.Ret)
	}
	// A hard link of the same inode: the kernel sends its name as path 2.
	dispatch(pathRec(&bpf.IopathOp{Tid: 7, PathSeq: 2, PathDepth: 2, PathDone: 1, Path: pathOf("link", "tmp")}))
	if o = d.op(opRec(&bpf.IopathOp{Tid: 7, Ino: 42, Dev: benchDev, PathSeq: 2})); engine.OpPath(o) != "/tmp/link" {
		t.Fatalf("hard link: path %q, want /tmp/link", engine.OpPath(o))
	}
	// A thread that never sent a path: counted, no path.
	if o = d.op(opRec(&bpf.IopathOp{Tid: 8, Ino: 42, Dev: benchDev, PathSeq: 1})); engine.OpPath(o) != "" || d.MissingPaths != 1 {
		t.Fatalf("unknown path: %q, missing %d", engine.OpPath(o), d.MissingPaths)
	}
	// Thread 7's path 3 was lost: no wrong (older) path, counted.
	if o = d.op(opRec(&bpf.IopathOp{Tid: 7, Ino: 43, Dev: benchDev, PathSeq: 3})); engine.OpPath(o) != "" || d.MissingPaths != 2 {
		t.Fatalf("lost path: %q, missing %d", engine.OpPath(o), d.MissingPaths)
	}
	// sync(2) names no file: no path expected, none counted missing.
	if o = d.op(opRec(&bpf.IopathOp{Tid: 7, Sys: uint32(bpf.IopathOpSysSYS_SYNC)})); engine.OpPath(o) != "" || d.MissingPaths != 2 {
		t.Fatalf("sync: path %q, missing %d", engine.OpPath(o), d.MissingPaths)
	}
	for _, raw := range [][]byte{opRec(&first)[:opFixed-1], pathRec(&first)[:pathFixed-1]} {
		if err := d.Dispatch(e, raw); err == nil {
			t.Fatalf("a %d-byte record cut inside its fixed part was accepted", len(raw))
		}
	}
}

func TestDispatchShortRecords(t *testing.T) {
	var got []*record.Syscall
	var d Decoder
	e := engine.New(&kernel.Kernel{}, func(r any) {
		if s, ok := r.(*record.Syscall); ok {
			got = append(got, s)
		}
	})
	issue := bpf.IopathRqIssueEv{Type: uint32(bpf.IopathEvTypeEV_RQ_ISSUE), Dev: benchDev, Rq: 0xff01, Ts: 1000,
		Sector: 8, Bytes: 4096, NrBios: 1, NrOwn: 1}
	issue.Own[0] = bpf.IopathIssueOwn{OpId: 7<<32 | 1, Bio: 0xb10, Sector: 8, Bytes: 4096, QueueNs: 900, Pid: 100, Tid: 7}
	issue.Own[1] = bpf.IopathIssueOwn{OpId: 99, Bio: 0xbad} // beyond the cut: must not be seen
	ownEnd := unsafe.Offsetof(issue.Own)
	for _, n := range []uintptr{ownEnd - 1, 3} {
		if err := d.Dispatch(e, rawPrefix(&issue, n)); err == nil {
			t.Fatalf("a %d-byte issue record was accepted", n)
		}
	}
	if err := d.Dispatch(e, rawPrefix(&issue, ownEnd+unsafe.Sizeof(issue.Own[0]))); err != nil {
		t.Fatal(err)
	}
	done := bpf.IopathRqDoneEv{Type: uint32(bpf.IopathEvTypeEV_RQ_COMPLETE), Rq: 0xff01, Ts: 2000, Bytes: 4096}
	if err := d.Dispatch(e, rawPrefix(&done, unsafe.Sizeof(done))); err != nil {
		t.Fatal(err)
	}
	op := bpf.IopathOp{Sys: uint32(bpf.IopathOpSysSYS_PREAD64), Pid: 100, Tid: 7,
		OpId: 7<<32 | 1, StartNs: 800, EndNs: 2100, Ret: 4096, Count: 4096, Ino: 42, Dev: benchDev,
		BiosQueued: 1, BioBytes: 4096, PagesAdded: 1, PagesInRange: 1, PathDepth: 1, PathDone: 1, Path: pathOf("f"), PathSeq: 1}
	for _, raw := range [][]byte{pathRec(&op), opRec(&op)} {
		if err := d.Dispatch(e, raw); err != nil {
			t.Fatal(err)
		}
	}
	e.Flush()
	if len(got) != 1 || got[0].Path != "/f" || len(got[0].Bios) != 1 || got[0].Bios[0].Bytes != 4096 {
		t.Fatalf("records from cut events: %+v", got)
	}
}
