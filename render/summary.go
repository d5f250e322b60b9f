package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/iopath/iopath/record"
)

// DefaultFileRows is how many files the text summary's file tables list
// (trace --files): a run that touched 17,000 files printed 17,000 rows.
// The rest are summed in one row, so the columns still add up; the JSON
// summary lists every file.
const DefaultFileRows = 50

// SummaryText is the end-of-trace summary: per-process and per-file
// tables, then every loss (lost events, evictions, truncations, unseen
// dirty pages). The file tables list fileRows files at most (0: all), most
// disk bytes first (fileRanked).
func SummaryText(s *record.Summary, fileRows int) string {
	var b strings.Builder
	b.WriteString("\n--- summary ---\n")
	if s.LostEvents > 0 {
		fmt.Fprintf(&b, "PARTIAL: %s lost (the ring buffer was full: raise --ringbuf-size): every row marked PARTIAL below (JSON: partial) is a lower bound, its calls, bytes, pages, faults, dirtied pages, requests and disk bytes, and its ratios are ratios of lower bounds\n",
			Count(s.LostEvents, "record"))
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tCOMM\tCALLS\tREAD REQ\tHIT\tMISSED\tADDED\tDISK READ\tAMPL\tDIRTIED\tDISK WRITE\tTHROTTLED\tUNATTR")
	for _, p := range s.Pids {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%.2f\t%d\t%s\t%s\t%d%s\n", p.Pid, Safe(p.Comm), callsCell(p.Totals), Bytes(p.ReadBytesReq),
			p.PagesHit, p.PagesMissed, p.PagesAdded, Bytes(p.DiskBytesRead), p.Amplification, p.DirtiedPages,
			diskWriteCell(p.Totals), Duration(p.ThrottleNs), p.Unattributed, partialCell(p.Totals))
	}
	tw.Flush()
	faultTable(&b, s)
	if len(s.Files) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tDEV\tINO\tCALLS\tREAD REQ\tHIT\tMISSED\tDISK READ\tAMPL\tDIRTIED\tDISK WRITE")
		row := func(cells string, t *record.Totals) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%.2f\t%d\t%s%s\n", cells, callsCell(*t), Bytes(t.ReadBytesReq),
				t.PagesHit, t.PagesMissed, Bytes(t.DiskBytesRead), t.Amplification, t.DirtiedPages, diskWriteCell(*t), partialCell(*t))
		}
		files, reuses := foldReused(s.Files)
		shown, rest := fileRanked(files, fileRows, inFileTable,
			func(t *record.Totals) (uint64, uint64) {
				return t.DiskBytesRead + t.DiskBytesWrite, t.Calls + t.Requests
			})
		for _, f := range shown {
			name := Safe(f.Path)
			if name == "" {
				name = "(cache hits only: path not recorded)"
			}
			ino := strconv.FormatUint(f.Ino, 10)
			if n := reuses[fileKey{f.Path, f.Dev, f.Ino}]; n > 1 {
				ino += fmt.Sprintf(" (%d files)", n)
			}
			row(fmt.Sprintf("%s\t%s\t%s", name, f.Dev, ino), &f.Totals)
		}
		if len(rest) > 0 {
			t := sumFiles(rest)
			row(moreCells(rest), &t)
		}
		tw.Flush()
		moreLine(&b, rest, fileRows, "files", "disk bytes read and written, then calls")
	}
	fileFaultTable(&b, s, fileRows) // fault.go
	notItemizedText(&b, s, fileRows)
	fmt.Fprintf(&b, "\nlost events: %d; unattributed bios: %d; bios without completion: %d; dirty pages not yet on disk: %d\n",
		s.LostEvents, s.UnattributedBios, s.IncompleteBios, s.DirtyPending)
	b.WriteString(unattributedText(s))
	if s.IncompleteBios > 0 {
		c := s.IncompleteCauses
		fmt.Fprintf(&b, "bios without completion by cause: %d never seen issued, %d still waiting when released\n",
			c["never_issued"], c["no_completion"])
	}
	b.WriteString(vmaBusyText(s))
	if n := s.Diagnostics["faults_unended"]; n > 0 {
		fmt.Fprintf(&b, "faults with no end seen: %d (faults_unended: the kernel went back to user mode without accounting them and delivered no signal to the thread, e.g. another thread took the signal that interrupted them, or the thread exited during them): those closed at the thread's next fault or exit are fault records with end_unseen (in faults, never in major_faults); those a system call's start found open have no record and their bios are unattributed (no_record)\n", n)
	}
	if s.CompletionsUnseen > 0 {
		fmt.Fprintf(&b, "bios completed unseen: %d (the kernel reused their requests, or their disk no longer counted them in flight at the end, so they completed, but no BPF program saw the completions: no device time for them)\n",
			s.CompletionsUnseen)
	}
	if n := s.Diagnostics["requests_unseen_at_end"]; n > 0 {
		fmt.Fprintf(&b, "requests completed unseen at the end: %d (still waiting after the settle, more than their disk counted in flight in /sys/dev/block/M:m/inflight: they had ended, unseen by BPF)\n", n)
	}
	if n := s.Diagnostics["dirty_pages_dropped_unseen"]; n > 0 {
		fmt.Fprintf(&b, "dirty pages dropped unseen: %d (not seen written; their file was deleted since, so the kernel dropped them unwritten: not pending)\n", n)
	}
	if n := s.Diagnostics["requests_in_flight_at_end"]; n > 0 {
		fmt.Fprintf(&b, "requests still in flight at the end: %d (their bios are released without a completion)\n", n)
	}
	if len(s.MissedRuns) > 0 {
		var m []string
		for k, v := range s.MissedRuns {
			m = append(m, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(m)
		fmt.Fprintf(&b, "BPF program runs skipped by the kernel (already running on that CPU): %s\n", strings.Join(m, ", "))
	}
	if s.DirtyUnseen > 0 {
		why := "in bios iopath did not see"
		if s.MapEvictions["dirty_pages"] > 0 {
			why = "without iopath following them (the dirty_pages map was full: raise --max-dirty-pages)"
		}
		fmt.Fprintf(&b, "%s written %s; cachestat says their files are clean\n", Count(s.DirtyUnseen, "dirty page"), why)
	}
	if n := s.MapEvictions["dirty_pages"]; n > 0 {
		var files, pids int
		for _, f := range s.Files {
			if f.DiskBytesWritePartial {
				files++
			}
		}
		for _, p := range s.Pids {
			if p.DiskBytesWritePartial {
				pids++
			}
		}
		fmt.Fprintf(&b, "PARTIAL: disk bytes written of the %d file(s) and %d process(es) that dirtied pages are lower bounds (marked ≥ in DISK WRITE; JSON: disk_bytes_written_partial): the writeback of the %s the dirty_pages map had no room for is not attributed (raise --max-dirty-pages)\n",
			files, pids, Count(n, "folio"))
	}
	b.WriteString(hitsFullText(s))
	var ev []string
	for k, v := range s.MapEvictions {
		switch k {
		case "hit_stats", "hit_stats_nomem", "hit_other": // nothing lost: hitsFullText
		default:
			if v > 0 {
				ev = append(ev, fmt.Sprintf("%s %d", k, v))
			}
		}
	}
	cut := uint64(0)
	for k, v := range s.Truncations {
		switch {
		case k == "page_ranges":
			cut = v // nothing lost: below
		case v > 0:
			ev = append(ev, fmt.Sprintf("%s truncated %d", k, v))
		}
	}
	sort.Strings(ev)
	if len(ev) > 0 {
		fmt.Fprintf(&b, "map full / truncated (data lost): %s\n", strings.Join(ev, ", "))
	} else {
		b.WriteString("maps: nothing dropped\n")
	}
	if cut > 0 {
		// bpf/helpers.h add_range: a call lists at most MAX_RANGES
		// page ranges; its page counts come from the kernel's totals.
		// The counter counts additions (a page or a folio each) that
		// found no room, not ranges.
		fmt.Fprintf(&b, "page ranges not listed (totals exact): %d pages or folios added or dirtied (one each time) fell beyond the ranges a call record lists; they are counted in pages_added and dirtied_pages, and a record's truncated.range_pages says how many pages it does not list\n", cut)
	}
	return b.String()
}

// inFileTable: a file is a row of the FILE table when a cell of that row
// is not zero. A file only mapped (a shared library, the command's binary)
// is in the MAPPED FILE table alone: a trace of \`dd bs=1 count=1\` had 16
// rows of zeros here, one per mapped locale file, before its 3 real ones.
func inFileTable(t *record.Totals) bool {
	return t.Calls+t.Requests+t.ReadBytesReq+t.PagesHit+t.PagesMissed+t.DiskBytesRead+t.DiskBytesWrite+t.DirtiedPages > 0
}

type fileKey struct {
	path, dev string
	ino       uint64
}

// foldReused sums into one row the files of the same path, device and
// inode number (an inode reused for a file of the same name after a
// delete: SQLite's rollback journal, made and deleted at every commit, was
// 48 identical rows for 50 commits) and says how many files each row is
// (the JSON keeps one object per file, with its generation). Files with no
// path are left alone.
func foldReused(files []record.FileSummary) ([]record.FileSummary, map[fileKey]int) {
	count := map[fileKey]int{}
	for i := range files {
		if f := &files[i]; f.Path != "" {
			count[fileKey{f.Path, f.Dev, f.Ino}]++
		}
	}
	out := make([]record.FileSummary, 0, len(files))
	at := map[fileKey]int{}
	for _, f := range files {
		k := fileKey{f.Path, f.Dev, f.Ino}
		if f.Path == "" || count[k] == 1 {
			out = append(out, f)
			continue
		}
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, record.FileSummary{Dev: f.Dev, Ino: f.Ino, FS: f.FS, Path: f.Path})
			i = len(out) - 1
		}
		t := sumFiles([]*record.FileSummary{{Totals: out[i].Totals}, &f})
		out[i].Totals = t
	}
	return out, count
}

// fileRanked returns the files of a file table (those keep takes), most
// important first by key's two values (larger first; ties keep files'
// order, device and inode), at most n of them (0: all), and the rest.
func fileRanked(files []record.FileSummary, n int, keep func(*record.Totals) bool, key func(*record.Totals) (uint64, uint64)) (shown, rest []*record.FileSummary) {
	for i := range files {
		if keep(&files[i].Totals) {
			shown = append(shown, &files[i])
		}
	}
	sort.SliceStable(shown, func(i, j int) bool {
		a1, a2 := key(&shown[i].Totals)
		b1, b2 := key(&shown[j].Totals)
		return a1 > b1 || a1 == b1 && a2 > b2
	})
	if n > 0 && len(shown) > n {
		return shown[:n], shown[n:]
	}
	return shown, nil
}

// sumFiles sums the counts of the file tables' columns over files (their
// amplification: disk bytes read / bytes requested by reads, of the sums).
func sumFiles(files []*record.FileSummary) record.Totals {
	var t record.Totals
	for _, f := range files {
		t.Calls += f.Calls
		t.Requests += f.Requests
		t.ReadBytesReq += f.ReadBytesReq
		t.PagesHit += f.PagesHit
		t.PagesMissed += f.PagesMissed
		t.DiskBytesRead += f.DiskBytesRead
		t.DiskBytesWrite += f.DiskBytesWrite
		t.DirtiedPages += f.DirtiedPages
		t.Faults += f.Faults
		t.MajorFaults += f.MajorFaults
		t.FaultDiskBytesRead += f.FaultDiskBytesRead
		t.Partial = t.Partial || f.Partial
		t.DiskBytesWritePartial = t.DiskBytesWritePartial || f.DiskBytesWritePartial
	}
	if t.ReadBytesReq > 0 {
		t.Amplification = float64(t.DiskBytesRead) / float64(t.ReadBytesReq)
	}
	return t
}

// moreCells are the FILE, DEV and INO cells of the row that sums the files
// a table left out.
func moreCells(rest []*record.FileSummary) string {
	return fmt.Sprintf("(%d more)\t-\t-", len(rest))
}

// notItemizedText says which cached calls the kernel counted only per
// process (hit_stats full): one line per process and direction, most calls
// first, at most rows of them (0: all), the rest summed in one line (a
// thousand short-lived readers once made a thousand lines here).
func notItemizedText(b *strings.Builder, s *record.Summary, rows int) {
	ns := append([]record.HitsNotItemized{}, s.HitsNotItemized...)
	sort.SliceStable(ns, func(i, j int) bool { return ns[i].Calls > ns[j].Calls })
	line := func(n record.HitsNotItemized, whose string) {
		dir := "read"
		if n.Write {
			dir = "write"
		}
		fmt.Fprintf(b, "not itemized per file (%s): %s, %s requested, %s, counted in %s\n", hitsRefused(s),
			Count(n.Calls, "cached "+dir+" call"), Bytes(n.BytesRequested), Count(n.Pages, "page"), whose)
	}
	var rest []record.HitsNotItemized
	if rows > 0 && len(ns) > rows {
		ns, rest = ns[:rows], ns[rows:]
	}
	for _, n := range ns {
		whose := fmt.Sprintf("the totals of pid %d (%s)", n.Pid, Safe(n.Comm))
		if n.Pid == 0 {
			whose = "no process (hit_other full too)"
		}
		line(n, whose)
	}
	for _, write := range []bool{false, true} {
		sum, k := record.HitsNotItemized{Write: write}, 0
		for _, n := range rest {
			if n.Write == write {
				sum.Calls, sum.BytesRequested, sum.Pages, k = sum.Calls+n.Calls, sum.BytesRequested+n.BytesRequested, sum.Pages+n.Pages, k+1
			}
		}
		if k > 0 {
			line(sum, "their processes' totals ("+Count(uint64(k), "more line")+" summed: --files 0 lists each, the JSON summary always does)")
		}
	}
}

// moreLine says under a file table what its "(N more)" row is ("" when it
// left none out): what of the files (of kind, ranked by) it sums, and how
// to see them.
func moreLine(b *strings.Builder, rest []*record.FileSummary, shown int, kind, by string) {
	if len(rest) > 0 {
		fmt.Fprintf(b, "(%d more): the %s after the first %d by %s, summed; --files 0 lists every one (the JSON summary always does)\n",
			len(rest), kind, shown, by)
	}
}

// partialCell ends a row whose totals are lower bounds (records lost:
// record.Totals.Partial) with a PARTIAL cell.
func partialCell(t record.Totals) string {
	if t.Partial {
		return "\tPARTIAL"
	}
	return ""
}

// diskWriteCell is the DISK WRITE column: "≥" before a lower bound (the
// row dirtied pages while the dirty_pages map was full: the writeback of
// the pages it could not follow is not attributed).
func diskWriteCell(t record.Totals) string {
	if t.DiskBytesWritePartial {
		return "≥" + Bytes(t.DiskBytesWrite)
	}
	return Bytes(t.DiskBytesWrite)
}

// callsCell is the CALLS column: calls, and asynchronous requests when
// there are any ("3 +16 req": 3 calls, 16 libaio/io_uring requests).
func callsCell(t record.Totals) string {
	if t.Requests == 0 {
		return strconv.FormatUint(t.Calls, 10)
	}
	return strconv.FormatUint(t.Calls, 10) + " +" + strconv.FormatUint(t.Requests, 10) + " req"
}

// hitsFullText says what the hit maps being full cost ("" if they were
// not): no hit is lost, they are exact in the totals, only not itemized per
// file (hit_stats), or per process (hit_other). It used to be listed as
// "data lost".
func hitsFullText(s *record.Summary) string {
	full, nomem, other := s.MapEvictions["hit_stats"], s.MapEvictions["hit_stats_nomem"], s.MapEvictions["hit_other"]
	if full+nomem+other == 0 {
		return ""
	}
	var parts []string
	if full+nomem > 0 {
		var why []string
		if full > 0 {
			why = append(why, "was full "+Count(full, "time"))
		}
		if nomem > 0 {
			why = append(why, "failed to allocate with room left "+Count(nomem, "time"))
		}
		parts = append(parts, "hit_stats "+strings.Join(why, " and ")+": the cache hits of files it had no room for are exact in their process's totals, only not itemized per file")
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("hit_other was full %s: those of processes it had no room for are exact but in no process's totals (pid 0)", Count(other, "time")))
	}
	return "hit maps full, no hit lost (\"not itemized per file\" above): " + strings.Join(parts, "; ") + "\n"
}

// hitsRefused says why hit_stats refused files: full (-E2BIG), or an entry
// it had room for could not be allocated (-ENOMEM: the map is not
// preallocated, and the kernel's BPF allocator had no free element then).
func hitsRefused(s *record.Summary) string {
	full, nomem := s.MapEvictions["hit_stats"], s.MapEvictions["hit_stats_nomem"]
	switch {
	case nomem == 0:
		return "hit_stats map full"
	case full == 0:
		return fmt.Sprintf("hit_stats could not allocate %d of its entries with room left: not preallocated", nomem)
	}
	return fmt.Sprintf("hit_stats map full %d times, an allocation failed with room left %d times", full, nomem)
}

// unattributedText details the summary's unattributed bios: their bytes
// and why the kernel says they were queued ("" when there are none).
func unattributedText(s *record.Summary) string {
	if s.UnattributedBios == 0 {
		return ""
	}
	causes := make([]string, 0, len(s.UnattributedCauses))
	for k := range s.UnattributedCauses {
		causes = append(causes, k)
	}
	sort.Strings(causes)
	var parts []string
	var discarded uint64
	for _, k := range causes {
		c := s.UnattributedCauses[k]
		if strings.HasPrefix(k, record.DiscardCause) {
			// A discard's bytes are a range freed, not data moved.
			discarded += c.Bytes
			parts = append(parts, fmt.Sprintf("%s %d (%s discarded)", k, c.Bios, Bytes(c.Bytes)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s)", k, c.Bios, Bytes(c.Bytes)))
	}
	total := Bytes(s.UnattributedBytes - min(discarded, s.UnattributedBytes))
	if discarded > 0 {
		total += " read or written, " + Bytes(discarded) + " discarded"
	}
	return fmt.Sprintf("unattributed bios (queued by traced processes outside any traced call): %s: %s\n",
		total, strings.Join(parts, ", "))
}

// vmaBusyText says what the faults whose mapping bpf_find_vma could not
// look up (it found the mmap lock taken: another thread's mmap, munmap or
// new stack) mean. The counter covers every user fault, anonymous ones
// included. Where mm_filemap_fault is hooked by tp_btf (6.11+) every fault
// that reaches filemap_fault, so every file fault that reads, is opened
// there (faults_vma_recovered): the rest read no file through
// filemap_fault, so nothing with IO is missing, only file minor faults
// (fault-around, a page already mapped) from the faults column. Without
// that hook (before 6.11, or the classic tracepoint, which has no
// arguments) a file fault among them is not traced at all.
func vmaBusyText(s *record.Summary) string {
	busy := s.Diagnostics["faults_vma_busy"]
	if busy == 0 {
		return ""
	}
	rec := min(s.Diagnostics["faults_vma_recovered"], busy)
	if s.Attach["filemap_fault"] == "tp_btf" || rec > 0 {
		return fmt.Sprintf("faults whose mapping was looked up while another thread held the mmap lock: %d (faults_vma_busy: any mapping, anonymous ones included); "+
			"%d reached filemap_fault and are traced (faults_vma_recovered); the other %d read no file through filemap_fault (anonymous memory, or file pages already cached: fault-around), "+
			"so no IO is missing, only file minor faults among them from the faults counts\n", busy, rec, busy-rec)
	}
	return fmt.Sprintf("INCOMPLETE: %d faults were looked up while another thread held the mmap lock (faults_vma_busy: any mapping, anonymous ones included), "+
		"and this kernel has no mm_filemap_fault tracepoint with arguments (tp_btf, Linux 6.11+) to name them later: file faults among them are not traced "+
		"(their bios are unattributed (page_fault), they are missing from faults and major_faults)\n", busy)
}

// LossLines are the stderr lines that say a run lost records or BPF
// program runs (none when it lost nothing): the summary says so too, but it
// may be in an -o file, a pipe or a JSON object nobody reads at once, and a
// loss must not pass unseen (a --ringbuf-size 4096 run lost 180533 records
// with nothing on the terminal).
func LossLines(s *record.Summary) []string {
	var lines []string
	if s.LostEvents > 0 {
		lines = append(lines, "iopath: "+Count(s.LostEvents, "record")+" lost (the ring buffer was full: raise --ringbuf-size): the summary's rows marked PARTIAL are lower bounds")
	}
	var missed uint64
	for _, v := range s.MissedRuns {
		missed += v
	}
	if missed > 0 {
		lines = append(lines, "iopath: "+Count(missed, "BPF program run")+" skipped by the kernel (already running on that CPU): what they would have seen is not counted (missed_runs in the summary)")
	}
	return lines
}
