package timeline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
)

// mmapFaults: a cold read fault on a mapping (read-around of 64 pages in
// two bios), then a store to a clean page of it (a write fault dirtying one
// page), carried to disk by the flusher.
func mmapFaults() []any {
	path := "/var/tmp/iopath-demo/mapped.dat"
	ra := func(sector, queue uint64) record.Bio {
		return record.Bio{Dev: disk, Sector: sector, Bytes: 131072, Rwbs: "RA", QueueNs: queue, IssueNs: queue + 5_000,
			CompleteNs: base + 900_000, D2CNs: base + 900_000 - queue - 5_000, Q2CNs: base + 900_000 - queue, RequestBytes: 262144, RequestBios: 2}
	}
	read := &record.Fault{Type: record.TypeFault, OpID: opID(demoPid+1, 1), TimeNs: base + 100_000, Pid: demoPid, Tid: demoPid + 1,
		Comm: "app", Path: path, Dev: disk, Ino: 15, FS: "ext4", Index: 3, Address: 0x7f0000003000, Major: true, Retried: true,
		DurationNs: 850_000, BlockedNs: 790_000,
		Cache: record.Cache{PagesRequested: 1, PagesMissed: 1, PagesAdded: 64,
			Readahead: []record.Readahead{{Kind: record.ReadaheadReadAround, StartIndex: 0, Pages: 64, AsyncPages: 16, Source: "kernel"}}},
		Bios: []record.Bio{ra(8192, base+120_000), ra(8448, base+121_000)}}
	write := &record.Fault{Type: record.TypeFault, OpID: opID(demoPid+1, 2), TimeNs: base + 1_000_000, Pid: demoPid, Tid: demoPid + 1,
		Comm: "app", Path: path, Dev: disk, Ino: 15, FS: "ext4", Index: 5, Address: 0x7f0000005000, Write: true, DurationNs: 6_000,
		Cache: record.Cache{PagesRequested: 1, PagesHit: 1}, Bios: []record.Bio{}, DirtiedPages: 1,
		DirtiedRanges: []record.PageRange{{Index: 5, Pages: 1}}}
	data := record.Bio{Dev: disk, Sector: 8232, Bytes: 4096, Rwbs: "W", QueueNs: base + 30_000_000, IssueNs: base + 30_005_000,
		CompleteNs: base + 30_200_000, D2CNs: 195_000, Q2CNs: 200_000, RequestBytes: 4096, RequestBios: 1}
	wb := &record.Writeback{Type: "writeback", TimeNs: data.QueueNs, Worker: "kworker/u8:2", WorkerTid: 77, Reason: "periodic",
		Dev: disk, Ino: 15, Path: path, Bios: []record.Bio{data}, Pages: 1, TrackedPages: 1}
	persisted := &record.Persisted{Type: "persisted", OpID: write.OpID, Pid: demoPid, Dev: disk, Ino: 15, Path: path,
		Pages: 1, BytesWritten: 4096, Outcome: "written", DirtiedNs: write.TimeNs + 2_000, PersistedNs: data.CompleteNs,
		DirtyToDiskNs: data.CompleteNs - write.TimeNs - 2_000, Reason: "periodic", Worker: wb.Worker, WorkerTid: 77,
		Sector: data.Sector, RequestBytes: 4096, Fault: &record.FaultRef{Address: write.Address, Index: write.Index}}
	return []any{read, write, wb, persisted, summaryOf(0, 0, 262144, 4096)}
}

// Faults are drawn like calls: a slice on the faulting thread's track, an
// arrow to each bio of its read-around, and for a write fault the arrow
// from its dirtied page through the flusher to the end of the dirty span.
func TestChromeFaults(t *testing.T) {
	recs := mmapFaults()
	out, st := chromeAndStats(t, recs)
	tr := checkTrace(t, out)
	read := recs[0].(*record.Fault)
	f := one(t, tr, catFault, "major fault")
	if !sameUs(f.Ts, read.TimeNs) || !sameUs(f.DurUs(), read.DurationNs) || f.Pid != read.Pid || f.Tid != read.Tid {
		t.Errorf("fault slice %+v: want %v+%v µs on %d/%d", f, usOf(read.TimeNs), usOf(read.DurationNs), read.Pid, read.Tid)
	}
	if f.Args["index"] != 3.0 || f.Args["address"] != "0x7f0000003000" || f.Args["major"] != true || f.Args["retried"] != true ||
		f.Args["readahead"] != "read-around 64 pages from page 0" || f.Args["bios"] != 2.0 || f.Args["pages_added"] != 64.0 {
		t.Errorf("fault args %v", f.Args)
	}
	bios := tr.find(catBio, "RA 128 KiB")
	if len(bios) != 2 {
		t.Fatalf("want the fault's 2 read-around bios, got %d", len(bios))
	}
	for _, b := range bios {
		if n := tr.flowsBetween(f, b); n != 1 {
			t.Errorf("%d arrows from the fault to its bio at sector %v, want 1", n, b.Args["sector"])
		}
	}
	w := one(t, tr, catFault, "minor fault (write)")
	span := one(t, tr, catDirty, "1 dirty page → disk")
	if n := tr.flowsBetween(w, span); n != 1 || w.Args["dirtied_pages"] != 1.0 {
		t.Errorf("write fault %v: %d arrows to its dirty-pages span, want 1", w.Args, n)
	}
	if st.Faults != 2 || st.Calls != 0 || st.Bios != 3 || st.DirtySpans != 1 {
		t.Errorf("stats %+v", st)
	}
	// The report's histograms count fault latency by kind.
	var b bytes.Buffer
	tl := New(NewReport(&b, "faults", 0))
	for _, r := range recs {
		Feed(tl, r)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"major fault latency"`, `"minor fault (write) latency"`, `"fault"`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %s", s)
		}
	}
}
