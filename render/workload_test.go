package render

import (
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/workloads"
)

// The "workload under trace" section of a cold seq-read run, from a
// synthetic record (no root needed).
func TestWorkloadText(t *testing.T) {
	r := &record.Workload{Type: "workload", Kind: "seq-read", Pid: 4242, File: "/var/tmp/w/seq-read.dat", Dev: "254:1", Ino: 77,
		Ops: 64, FileReadCalls: 64, OtherCalls: 12, ReadBytesRequested: 262144,
		DiskBytesRead: 294912, DiskBytesPerOp: 4608, Amplification: 1.125,
		PagesRequested: 64, PagesHit: 60, PagesMissed: 4, PagesAdded: 72, HitRatio: 60.0 / 64,
		CachedAfter:  &workloads.Residency{CachedPages: 72, TotalPages: 256, Method: "cachestat"},
		DirtiedPages: 0, PendingPages: 3, FS: "ext4", Unmatched: 2,
		Report: &workloads.Report{Kind: "seq-read", Ops: 64, Cache: &workloads.Residency{CachedPages: 0, TotalPages: 256, Method: "cachestat"}}}
	want := `
--- workload under trace ---
workload:      seq-read, pid 4242, file /var/tmp/w/seq-read.dat (ext4, dev 254:1 ino 77)
               dropped from the page cache before the trace: 0 of 256 pages still cached (cachestat)
ops:           64 (the workload's report)
calls:         64 reads and 0 writes on the file; 12 other calls by the process (its execve, Go runtime start-up, /proc)
disk:          288.0 KiB read, 0 B written by the calls, 0 B carried by writeback: 4608.0 disk bytes per op
amplification: 1.12 (294912 disk bytes read / 262144 bytes requested by the reads)
page cache:    hit ratio 93.75% (60 hits / 64 pages requested by the calls on the file)
               4 missed; 72 pages added, readahead included
               afterwards 72 of the file's 256 pages were cached (cachestat)
writeback:     0 pages dirtied, 0 persisted, 3 pending (dirty, not seen on disk yet); --wait-writeback 40s follows them to the disk
               2 dirty folios were written in bios carrying more than 16 calls' pages, beyond what the tracer matches per bio (truncations wb_matches): persisted is a lower bound, pending an upper bound
`
	if got := Workload(r, false); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// On tmpfs, without a report, after --wait-writeback.
	r.FS, r.Report, r.PendingPages, r.Unmatched, r.CachedAfter = "tmpfs", nil, 0, 0, nil
	r.DiskBytesRead, r.ReadBytesRequested, r.PagesRequested = 0, 0, 0
	want = `
--- workload under trace ---
workload:      seq-read, pid 4242, file /var/tmp/w/seq-read.dat (tmpfs, dev 254:1 ino 77)
ops:           64 (no report: calls on the file)
calls:         64 reads and 0 writes on the file; 12 other calls by the process (its execve, Go runtime start-up, /proc)
disk:          0 B read, 0 B written by the calls, 0 B carried by writeback: 4608.0 disk bytes per op
               the file is on tmpfs, which has no block device: it never reaches a disk
amplification: - (no bytes requested by reads)
page cache:    no page requested by read calls
writeback:     0 pages dirtied, 0 persisted, 0 pending (dirty, not seen on disk yet)
`
	if got := Workload(r, true); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// With records lost (lost_events > 0) the section says its counts are
// lower bounds, marks bytes per op as one and prints no ratio of lower
// bounds (an io_uring run with --ringbuf-size 4096 printed "3495.3 disk
// bytes per op" with no caveat, truth 4096).
func TestWorkloadTextPartial(t *testing.T) {
	r := &record.Workload{Type: "workload", Kind: "uring-read", Pid: 7, File: "/var/tmp/w/f", Dev: "254:1", Ino: 77,
		Ops: 100, FileReadCalls: 90, ReadBytesRequested: 4096 * 90, DiskBytesRead: 4096 * 90, DiskBytesPerOp: 3686.4,
		PagesRequested: 90, PagesMissed: 90, PagesAdded: 90, FS: "ext4", Partial: true, LostEvents: 52,
		Report: &workloads.Report{Kind: "uring-read", Ops: 100}}
	want := `
--- workload under trace ---
workload:      uring-read, pid 7, file /var/tmp/w/f (ext4, dev 254:1 ino 77)
PARTIAL:       52 records lost (the ring buffer was full: raise --ringbuf-size): the calls, bytes and pages below are lower bounds; no ratio is computed from them
ops:           100 (the workload's report)
calls:         90 reads and 0 writes on the file; 0 other calls by the process (its execve, Go runtime start-up, /proc)
disk:          360.0 KiB read, 0 B written by the calls, 0 B carried by writeback: at least 3686.4 disk bytes per op (PARTIAL)
amplification: not computed (PARTIAL: 368640 disk bytes read / 368640 bytes requested by the reads, both lower bounds)
page cache:    hit ratio not computed (PARTIAL: 0 hits / 90 pages requested by the calls on the file, both lower bounds)
               90 missed; 90 pages added, readahead included
writeback:     0 pages dirtied, 0 persisted, 0 pending (dirty, not seen on disk yet)
`
	if got := Workload(r, true); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	r.Report, r.DiskBytesPerOp = nil, 0
	if got := Workload(r, true); !strings.Contains(got, "0 B carried by writeback: disk bytes per op not computed (PARTIAL: ops are the calls seen, short too)\n") {
		t.Errorf("without a report, per op:\n%s", got)
	}
}
