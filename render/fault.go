package render

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

// FaultStory is a page fault's text story: the access and the page it
// maps, whether the kernel counted it major and redid it, what it did in
// the page cache (the faulting page hit or missed, pages added, the
// read-around or readahead window), the cached pages fault-around mapped
// without IO, pages a store dirtied, and its bios with their device time.
func FaultStory(r *record.Fault) string {
	var b strings.Builder
	b.Grow(512)
	target := Safe(r.Path)
	if target == "" {
		target = fmt.Sprintf("dev %s ino %d", r.Dev, r.Ino)
	}
	access := "read"
	if r.Write {
		access = "write"
	}
	kind := "minor"
	if r.Major {
		kind = "major"
	}
	took := " in "
	if r.EndUnseen {
		kind, took = "end not seen", ", open at most "
	}
	unum := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, p := range []string{"fault (", access, " at 0x", strconv.FormatUint(r.Address, 16), ") ", target, " page ", unum(r.Index),
		" [", Safe(r.Comm), " pid ", unum(uint64(r.Pid)), " tid ", unum(uint64(r.Tid)), "] -> ", kind, took, Duration(r.DurationNs)} {
		b.WriteString(p)
	}
	if r.BlockedNs > 0 {
		b.WriteString(", blocked on IO " + Duration(r.BlockedNs))
	}
	b.WriteString("\n")
	if r.Retried {
		b.WriteString("  retried: the kernel dropped the mmap (or VMA) lock while the page was read or locked (VM_FAULT_RETRY), then redid the fault\n")
	}
	if r.EndUnseen {
		b.WriteString("  end not seen: the kernel went back to user mode without accounting the fault (no page-fault event, no signal delivered to this thread: another thread may have taken the signal that interrupted it), or the thread exited during it; closed at the thread's next fault or exit; whether it was major is unknown; what it did stands\n")
	}
	switch {
	case r.Signal == "":
	case r.Failed():
		b.WriteString("  failed: the kernel raised " + r.Signal + " (no page mapped)\n")
	default:
		b.WriteString("  ended by " + Safe(r.Signal) + ": the thread went back to run its handler before the kernel redid the fault (VM_FAULT_RETRY); what the fault did stands, and the kernel counted it in neither maj_flt nor min_flt\n")
	}
	c := r.Cache
	switch {
	case kernel.MemoryOnly(r.FS):
		fmt.Fprintf(&b, "  %s keeps file data in memory only: mapping it never reads a disk (no block IO)\n", r.FS)
	case c.PagesMissed > 0:
		b.WriteString("  page cache: the page was missing; " + Count(c.PagesAdded, "page") + " added (index " + Ranges(c.AddedRanges) + ")\n")
	case c.PagesAdded > 0:
		b.WriteString("  page cache: the page was cached; " + Count(c.PagesAdded, "page") + " added (index " + Ranges(c.AddedRanges) + ")\n")
	case r.Failed():
	default:
		b.WriteString("  page cache: the page was cached\n")
	}
	for _, ra := range c.Readahead {
		switch ra.Kind {
		case record.ReadaheadNone:
			b.WriteString("  readahead: none, only the faulting page was read (MADV_RANDOM, or too many mmap misses)\n")
			continue
		case record.ReadaheadReadAround:
			b.WriteString("  read-around: window " + Count(uint64(ra.Pages), "page") + " from index " + unum(ra.StartIndex) + " around the faulting page")
		default:
			b.WriteString("  readahead: " + string(ra.Kind) + ", window " + Count(uint64(ra.Pages), "page") + " from index " + unum(ra.StartIndex))
		}
		if ra.AsyncPages > 0 {
			b.WriteString(" (next async readahead when " + unum(uint64(ra.AsyncPages)) + " remain)")
		}
		if ra.Source == record.SourceDerived {
			b.WriteString(" [derived from pages added]")
		}
		b.WriteString("\n")
	}
	if a := r.FaultAround; a != nil {
		b.WriteString("  fault-around: mapped cached pages of index " + Ranges([]record.PageRange{*a}) + " without IO\n")
	}
	if r.DirtiedPages > 0 {
		fmt.Fprintf(&b, "  dirtied %s through the mapping (index %s); written back later\n", Count(uint64(r.DirtiedPages), "page"), Ranges(r.DirtiedRanges))
	}
	switch {
	case len(r.Bios) > 0 || kernel.MemoryOnly(r.FS):
	case r.BlockedNs > 0:
		b.WriteString("  no IO of its own: it waited for a page still being read (an earlier fault's read-around or another task)\n")
	case r.Major:
		b.WriteString("  no IO of its own: another task had read the page in\n")
	}
	for _, bio := range r.Bios {
		b.WriteString("  " + bioLine(bio) + "\n")
	}
	return b.String()
}

// faultTable prints the per-process fault counts, when any process faulted
// on a file mapping.
func faultTable(b *strings.Builder, s *record.Summary) {
	rows := make([]faultRow, 0, len(s.Pids))
	for _, p := range s.Pids {
		rows = append(rows, faultRow{fmt.Sprintf("%d\t%s", p.Pid, Safe(p.Comm)), &p.Totals})
	}
	writeFaultRows(b, "PID\tCOMM\tFILE FAULTS", rows)
}

// fileFaultTable prints the per-file fault counts, when any file had
// faults of its mappings: fileRows files at most (0: all), most fault disk
// bytes first, then most faults, the rest summed in one row.
func fileFaultTable(b *strings.Builder, s *record.Summary, fileRows int) {
	shown, rest := fileRanked(s.Files, fileRows, func(t *record.Totals) bool { return t.Faults > 0 },
		func(t *record.Totals) (uint64, uint64) { return t.FaultDiskBytesRead, t.Faults })
	rows := make([]faultRow, 0, len(shown)+1)
	for _, f := range shown {
		rows = append(rows, faultRow{fmt.Sprintf("%s\t%s\t%d", Safe(f.Path), f.Dev, f.Ino), &f.Totals})
	}
	if len(rest) > 0 {
		t := sumFiles(rest)
		rows = append(rows, faultRow{moreCells(rest), &t})
	}
	writeFaultRows(b, "MAPPED FILE\tDEV\tINO\tFAULTS", rows)
	moreLine(b, rest, fileRows, "mapped files", "disk bytes their faults read, then faults")
	for _, f := range shown {
		switch {
		case kernel.MemoryOnly(f.FS) && sharedAnon(f.Path):
			fmt.Fprintf(b, "%s is shared anonymous memory (mmap MAP_SHARED|MAP_ANONYMOUS, or System V shm: e.g. PostgreSQL's shared_buffers), memory only: its %s never read a disk (no block IO to trace)\n", Safe(f.Path), Count(f.Faults, "fault"))
		case kernel.MemoryOnly(f.FS):
			fmt.Fprintf(b, "%s is on %s, memory only: its %s never read a disk (no block IO to trace)\n", Safe(f.Path), f.FS, Count(f.Faults, "fault"))
		}
	}
}

// sharedAnon says whether path names the kernel's file behind shared
// anonymous memory: "dev/zero" (shmem_zero_setup, for MAP_SHARED|
// MAP_ANONYMOUS or a mapping of /dev/zero) or "SYSV%08x" (shmget), on the
// kernel's internal shmem mount, printed with no directory above.
func sharedAnon(path string) bool {
	base := path[strings.LastIndexByte(path, '/')+1:]
	return strings.HasSuffix(path, "/dev/zero") && !strings.HasPrefix(path, "/dev/") || strings.HasPrefix(base, "SYSV") && len(base) == 12
}

// faultRow is one row of a fault table: its leading cells (tab-separated)
// and the totals whose fault counts follow.
type faultRow struct {
	cells string
	t     *record.Totals
}

// writeFaultRows writes the rows that had faults under head (whose last
// column names the fault count), with major faults, their disk bytes and
// the bytes per major fault; nothing when no row had a fault.
func writeFaultRows(b *strings.Builder, head string, rows []faultRow) {
	any := false
	for _, r := range rows {
		any = any || r.t.Faults > 0
	}
	if !any {
		return
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, head+"\tMAJOR\tFAULT DISK READ\tPER MAJOR FAULT")
	for _, r := range rows {
		if r.t.Faults == 0 {
			continue
		}
		per := "-"
		if r.t.MajorFaults > 0 {
			per = Bytes(r.t.FaultDiskBytesRead / r.t.MajorFaults)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s%s\n", r.cells, r.t.Faults, r.t.MajorFaults, Bytes(r.t.FaultDiskBytesRead), per, partialCell(*r.t))
	}
	tw.Flush()
}
