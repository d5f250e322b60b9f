package demo

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
)

func TestRegistry(t *testing.T) {
	want := []string{"direct-vs-buffered", "iodepth", "mmap-vs-read", "read-1byte", "read-vs-fread", "seq-vs-rand", "sync-vs-async", "write-1byte"}
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

// MmapRunOf and MmapWhy on synthetic records: a read-around major fault
// with two bios, a minor fault that slept without a bio, a fault and a
// call on other files, a madvise call (not a read) on the file.
func TestMmapRun(t *testing.T) {
	dev := uint32(254<<20 | 1)
	d := kernel.Dev(dev)
	bio := func(bytes uint32) record.Bio { return record.Bio{Dev: "254:1", Bytes: bytes} }
	recs := []any{
		&record.Fault{TimeNs: 300, Dev: d, Ino: 7, Index: 16, DurationNs: 50, BlockedNs: 40, FaultAround: &record.PageRange{Index: 16, Pages: 16}},
		&record.Fault{TimeNs: 100, Dev: d, Ino: 7, Major: true, DurationNs: 150, BlockedNs: 120,
			Cache: record.Cache{Readahead: []record.Readahead{{Kind: record.ReadaheadReadAround, Pages: 2048}}},
			Bios:  []record.Bio{bio(8192), bio(1 << 20)}},
		&record.Fault{TimeNs: 200, Dev: d, Ino: 8, Major: true, Bios: []record.Bio{bio(4096)}},
		&record.Syscall{TimeNs: 50, Dev: d, Ino: 7, Syscall: "madvise"},
		&record.Syscall{TimeNs: 60, Dev: d, Ino: 9, Syscall: "pread64"},
	}
	r := MmapRunOf("mmap", recs, dev, 7)
	if r.Calls != 0 || r.Faults != 2 || r.Major != 1 || r.WaitedMinor != 1 || r.Blocked != 2 || r.Bios != 2 ||
		r.BioBytes != 8192+1<<20 || r.MinBio != 8192 || r.MaxBio != 1<<20 || r.SpanNs != 250 || r.BlockedNs != 160 ||
		r.FirstRA == nil || r.FirstRA.Pages != 2048 || r.RAKinds[record.ReadaheadReadAround] != 1 || r.MaxAround != 16 || len(r.recs) != 2 {
		t.Errorf("run %+v", r)
	}
	read := MmapRunOf("read", []any{&record.Syscall{TimeNs: 10, Dev: d, Ino: 7, Syscall: "pread64", DurationNs: 5, Bios: []record.Bio{bio(4096)}}}, dev, 7)
	rnd := &MmapRun{Name: "mmap-random", Faults: 2048, Major: 2048, Bios: 2048, BioBytes: 2048 * 4096, MinBio: 4096, MaxBio: 4096, SpanNs: 2500}
	why := MmapWhy([]*MmapRun{read, r, rnd}, 8192)
	for _, s := range []string{"read(2): 1 call of 1 byte", "2 faults on the file were traced, 1 major", "read-around of 2048 pages from page 0",
		"windows up to 16 pages", "1 minor fault slept", "each major fault read only its own page", "10.0× the time of the plain mapping"} {
		if !strings.Contains(why, s) {
			t.Errorf("explanation lacks %q:\n%s", s, why)
		}
	}
	if tab := MmapTable([]*MmapRun{read, r, rnd}); !strings.Contains(tab, "8.0 KiB-1.0 MiB") || !strings.Contains(tab, "mmap-random") {
		t.Errorf("table:\n%s", tab)
	}
}

// issue 10: --dir /proc said it could not create files there, with mkdir's
// ENOENT ("no such file or directory").
func TestWorkDirKernelFS(t *testing.T) {
	_, _, err := workDir(&Options{Dir: "/proc"})
	if err == nil || err.Error() != "--dir /proc is on proc, a kernel filesystem that holds no files one can create: choose a directory on a disk-backed filesystem, e.g. --dir /var/tmp" {
		t.Errorf("--dir /proc: %v", err)
	}
}

// issue 10: a demo's explanation went to stdout unchecked (demo read-1byte
// > /dev/full: exit 0, nothing said). After a failed write no trace starts:
// the demo ends with the output's error.
func TestDemoStopsOnFailedOutput(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	o := &Options{Out: session.NewOut(full, "stdout")}
	fmt.Fprintln(o.Out, "iopath demo: the header")
	s, err := open(o, tracer.Options{}, 0, &traced{})
	var oe session.OutputError
	if s != nil || !errors.As(err, &oe) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("open after a failed write: session %v, error %v; want none and the ENOSPC OutputError", s, err)
	}
}
