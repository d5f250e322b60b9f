package render

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
)

// Workload is the "workload under trace" section printed after the
// summary; waited says whether --wait-writeback was given.
func Workload(r *record.Workload, waited bool) string {
	var b strings.Builder
	b.WriteString("\n--- workload under trace ---\n")
	fmt.Fprintf(&b, "workload:      %s, pid %d, file %s (%s, dev %s ino %d)\n", r.Kind, r.Pid, r.File, r.FS, r.Dev, r.Ino)
	if rep := r.Report; rep != nil && rep.Cache != nil {
		fmt.Fprintf(&b, "               dropped from the page cache before the trace: %d of %d pages still cached (%s)\n",
			rep.Cache.CachedPages, rep.Cache.TotalPages, rep.Cache.Method)
	}
	if r.Partial {
		fmt.Fprintf(&b, "PARTIAL:       %s lost (the ring buffer was full: raise --ringbuf-size): the calls, bytes and pages below are lower bounds; no ratio is computed from them\n",
			Count(r.LostEvents, "record"))
	}
	src := "the workload's report"
	if r.Report == nil {
		src = "no report: calls on the file"
	}
	fmt.Fprintf(&b, "ops:           %d (%s)\n", r.Ops, src)
	fmt.Fprintf(&b, "calls:         %d reads and %d writes on the file; %d other calls by the process (its execve, Go runtime start-up, /proc)\n",
		r.FileReadCalls, r.FileWriteCalls, r.OtherCalls)
	perOp := fmt.Sprintf("%.1f disk bytes per op", r.DiskBytesPerOp)
	switch {
	case r.Partial && r.Report != nil:
		perOp = "at least " + perOp + " (PARTIAL)"
	case r.Partial:
		perOp = "disk bytes per op not computed (PARTIAL: ops are the calls seen, short too)"
	}
	fmt.Fprintf(&b, "disk:          %s read, %s written by the calls, %s carried by writeback: %s\n",
		Bytes(r.DiskBytesRead), Bytes(r.DiskBytesWritten), Bytes(r.WritebackBytes), perOp)
	if r.ExecBytesRead > 0 {
		fmt.Fprintf(&b, "               and %s read by the process's execve (its program's start, not an op)\n", Bytes(r.ExecBytesRead))
	}
	if kernel.MemoryOnly(r.FS) {
		fmt.Fprintf(&b, "               the file is on %s, which has no block device: it never reaches a disk\n", r.FS)
	}
	switch {
	case r.Partial:
		fmt.Fprintf(&b, "amplification: not computed (PARTIAL: %d disk bytes read / %d bytes requested by the reads, both lower bounds)\n", r.DiskBytesRead, r.ReadBytesRequested)
	case r.ReadBytesRequested > 0:
		fmt.Fprintf(&b, "amplification: %.2f (%d disk bytes read / %d bytes requested by the reads)\n", r.Amplification, r.DiskBytesRead, r.ReadBytesRequested)
	default:
		b.WriteString("amplification: - (no bytes requested by reads)\n")
	}
	switch {
	case r.PagesRequested > 0 && r.Partial:
		fmt.Fprintf(&b, "page cache:    hit ratio not computed (PARTIAL: %d hits / %d pages requested by the calls on the file, both lower bounds)\n", r.PagesHit, r.PagesRequested)
		fmt.Fprintf(&b, "               %d missed; %d pages added, readahead included\n", r.PagesMissed, r.PagesAdded)
	case r.PagesRequested > 0:
		fmt.Fprintf(&b, "page cache:    hit ratio %.2f%% (%d hits / %d pages requested by the calls on the file)\n", 100*r.HitRatio, r.PagesHit, r.PagesRequested)
		fmt.Fprintf(&b, "               %d missed; %d pages added, readahead included\n", r.PagesMissed, r.PagesAdded)
	case r.Report != nil && r.Report.Direct:
		b.WriteString("page cache:    bypassed (O_DIRECT): no page requested through it\n")
	case r.Report != nil && r.Report.Engine == workloads.EngineMmap:
		fmt.Fprintf(&b, "page cache:    no calls: the mmap engine copies through page faults (%d major, %d minor); their disk reads count above,\n",
			r.Report.MajorFaults, r.Report.MinorFaults)
		b.WriteString("               pages dirtied through the mapping are in the fault records' dirtied_pages, followed to persisted as calls' are\n")
	default:
		b.WriteString("page cache:    no page requested by read calls\n")
	}
	if c := r.CachedAfter; c != nil {
		fmt.Fprintf(&b, "               afterwards %d of the file's %d pages were cached (%s)\n", c.CachedPages, c.TotalPages, c.Method)
	}
	fmt.Fprintf(&b, "writeback:     %d pages dirtied, %d persisted, %d pending (dirty, not seen on disk yet)", r.DirtiedPages, r.PersistedPages, r.PendingPages)
	if r.RemovedPages > 0 || r.FailedPages > 0 {
		fmt.Fprintf(&b, ", %d removed before writeback, %d failed", r.RemovedPages, r.FailedPages)
	}
	if r.PendingPages > 0 && !waited {
		b.WriteString("; --wait-writeback 40s follows them to the disk")
	}
	b.WriteString("\n")
	if r.Unmatched > 0 {
		fmt.Fprintf(&b, "               %d dirty folios were written in bios carrying more than 16 calls' pages, beyond what the tracer matches per bio (truncations wb_matches): persisted is a lower bound, pending an upper bound\n", r.Unmatched)
	}
	return b.String()
}
