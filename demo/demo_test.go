package demo

import (
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

func TestRegistry(t *testing.T) {
	want := []string{"direct-vs-buffered", "read-1byte", "read-vs-fread", "seq-vs-rand", "write-1byte"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("demos %q, want %q", got, want)
	}
	for _, n := range want {
		if d := Get(n); d == nil || d.Run == nil || d.Short == "" || !strings.Contains(List(), "  "+n+" ") {
			t.Errorf("demo %s: %+v", n, d)
		}
	}
	if Get("nope") != nil {
		t.Error("Get of an unknown demo")
	}
}

// CallStatsOf and FileRecords on synthetic records: two calls on the file
// (one merged request of two bios, one readahead window), one elsewhere.
func TestCallStats(t *testing.T) {
	dev := uint32(254<<20 | 1)
	if Kdev(kernel.Dev(dev)) != dev {
		t.Fatalf("Kdev(%q) = %d, want %d", kernel.Dev(dev), Kdev(kernel.Dev(dev)), dev)
	}
	bio := func(issue uint64, bytes uint32) record.Bio {
		return record.Bio{Dev: "254:1", Bytes: bytes, RequestBytes: 8192, IssueNs: issue, CompleteNs: issue + 100, D2CNs: 100}
	}
	recs := []any{
		&record.Syscall{TimeNs: 20, Dev: kernel.Dev(dev), Ino: 7, RequestedBytes: 4096, DurationNs: 300, BlockedNs: 50,
			Cache: record.Cache{PagesRequested: 1, PagesMissed: 1, PagesAdded: 2,
				Readahead: []record.Readahead{{Kind: "sync", Pages: 2}}},
			Bios: []record.Bio{bio(1000, 4096), bio(1000, 4096)}},
		&record.Syscall{TimeNs: 10, Dev: kernel.Dev(dev), Ino: 7, RequestedBytes: 4096, DurationNs: 100,
			Cache: record.Cache{PagesRequested: 1, PagesHit: 1}},
		&record.Syscall{TimeNs: 5, Dev: kernel.Dev(dev), Ino: 8, RequestedBytes: 1},
		&record.Writeback{Ino: 7},
	}
	calls := FileRecords(recs, dev, 7)
	if len(calls) != 2 || calls[0].TimeNs != 10 {
		t.Fatalf("file records %+v", calls)
	}
	s := CallStatsOf(calls)
	if s.Calls != 2 || s.BytesReq != 8192 || s.PagesReq != 2 || s.Hits != 1 || s.Missed != 1 || s.Added != 2 ||
		s.RA != 1 || s.RASync != 1 || s.RAMaxPages != 2 || s.Bios != 2 || s.DiskBytes != 8192 ||
		s.Requests != 1 || s.RequestBytes != 8192 || s.Waited != 1 || s.D2CBios != 2 || s.D2CNs != 200 {
		t.Errorf("stats %+v", s)
	}
	if s.meanDur() != 200 || s.quantileDur(0.5) != 300 || s.quantileDur(0) != 100 {
		t.Errorf("durations %v: mean %d, p50 %d", s.DurNs, s.meanDur(), s.quantileDur(0.5))
	}
}
