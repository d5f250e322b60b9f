package timeline

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/iopath/iopath/record"
)

// countWriter counts bytes and lines (a Chrome trace has one event a
// line, between a header and a trailer line) and keeps none.
type countWriter struct{ n, lines int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// syntheticStream calls emit with n records: reads with a bio on threads
// threads, and every 16th a write whose page the flusher writes back.
func syntheticStream(n, threads int, emit func(any)) {
	ts := uint64(base)
	for i := range n {
		tid := uint32(1000 + i%threads)
		id := opID(tid, uint64(i))
		ts += 2000
		if i%16 == 15 {
			w := &record.Syscall{Type: "syscall", OpID: id, TimeNs: ts, Pid: 1000, Tid: tid, Comm: "w", Syscall: "write",
				Dev: disk, Ino: 7, RequestedBytes: 4096, ReturnedBytes: 4096, DurationNs: 800, DirtiedPages: 1, Bios: []record.Bio{}}
			emit(w)
			b := record.Bio{Dev: disk, Sector: uint64(i) * 8, Bytes: 4096, Rwbs: "W", QueueNs: ts + 900, IssueNs: ts + 950, CompleteNs: ts + 1500}
			emit(&record.Writeback{Type: "writeback", TimeNs: b.QueueNs, Worker: "kworker/u8:1", WorkerTid: 77, Reason: "periodic",
				Dev: disk, Ino: 7, Bios: []record.Bio{b}, Pages: 1, TrackedPages: 1})
			emit(&record.Persisted{Type: "persisted", OpID: id, Pid: 1000, Dev: disk, Ino: 7, Pages: 1, Outcome: "written",
				DirtiedNs: ts + 100, PersistedNs: b.CompleteNs, Sector: b.Sector})
			continue
		}
		emit(&record.Syscall{Type: "syscall", OpID: id, TimeNs: ts, Pid: 1000, Tid: tid, Comm: "r", Syscall: "read",
			Dev: disk, Ino: 7, Offset: uint64(i) * 4096, RequestedBytes: 4096, ReturnedBytes: 4096, DurationNs: 1800,
			Cache: record.Cache{PagesRequested: 1, PagesMissed: 1, PagesAdded: 1},
			Bios:  []record.Bio{{Dev: disk, Sector: uint64(i) * 8, Bytes: 4096, Rwbs: "R", QueueNs: ts + 100, IssueNs: ts + 200, CompleteNs: ts + 1700}}})
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMillionEventsBoundedMemory streams over a million trace events
// through the Chrome and report outputs and checks the heap does not grow
// with them: both write as records arrive and keep only bounded state.
func TestMillionEventsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1.3 M events (a few seconds)")
	}
	if os.Getenv("IOPATH_VM") == "1" {
		t.Skip("plain Go, no kernel involved: the host run covers it (under TCG it takes minutes)")
	}
	var cw, rw countWriter
	rep := NewReport(&rw, "memory", 0)
	tl := New(NewChrome(&cw), rep)
	const records = 250_000
	var early uint64
	n := 0
	syntheticStream(records, 64, func(r any) {
		Feed(tl, r)
		if n++; n == records*4/10 {
			early = heapAfterGC()
		}
	})
	late := heapAfterGC()
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	events := cw.lines - 3 // header, otherData, closing line
	t.Logf("%d records, %d trace events, %.1f MiB of trace, %.1f MiB of report (%d slices not drawn); heap %.2f MiB after 40%%, %.2f MiB at the end",
		n, events, float64(cw.n)/(1<<20), float64(rw.n)/(1<<20), rep.Omitted(), float64(early)/(1<<20), float64(late)/(1<<20))
	if events < 1_000_000 {
		t.Fatalf("only %d events: the test must stream at least 1 M", events)
	}
	// Holding the events would take hundreds of MiB (the trace is
	// cw.n bytes); bounded state is a few MiB at most, reached early.
	if late > early+2<<20 {
		t.Errorf("heap grew from %d to %d bytes while streaming: not bounded", early, late)
	}
	if rep.Omitted() == 0 {
		t.Errorf("the report drew every slice of %d records: its limit did not apply", records)
	}
}

// BenchmarkChrome measures the Chrome writer per record (a read with one bio).
func BenchmarkChrome(b *testing.B) {
	var cw countWriter
	tl := New(NewChrome(&cw))
	b.ReportAllocs()
	i := 0
	syntheticStream(b.N, 64, func(r any) { Feed(tl, r); i++ })
	tl.Close()
	b.ReportMetric(float64(cw.n)/float64(b.N), "bytes/record")
}
