package tracer

import (
	"testing"
	"unsafe"

	"github.com/iopath/iopath/bpf"
)

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

func TestRecordDecoderPaths(t *testing.T) {
	var d recordDecoder
	pathEnd := unsafe.Offsetof(bpf.IopathOp{}.Path)
	// First record of thread 7 on inode 42: two names, cut after them.
	full := bpf.IopathOp{Type: 1, Tid: 7, Ino: 42, Dev: benchDev, PathDepth: 2, PathDone: 1, Path: pathOf("f", "tmp"), Ret: 1}
	o := d.op(rawPrefix(&full, pathEnd+2*48))
	if got := opPath(o); got != "/tmp/f" {
		t.Fatalf("cut record: path %q, want /tmp/f", got)
	}
	// A stale name beyond the cut must not leak in from an earlier record.
	full3 := bpf.IopathOp{Type: 1, Tid: 9, Ino: 5, Dev: benchDev, PathDepth: 3, PathDone: 1, Path: pathOf("a", "b", "c")}
	d.op(rawPrefix(&full3, pathEnd+3*48))
	one := bpf.IopathOp{Type: 1, Tid: 9, Ino: 6, Dev: benchDev, PathDepth: 1, PathDone: 1, Path: pathOf("z")}
	if o := d.op(rawPrefix(&one, pathEnd+48)); o.Path[1][0] != 0 || opPath(o) != "/z" {
		t.Fatalf("tail not zeroed: %q", opPath(o))
	}
	// Next record of thread 7 on the same file: no path sent.
	cached := bpf.IopathOp{Type: 1, Tid: 7, Ino: 42, Dev: benchDev, PathCached: 1, Ret: 2}
	o = d.op(rawPrefix(&cached, pathEnd))
	if got := opPath(o); got != "/tmp/f" || o.Ret != 2 {
		t.Fatalf("cached record: path %q ret %d, want /tmp/f 2", got, o.Ret)
	}
	// Another thread claiming a cached path it never sent: counted, no path.
	other := bpf.IopathOp{Type: 1, Tid: 8, Ino: 42, Dev: benchDev, PathCached: 1}
	if o = d.op(rawPrefix(&other, pathEnd)); opPath(o) != "" || d.MissingPaths != 1 {
		t.Fatalf("unknown cached path: %q, missing %d", opPath(o), d.MissingPaths)
	}
	// Thread 7 on another inode claiming the cache (its path record lost).
	moved := bpf.IopathOp{Type: 1, Tid: 7, Ino: 43, Dev: benchDev, PathCached: 1}
	if o = d.op(rawPrefix(&moved, pathEnd)); opPath(o) != "" || d.MissingPaths != 2 {
		t.Fatalf("cached path of another inode: %q, missing %d", opPath(o), d.MissingPaths)
	}
	// A whole (uncut) cached record in the ring buffer is not modified in place.
	whole := rawPrefix(&cached, unsafe.Sizeof(cached))
	o = d.op(whole)
	if opPath(o) != "/tmp/f" || (*bpf.IopathOp)(unsafe.Pointer(&whole[0])).PathDepth != 0 {
		t.Fatalf("whole cached record: path %q, or ring buffer written", opPath(o))
	}
}

func TestDispatchShortRecords(t *testing.T) {
	var got []*Syscall
	e := NewEngine(&Kernel{}, func(r any) {
		if s, ok := r.(*Syscall); ok {
			got = append(got, s)
		}
	})
	issue := bpf.IopathRqIssueEv{Type: uint32(bpf.IopathEvTypeEV_RQ_ISSUE), Dev: benchDev, Rq: 0xff01, Ts: 1000,
		Sector: 8, Bytes: 4096, NrBios: 1, NrOwn: 1}
	issue.Own[0] = bpf.IopathIssueOwn{OpId: 7<<32 | 1, Bio: 0xb10, Sector: 8, Bytes: 4096, QueueNs: 900, Pid: 100, Tid: 7}
	issue.Own[1] = bpf.IopathIssueOwn{OpId: 99, Bio: 0xbad} // beyond the cut: must not be seen
	ownEnd := unsafe.Offsetof(issue.Own)
	for _, n := range []uintptr{ownEnd - 1, 3} {
		if err := Dispatch(e, rawPrefix(&issue, n)); err == nil {
			t.Fatalf("a %d-byte issue record was accepted", n)
		}
	}
	if err := Dispatch(e, rawPrefix(&issue, ownEnd+unsafe.Sizeof(issue.Own[0]))); err != nil {
		t.Fatal(err)
	}
	done := bpf.IopathRqDoneEv{Type: uint32(bpf.IopathEvTypeEV_RQ_COMPLETE), Rq: 0xff01, Ts: 2000, Bytes: 4096}
	if err := Dispatch(e, rawPrefix(&done, unsafe.Sizeof(done))); err != nil {
		t.Fatal(err)
	}
	op := bpf.IopathOp{Type: uint32(bpf.IopathEvTypeEV_OP), Sys: uint32(bpf.IopathOpSysSYS_PREAD64), Pid: 100, Tid: 7,
		OpId: 7<<32 | 1, StartNs: 800, EndNs: 2100, Ret: 4096, Count: 4096, Ino: 42, Dev: benchDev,
		BiosQueued: 1, BioBytes: 4096, PagesAdded: 1, PagesInRange: 1, PathDepth: 1, PathDone: 1, Path: pathOf("f")}
	if err := Dispatch(e, rawPrefix(&op, unsafe.Offsetof(op.Path)+48)); err != nil {
		t.Fatal(err)
	}
	e.Flush()
	if len(got) != 1 || got[0].Path != "/f" || len(got[0].Bios) != 1 || got[0].Bios[0].Bytes != 4096 {
		t.Fatalf("records from cut events: %+v", got)
	}
}
