package tracer

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/iopath/iopath/bpf"
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
	s := newStream(t)
	id := uint64(7)<<32 | 1
	o := opEv(id, bpf.IopathOpSysSYS_PREAD64, 8192, 4096, 4096, 100, 300)
	o.BiosQueued = 1
	addRange(o, 2, 1, rangeAdded)
	copy(o.Comm[:], []int8{'c', 'a', 't'})
	o.PathDepth, o.PathDone, o.PathSeq = 2, 1, 1
	copy(o.Path[0][:], []int8{'f'})
	copy(o.Path[1][:], []int8{'t', 'm', 'p'})
	for _, raw := range [][]byte{
		rawOf(t, issueEv(0xa, 110, flRead, own{op: id, bio: 0xb1, sector: 16, bytes: 4096, queue: 105})),
		rawOf(t, doneEv(0xa, 250, 0)),
		pathRec(o),
		opRec(o),
	} {
		if err := Dispatch(s.e, raw); err != nil {
			t.Fatal(err)
		}
	}
	c := s.syscalls()
	if len(c) != 1 || c[0].Comm != "cat" || c[0].Path != "/tmp/f" || c[0].Syscall != "pread64" || len(c[0].Bios) != 1 || c[0].Bios[0].Sector != 16 {
		t.Fatalf("decoded %+v", c)
	}
}

func TestDispatchRejectsBadRecords(t *testing.T) {
	s := newStream(t)
	if err := Dispatch(s.e, []byte{1, 0}); err == nil {
		t.Error("short record accepted")
	}
	if err := Dispatch(s.e, []byte{99, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("unknown type accepted")
	}
	if err := Dispatch(s.e, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("truncated EV_OP accepted")
	}
}

// A path the kernel could not walk to the root is marked as a suffix.
func TestOpPathSuffix(t *testing.T) {
	o := &bpf.IopathOp{PathDepth: 2}
	copy(o.Path[0][:], []int8{'f'})
	copy(o.Path[1][:], []int8{'d'})
	if p := opPath(o); p != ".../d/f" {
		t.Errorf("path %q", p)
	}
}

// A name cut at PART_LEN-1 bytes is marked where it was cut, not at the end.
func TestOpPathTruncationMark(t *testing.T) {
	o := &bpf.IopathOp{PathDepth: 2, PathDone: 1, PathTrunc: 1 << 1}
	copy(o.Path[0][:], []int8{'f'})
	copy(o.Path[1][:], []int8{'l', 'o', 'n', 'g'})
	if p := opPath(o); p != "/long…/f" {
		t.Errorf("path %q, want /long…/f", p)
	}
}
