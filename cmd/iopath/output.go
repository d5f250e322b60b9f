package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/iopath/iopath/tracer"
)

// printer writes records as JSON Lines or as human stories. Records are
// gathered and written several per write(2) (one write per record cost
// 2-4 µs, more than decoding and encoding it), but only whole records and at
// most pipeBuf bytes per write: the traced command often shares the output,
// and the kernel keeps a write of up to PIPE_BUF bytes to a pipe (any write
// to a file) in one piece, so its lines never land inside one of ours. The
// buffer is written out when the tracer finds the ring buffer empty
// (Tracer.Idle), after the summary, and by flush.
type printer struct {
	out   io.Writer // the destination
	w     io.Writer // where a record is rendered (cur)
	cur   bytes.Buffer
	batch []byte
	json  bool
	quiet bool
	enc   *json.Encoder
	// collected lets demos read the records they printed.
	collected []any
	collect   bool
	onBroken  func(error)
}

// pipeBuf is PIPE_BUF on Linux: the largest write a pipe keeps whole.
const pipeBuf = 4096

func newPrinter(w io.Writer, asJSON, quiet bool) *printer {
	p := &printer{out: w, json: asJSON, quiet: quiet}
	p.w = &p.cur
	p.enc = json.NewEncoder(&p.cur)
	p.enc.SetEscapeHTML(false)
	return p
}

// add moves the record rendered in cur into the batch, writing the batch
// out first if the record would take it past pipeBuf.
func (p *printer) add() {
	if len(p.batch) > 0 && len(p.batch)+p.cur.Len() > pipeBuf {
		p.flush()
	}
	p.batch = append(p.batch, p.cur.Bytes()...)
	p.cur.Reset()
	if len(p.batch) >= pipeBuf {
		p.flush()
	}
}

// flush writes out the batch. The first failed write calls onBroken (if
// set: -p and --comm traces then end, since nobody reads them); records are
// dropped after that.
func (p *printer) flush() {
	if len(p.batch) > 0 {
		if _, err := p.out.Write(p.batch); err != nil && p.onBroken != nil {
			p.onBroken(err)
			p.onBroken = nil
		}
		p.batch = p.batch[:0]
	}
}

func (p *printer) record(rec any) {
	if p.collect {
		p.collected = append(p.collected, rec)
	}
	if p.quiet {
		return
	}
	defer p.add()
	if p.json {
		p.enc.Encode(rec)
		return
	}
	switch r := rec.(type) {
	case *tracer.Syscall:
		p.cur.WriteString(storySyscall(r))
	case *tracer.Writeback:
		p.cur.WriteString(storyWriteback(r))
	case *tracer.Persisted:
		p.cur.WriteString(storyPersisted(r))
	}
}

func (p *printer) summary(s *tracer.Summary, hooks []tracer.HookStatus) {
	defer func() {
		p.add()
		p.flush()
	}()
	if p.json {
		p.enc.Encode(s)
		return
	}
	p.cur.WriteString(summaryText(s))
}

// human renders byte counts the way people read them (KiB = 1024 B).
// safe quotes a name with control characters (a newline or escape sequence
// in a file name must not break the output).
func safe(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}

// human, dur, pl and ranges format with strconv rather than fmt: the
// default mode prints one story per missed call, at up to tens of
// thousands per second (same output as the fmt verbs they replace).
func human(b uint64) string {
	unit := func(v float64, u string) string { return strconv.FormatFloat(v, 'f', 1, 64) + u }
	switch {
	case b >= 1<<30:
		return unit(float64(b)/(1<<30), " GiB")
	case b >= 1<<20:
		return unit(float64(b)/(1<<20), " MiB")
	case b >= 1<<10:
		return unit(float64(b)/(1<<10), " KiB")
	}
	return strconv.FormatUint(b, 10) + " B"
}

func dur(ns uint64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + " µs"
}

func pl(n uint64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatUint(n, 10) + " " + word + "s"
}

func ranges(rs []tracer.PageRange) string {
	var b []byte
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, r.Index, 10)
		if r.Pages != 1 {
			b = append(b, '-')
			b = strconv.AppendUint(b, r.Index+uint64(r.Pages)-1, 10)
		}
	}
	return string(b)
}

func storySyscall(r *tracer.Syscall) string {
	var b strings.Builder
	b.Grow(512)
	target := safe(r.Path)
	if target == "" {
		target = fmt.Sprintf("dev %s ino %d", r.Dev, r.Ino)
	}
	result := human(uint64(r.ReturnedBytes))
	if r.Error != "" {
		result = r.Error
	}
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	unum := func(v uint64) string { return strconv.FormatUint(v, 10) }
	asked := human(r.RequestedBytes)
	if r.RequestedBytes >= 1<<62 {
		asked = "up to EOF" // cp asks copy_file_range for SSIZE_MAX bytes
	}
	args := "fd=" + num(r.Fd) + ", " + asked + " at offset " + unum(r.Offset)
	if r.SyncFlags != "" {
		args += ", " + r.SyncFlags // sync_file_range
	}
	if r.Syscall == "fsync" || r.Syscall == "fdatasync" || r.Syscall == "syncfs" {
		args = "fd=" + num(r.Fd)
	} else if r.Syscall == "sync" {
		args, target = "", "all filesystems"
	}
	for _, p := range []string{r.Syscall, "(", args, ") ", target, " [", safe(r.Comm), " pid ", unum(uint64(r.Pid)), " tid ",
		unum(uint64(r.Tid)), "] -> ", result, " in ", dur(r.DurationNs)} {
		b.WriteString(p)
	}
	if r.BlockedNs > 0 {
		b.WriteString(", blocked on IO " + dur(r.BlockedNs))
	}
	b.WriteString("\n")
	c := r.Cache
	switch {
	case r.Direct:
		b.WriteString("  O_DIRECT: the page cache was bypassed\n")
	case c.PagesRequested > 0 || c.PagesAdded > 0:
		b.WriteString("  page cache: " + pl(c.PagesRequested, "page") + " requested: " + unum(c.PagesHit) + " hit, " + unum(c.PagesMissed) + " missed")
		if c.PagesAdded > 0 {
			b.WriteString("; " + pl(c.PagesAdded, "page") + " added (index " + ranges(c.AddedRanges) + ")")
		}
		b.WriteString("\n")
	}
	for _, ra := range c.Readahead {
		b.WriteString("  readahead: " + ra.Kind + ", window " + pl(uint64(ra.Pages), "page") + " from index " + unum(ra.StartIndex))
		if ra.AsyncPages > 0 {
			b.WriteString(" (next async readahead when " + unum(uint64(ra.AsyncPages)) + " remain)")
		}
		if ra.Source == "derived" {
			b.WriteString(" [derived from pages added: no readahead hook on this kernel]")
		}
		b.WriteString("\n")
	}
	switch {
	case r.DirtiedPages > 0 && !tracerIsWrite(r.Syscall):
		fmt.Fprintf(&b, "  dirtied %s of the output file in memory; written back later\n", pl(uint64(r.DirtiedPages), "page"))
	case r.DirtiedPages > 0:
		fmt.Fprintf(&b, "  dirtied %s in memory (index %s); written back later\n", pl(uint64(r.DirtiedPages), "page"), ranges(r.DirtiedRanges))
	case tracerIsWrite(r.Syscall) && r.ReturnedBytes > 0 && tracer.MemoryOnly(r.FS):
		fmt.Fprintf(&b, "  %s keeps file data in memory only: these pages are never written back to a disk\n", r.FS)
	case tracerIsWrite(r.Syscall) && r.ReturnedBytes > 0 && !r.Direct:
		b.WriteString("  dirtied no page: they were already dirty (an earlier write will carry this data to disk)\n")
	}
	if r.OtherDirtiedPages > 0 {
		fmt.Fprintf(&b, "  also dirtied %s of other inodes (filesystem metadata such as the atime update)\n", pl(uint64(r.OtherDirtiedPages), "page"))
	}
	if r.ReadBeforeWritePages > 0 {
		fmt.Fprintf(&b, "  read %s from disk before writing (partial write to an uncached page)\n", pl(uint64(r.ReadBeforeWritePages), "page"))
	}
	if r.ThrottleNs > 0 || r.ThrottlePauses > 0 {
		fmt.Fprintf(&b, "  throttled in balance_dirty_pages: %s in %s (longest %s)\n", dur(r.ThrottleNs), pl(uint64(r.ThrottlePauses), "pause"), dur(r.ThrottleMaxPauseNs))
	}
	if len(r.Bios) == 0 && c.PagesMissed == 0 && !r.Direct && tracerIsRead(r.Syscall) {
		if r.BlockedNs > 0 {
			b.WriteString("  no IO of its own: it waited for pages still being read by an earlier call's readahead\n")
		} else if r.ReturnedBytes == 0 && r.Error == "" {
			b.WriteString("  end of file: nothing to read, no IO\n")
		} else {
			b.WriteString("  disk: no IO (served from the page cache)\n")
		}
	}
	for _, bio := range r.Bios {
		b.WriteString("  " + bioLine(bio) + "\n")
	}
	if line := flushLine(r.DeviceFlush); line != "" {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

func tracerIsWrite(s string) bool {
	switch s {
	case "write", "pwrite64", "writev", "pwritev", "pwritev2", "vfs_write":
		return true
	}
	return false
}

func tracerIsRead(s string) bool {
	switch s {
	case "read", "pread64", "readv", "preadv", "preadv2", "vfs_read", "sendfile", "splice", "copy_file_range":
		return true
	}
	return false
}

func bioLine(bio tracer.Bio) string {
	rwbs := bio.Rwbs
	if len(rwbs) < 3 {
		rwbs += "   "[len(rwbs):] // %-3s
	}
	s := "bio " + rwbs + " " + human(uint64(bio.Bytes)) + " at sector " + strconv.FormatUint(bio.Sector, 10) + " on " + bio.Dev
	if bio.Kind == "flush" && bio.Bytes == 0 {
		s = "device cache flush: request " + bio.Rwbs + " on " + bio.Dev
		if bio.IssueNs == 0 {
			return s + ": ended with no flush request issued (" + dur(bio.Q2CNs) + ")"
		}
	} else if bio.Kind != "" {
		s = bio.Kind + " " + s
	}
	if bio.RequestBios > 1 || bio.RequestBytes != bio.Bytes {
		s += fmt.Sprintf(" (request of %s, %d bios)", human(uint64(bio.RequestBytes)), bio.RequestBios)
	}
	if bio.CompleteNs == 0 {
		return s + ": completion not seen"
	}
	s += ": queued->issued " + dur(sub(bio.IssueNs, bio.QueueNs)) + ", device (D2C) " + dur(bio.D2CNs)
	if bio.Requeues > 0 {
		s += fmt.Sprintf(", requeued %d×", bio.Requeues)
	}
	if bio.Error != "" {
		s += ", error " + bio.Error
	}
	return s
}

func sub(a, b uint64) uint64 {
	if a > b && b != 0 {
		return a - b
	}
	return 0
}

func storyWriteback(w *tracer.Writeback) string {
	target := safe(w.Path)
	if target == "" {
		target = fmt.Sprintf("dev %s ino %d", w.Dev, w.Ino)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "writeback: %s (tid %d, reason %s) wrote %s: %s in the bio, %d dirtied by traced calls\n",
		w.Worker, w.WorkerTid, w.Reason, target, pl(uint64(w.Pages), "page"), w.TrackedPages)
	for _, bio := range w.Bios {
		b.WriteString("  " + bioLine(bio) + "\n")
	}
	return b.String()
}

// opName shows an op_id as tid:sequence (the call's thread and its n-th traced call).
func opName(id uint64) string {
	if id == 0 {
		return "(outside any traced call)"
	}
	return fmt.Sprintf("%d:%d", id>>32, id&0xffffffff)
}

func storyPersisted(p *tracer.Persisted) string {
	target := safe(p.Path)
	if target == "" {
		target = fmt.Sprintf("dev %s ino %d", p.Dev, p.Ino)
	}
	switch p.Outcome {
	case "removed":
		return fmt.Sprintf("persisted: never: %s dirtied by call %s in %s left the page cache before writeback (truncated or evicted)\n", pl(uint64(p.Pages), "page"), opName(p.OpID), target)
	case "failed":
		return fmt.Sprintf("persisted: FAILED: %s of call %s in %s: %s\n", pl(uint64(p.Pages), "page"), opName(p.OpID), target, p.Error)
	}
	what := pl(uint64(p.Pages), "page")
	if p.BytesWritten != uint64(p.Pages)*4096 {
		what = fmt.Sprintf("%s of the %s", human(p.BytesWritten), pl(uint64(p.Pages), "dirty page")) // part of a large folio
	}
	return fmt.Sprintf("persisted: %s dirtied by call %s reached the disk %s after the write (%s, %s), sector %d of %s\n",
		what, opName(p.OpID), dur(p.DirtyToDiskNs), p.Reason, p.Worker, p.Sector, target)
}

func summaryText(s *tracer.Summary) string {
	var b strings.Builder
	b.WriteString("\n--- summary ---\n")
	if s.LostEvents > 0 {
		fmt.Fprintf(&b, "INCOMPLETE: %d events were lost (ring buffer full: raise --ringbuf-size); the totals below miss them\n", s.LostEvents)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tCOMM\tCALLS\tREAD REQ\tHIT\tMISSED\tADDED\tDISK READ\tAMPL\tDIRTIED\tDISK WRITE\tTHROTTLED\tUNATTR")
	for _, p := range s.Pids {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%.2f\t%d\t%s\t%s\t%d\n", p.Pid, safe(p.Comm), p.Calls, human(p.ReadBytesReq),
			p.PagesHit, p.PagesMissed, p.PagesAdded, human(p.DiskBytesRead), p.Amplification, p.DirtiedPages,
			human(p.DiskBytesWrite), dur(p.ThrottleNs), p.Unattributed)
	}
	tw.Flush()
	if len(s.Files) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tDEV\tINO\tCALLS\tREAD REQ\tHIT\tMISSED\tDISK READ\tAMPL\tDIRTIED\tDISK WRITE")
		for _, f := range s.Files {
			name := safe(f.Path)
			if name == "" {
				name = "(cache hits only: path not recorded)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t%s\t%.2f\t%d\t%s\n", name, f.Dev, f.Ino, f.Calls, human(f.ReadBytesReq),
				f.PagesHit, f.PagesMissed, human(f.DiskBytesRead), f.Amplification, f.DirtiedPages, human(f.DiskBytesWrite))
		}
		tw.Flush()
	}
	fmt.Fprintf(&b, "\nlost events: %d; unattributed bios: %d; bios without completion: %d; dirty pages not yet on disk: %d\n",
		s.LostEvents, s.UnattributedBios, s.IncompleteBios, s.DirtyPending)
	b.WriteString(unattributedText(s))
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
		fmt.Fprintf(&b, "%s written %s; cachestat says their files are clean\n", pl(s.DirtyUnseen, "dirty page"), why)
	}
	var ev []string
	for k, v := range s.MapEvictions {
		if v > 0 {
			ev = append(ev, fmt.Sprintf("%s %d", k, v))
		}
	}
	for k, v := range s.Truncations {
		if v > 0 {
			ev = append(ev, fmt.Sprintf("%s truncated %d", k, v))
		}
	}
	sort.Strings(ev)
	if len(ev) > 0 {
		fmt.Fprintf(&b, "map full / truncated (data lost): %s\n", strings.Join(ev, ", "))
	} else {
		b.WriteString("maps: nothing dropped\n")
	}
	return b.String()
}
