package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

func hitVal(calls, bytes uint64, comm string) bpf.IopathStatVal {
	v := bpf.IopathStatVal{Calls: calls, BytesRequested: bytes, BytesReturned: bytes, Pages: calls}
	for i := 0; i < len(comm) && i < len(v.Comm)-1; i++ {
		v.Comm[i] = int8(comm[i])
	}
	return v
}

// The kernel's maps after the repro of issue 10 item 3 (hit_stats full):
// file A's 1000 cached 1-byte preads and B's one went to the process's
// "other files" bucket; the summary keeps them in the process's totals, in
// no file's, and lists them as not itemized.
func TestHitsNotItemizedKeepTotals(t *testing.T) {
	s := enginetest.NewStream()
	e := s.E
	// One streamed call (a cold read of file 42) and two itemized files.
	o := enginetest.Op(1<<32|1, bpf.IopathOpSysSYS_PREAD64, 0, 1, 1, 1000, 2000)
	enginetest.AddRange(o, 0, 1, engine.RangeAdded)
	e.HandleOp(o)
	e.Flush()
	e.AddHits(bpf.IopathStatKey{Ino: 7, Pid: 100, Dev: enginetest.Dev}, hitVal(3, 3, "reader"))
	e.AddHits(bpf.IopathStatKey{Ino: 8, Pid: 100, Dev: enginetest.Dev}, hitVal(5, 5, "reader"))
	// Not itemized: reads (A and B) and writes of pid 100; reads of no process.
	e.AddHitsNotItemized(100, false, hitVal(1000, 1000, "reader"))
	e.AddHitsNotItemized(100, false, hitVal(1, 1, "reader"))
	e.AddHitsNotItemized(100, true, hitVal(4, 40, "reader"))
	e.AddHitsNotItemized(0, false, hitVal(9, 9, "other"))
	e.AddHitsNotItemized(100, false, bpf.IopathStatVal{}) // an empty per-CPU sum: ignored
	sum := e.Summary()

	if len(sum.Pids) != 1 || sum.Pids[0].Pid != 100 {
		t.Fatalf("pids %+v, want only 100", sum.Pids)
	}
	p := sum.Pids[0].Totals
	want := record.Totals{Calls: 1 + 3 + 5 + 1001 + 4, ReadCalls: 1 + 3 + 5 + 1001, WriteCalls: 4,
		BytesRequested: 1 + 3 + 5 + 1001 + 40, ReadBytesReq: 1 + 3 + 5 + 1001, PagesHit: 3 + 5 + 1001}
	if p.Calls != want.Calls || p.ReadCalls != want.ReadCalls || p.WriteCalls != want.WriteCalls ||
		p.BytesRequested != want.BytesRequested || p.ReadBytesReq != want.ReadBytesReq || p.PagesHit != want.PagesHit {
		t.Errorf("pid totals %+v\nwant calls %d (read %d, write %d), bytes %d (read %d), pages hit %d", p,
			want.Calls, want.ReadCalls, want.WriteCalls, want.BytesRequested, want.ReadBytesReq, want.PagesHit)
	}
	files := map[uint64]record.Totals{}
	var fileCalls uint64
	for _, f := range sum.Files {
		files[f.Ino] = f.Totals
		fileCalls += f.Calls
	}
	if len(files) != 3 || files[7].Calls != 3 || files[7].BytesRequested != 3 || files[8].Calls != 5 || files[8].PagesHit != 5 {
		t.Errorf("files %+v, want 42 (1 call), 7 (3 calls, 3 bytes), 8 (5 calls, 5 pages)", files)
	}
	var notCalls uint64
	for _, n := range sum.HitsNotItemized {
		if n.Pid != 0 {
			notCalls += n.Calls
		}
	}
	if fileCalls+notCalls != p.Calls {
		t.Errorf("files' calls %d + not itemized %d != pid's %d", fileCalls, notCalls, p.Calls)
	}
	wantNot := []record.HitsNotItemized{
		{Pid: 0, Comm: "other", Calls: 9, BytesRequested: 9, BytesReturned: 9, Pages: 9},
		{Pid: 100, Comm: "reader", Calls: 1001, BytesRequested: 1001, BytesReturned: 1001, Pages: 1001},
		{Pid: 100, Comm: "reader", Write: true, Calls: 4, BytesRequested: 40, BytesReturned: 40, Pages: 4},
	}
	if len(sum.HitsNotItemized) != len(wantNot) {
		t.Fatalf("hits_not_itemized %+v, want %+v", sum.HitsNotItemized, wantNot)
	}
	for i := range wantNot {
		if sum.HitsNotItemized[i] != wantNot[i] {
			t.Errorf("hits_not_itemized[%d] = %+v, want %+v", i, sum.HitsNotItemized[i], wantNot[i])
		}
	}
}

// Nothing lost: the summary always carries the list, empty when every hit
// was itemized.
func TestHitsNotItemizedEmptyList(t *testing.T) {
	s := enginetest.NewStream()
	s.E.AddHits(bpf.IopathStatKey{Ino: 7, Pid: 100, Dev: enginetest.Dev}, hitVal(3, 3, "reader"))
	b, err := json.Marshal(s.E.Summary())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"hits_not_itemized":[]`) {
		t.Errorf("summary JSON without an empty hits_not_itemized list: %s", b)
	}
}

// A deleted file's cache hits stay on its row when a new file reuses its
// inode number (the kernel keys hits by i_generation too): they were
// credited to the new file before.
func TestHitsOfReusedInode(t *testing.T) {
	s := enginetest.NewStream()
	o := enginetest.Named(enginetest.Op(uint64(7)<<32|1, bpf.IopathOpSysSYS_WRITE, 0, 4096, 4096, 100, 200), "app", "/var/tmp/a.tmp")
	o.PathGen = 11
	s.E.HandleOp(o)
	o = enginetest.Named(enginetest.Op(uint64(7)<<32|2, bpf.IopathOpSysSYS_WRITE, 0, 4096, 4096, 300, 400), "app", "/var/tmp/b0")
	o.PathGen = 22 // the same inode number 42, another file
	s.E.HandleOp(o)
	s.E.AddHits(bpf.IopathStatKey{Ino: 42, Pid: 100, Dev: enginetest.Dev, Gen: 11}, hitVal(1025, 2048, "app"))
	s.E.AddHits(bpf.IopathStatKey{Ino: 42, Pid: 100, Dev: enginetest.Dev, Gen: 22}, hitVal(1, 1, "app"))
	var a, b *record.FileSummary
	sum := s.E.Summary()
	for i := range sum.Files {
		switch f := &sum.Files[i]; f.Generation {
		case 11:
			a = f
		case 22:
			b = f
		}
	}
	if a == nil || b == nil {
		t.Fatalf("rows %+v: want one per generation", sum.Files)
	}
	if a.ReadCalls != 1025 || b.ReadCalls != 1 || a.Path != "/var/tmp/a.tmp" || b.Path != "/var/tmp/b0" {
		t.Errorf("deleted file %s: %d read calls, new file %s: %d; want 1025 and 1", a.Path, a.ReadCalls, b.Path, b.ReadCalls)
	}
}
