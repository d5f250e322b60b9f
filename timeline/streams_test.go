package timeline

import "github.com/iopath/iopath/record"

// Synthetic record streams, in the order record.Engine emits them for the
// demos (a call's record once its bios completed; a writeback's record, then
// its persisted records, when its bio completes, before the record of the
// fsync that waited for it). Times are CLOCK_MONOTONIC ns.

const (
	base    = 5_000_000_000_000 // 5000 s after boot
	demoPid = 4242
	disk    = "254:0"
)

func opID(tid uint32, seq uint64) uint64 { return uint64(tid)<<32 | seq }

// read1Byte: a cold 1-byte read (sync readahead of 4 pages, one RA bio),
// then the same read warm (a hit, no bio).
func read1Byte() []any {
	cold := &record.Syscall{Type: "syscall", OpID: opID(demoPid, 1), TimeNs: base + 100_000, Pid: demoPid, Tid: demoPid,
		Comm: "iopath", Syscall: "read", Fd: 3, Path: "/var/tmp/iopath-demo/read-1byte.dat", Dev: disk, Ino: 12, FS: "ext4",
		RequestedBytes: 1, ReturnedBytes: 1, DurationNs: 270_300, BlockedNs: 205_200,
		Cache: record.Cache{PagesRequested: 1, PagesMissed: 1, PagesAdded: 4,
			Readahead: []record.Readahead{{Kind: "sync", StartIndex: 0, Pages: 4, AsyncPages: 3, Source: "tracepoint"}}},
		Bios: []record.Bio{{Dev: disk, Sector: 2048, Bytes: 16384, Rwbs: "RA", QueueNs: base + 130_000, IssueNs: base + 140_000,
			CompleteNs: base + 293_500, D2CNs: 153_500, Q2CNs: 163_500, RequestBytes: 16384, RequestBios: 1}}}
	warm := &record.Syscall{Type: "syscall", OpID: opID(demoPid, 2), TimeNs: base + 400_000, Pid: demoPid, Tid: demoPid,
		Comm: "iopath", Syscall: "read", Fd: 3, Path: cold.Path, Dev: disk, Ino: 12, FS: "ext4",
		RequestedBytes: 1, ReturnedBytes: 1, DurationNs: 1_100,
		Cache: record.Cache{PagesRequested: 1, PagesHit: 1}, Bios: []record.Bio{}}
	return []any{cold, warm, summaryOf(2, 1, 16384, 0)}
}

// write1ByteFsync: a 1-byte write dirtying one page, then fsync: the data
// bio (written by the fsync's own writeback), the journal commit and the
// cache flush it waited for.
func write1ByteFsync() []any {
	write := &record.Syscall{Type: "syscall", OpID: opID(demoPid, 1), TimeNs: base + 50_000, Pid: demoPid, Tid: demoPid,
		Comm: "iopath", Syscall: "write", Fd: 3, Path: "/var/tmp/iopath-demo/write-1byte.dat", Dev: disk, Ino: 13, FS: "ext4",
		RequestedBytes: 1, ReturnedBytes: 1, DurationNs: 21_000, Bios: []record.Bio{},
		Cache: record.Cache{PagesAdded: 1}, DirtiedPages: 1, DirtiedRanges: []record.PageRange{{Index: 0, Pages: 1}}}
	fsyncID := opID(demoPid, 2)
	data := record.Bio{Dev: disk, Sector: 4096, Bytes: 4096, Rwbs: "WS", QueueNs: base + 120_000, IssueNs: base + 125_000,
		CompleteNs: base + 410_000, D2CNs: 285_000, Q2CNs: 290_000, RequestBytes: 4096, RequestBios: 1}
	wb := &record.Writeback{Type: "writeback", TimeNs: data.QueueNs, Worker: "iopath", WorkerTid: demoPid, Reason: "fsync",
		Dev: disk, Ino: 13, Path: write.Path, OpID: fsyncID, Bios: []record.Bio{data}, Pages: 1, TrackedPages: 1}
	persisted := &record.Persisted{Type: "persisted", OpID: write.OpID, Pid: demoPid, Dev: disk, Ino: 13, Path: write.Path,
		Pages: 1, BytesWritten: 4096, Outcome: "written", DirtiedNs: base + 60_000, PersistedNs: data.CompleteNs,
		DirtyToDiskNs: data.CompleteNs - (base + 60_000), Reason: "fsync", Worker: "iopath", WorkerTid: demoPid,
		Sector: data.Sector, RequestBytes: 4096, ByOpID: fsyncID}
	data.Kind = "data"
	journal := record.Bio{Dev: disk, Sector: 900_000, Bytes: 8192, Rwbs: "WS", QueueNs: base + 450_000, IssueNs: base + 452_000,
		CompleteNs: base + 700_000, D2CNs: 248_000, Q2CNs: 250_000, RequestBytes: 8192, RequestBios: 1, Kind: "journal"}
	flush := record.Bio{Dev: disk, Sector: 0, Bytes: 0, Rwbs: "FWS", QueueNs: base + 702_000, IssueNs: base + 703_000,
		CompleteNs: base + 900_000, D2CNs: 197_000, Q2CNs: 198_000, Kind: "flush"}
	fsync := &record.Syscall{Type: "syscall", OpID: fsyncID, TimeNs: base + 100_000, Pid: demoPid, Tid: demoPid,
		Comm: "iopath", Syscall: "fsync", Fd: 3, Path: write.Path, Dev: disk, Ino: 13, FS: "ext4",
		DurationNs: 820_000, BlockedNs: 780_000, Bios: []record.Bio{data, journal, flush}}
	return []any{write, wb, persisted, fsync, summaryOf(2, 0, 0, 12288)}
}

// write1BytePeriodic: a 1-byte write, carried to disk 30 s later by the
// flusher's periodic writeback.
func write1BytePeriodic() []any {
	write := &record.Syscall{Type: "syscall", OpID: opID(demoPid, 1), TimeNs: base + 50_000, Pid: demoPid, Tid: demoPid,
		Comm: "iopath", Syscall: "write", Fd: 3, Path: "/var/tmp/iopath-demo/write-1byte.dat", Dev: disk, Ino: 14, FS: "ext4",
		RequestedBytes: 1, ReturnedBytes: 1, DurationNs: 21_000, Bios: []record.Bio{},
		Cache: record.Cache{PagesAdded: 1}, DirtiedPages: 1}
	later := uint64(base + 30_000_000_000)
	data := record.Bio{Dev: disk, Sector: 8192, Bytes: 4096, Rwbs: "W", QueueNs: later, IssueNs: later + 20_000,
		CompleteNs: later + 300_000, D2CNs: 280_000, Q2CNs: 300_000, RequestBytes: 4096, RequestBios: 1}
	wb := &record.Writeback{Type: "writeback", TimeNs: later, Worker: "kworker/u8:1", WorkerTid: 77, Reason: "periodic",
		Dev: disk, Ino: 14, Path: write.Path, Bios: []record.Bio{data}, Pages: 1, TrackedPages: 1}
	persisted := &record.Persisted{Type: "persisted", OpID: write.OpID, Pid: demoPid, Dev: disk, Ino: 14, Path: write.Path,
		Pages: 1, BytesWritten: 4096, Outcome: "written", DirtiedNs: base + 60_000, PersistedNs: data.CompleteNs,
		DirtyToDiskNs: data.CompleteNs - (base + 60_000), Reason: "periodic", Worker: "kworker/u8:1", WorkerTid: 77,
		Sector: data.Sector, RequestBytes: 4096}
	return []any{write, wb, persisted, summaryOf(1, 0, 0, 4096)}
}

func summaryOf(calls, reads, diskRead, diskWrite uint64) *record.Summary {
	t := record.Totals{Calls: calls, StreamedCalls: calls, ReadCalls: reads, DiskBytesRead: diskRead, DiskBytesWrite: diskWrite}
	return &record.Summary{Type: "summary", DurationNs: 1_000_000, Pids: []record.PidSummary{{Pid: demoPid, Comm: "iopath", Totals: t}},
		MapEvictions: map[string]uint64{"pending_calls": 0}, Truncations: map[string]uint64{}, Attach: map[string]string{},
		MissedRuns: map[string]uint64{}, Diagnostics: map[string]uint64{}}
}
