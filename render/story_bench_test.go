package render

import (
	"testing"

	"github.com/iopath/iopath/record"
)

// BenchmarkStorySyscall: the text story of a cold 4 KiB read (what the
// default mode prints per missed call).
func BenchmarkStorySyscall(b *testing.B) {
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		_ = SyscallStory(r)
	}
}

// benchRecord is a cold 4 KiB read's record.
func benchRecord() *record.Syscall {
	return &record.Syscall{Type: "syscall", OpID: 1, TimeNs: 1e12, Pid: 100, Tid: 100, Comm: "fio", Syscall: "pread64",
		Fd: 3, Path: "/var/tmp/iopath-bench.X/cold", Dev: "254:0", Ino: 42, FS: "ext4", Offset: 409600,
		RequestedBytes: 4096, ReturnedBytes: 4096, DurationNs: 70_000, BlockedNs: 60_000,
		Cache: record.Cache{PagesRequested: 1, PagesMissed: 1, PagesAdded: 1,
			AddedRanges: []record.PageRange{{Index: 100, Pages: 1}},
			Readahead:   []record.Readahead{{Kind: "sync", StartIndex: 100, Pages: 1}}},
		Bios: []record.Bio{{Dev: "254:0", Sector: 8000, Bytes: 4096, Rwbs: "RA", QueueNs: 1e12 + 1000, IssueNs: 1e12 + 5000, CompleteNs: 1e12 + 65000}},
	}
}
