package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

// SyscallStory is a call's text story: the call and its result, then what
// it did in the page cache (hits, misses, pages added, readahead windows) or
// that it bypassed it (O_DIRECT), pages it dirtied, throttling in
// balance_dirty_pages, and its bios (for fsync-family calls tagged data,
// metadata, journal or flush) with their device time.
func SyscallStory(r *record.Syscall) string {
	var b strings.Builder
	b.Grow(512)
	target := Safe(r.Path)
	if target == "" {
		target = fmt.Sprintf("dev %s ino %d", r.Dev, r.Ino)
	}
	result := Bytes(uint64(r.ReturnedBytes))
	if r.Error != "" {
		result = r.Error
	}
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	unum := func(v uint64) string { return strconv.FormatUint(v, 10) }
	asked := Bytes(r.RequestedBytes)
	if r.RequestedBytes >= 1<<62 {
		asked = "up to EOF" // cp asks copy_file_range for SSIZE_MAX bytes
	}
	args := "fd=" + num(r.Fd) + ", " + asked + " at offset " + unum(r.Offset)
	if r.SyncFlags != "" {
		args += ", " + r.SyncFlags // sync_file_range
	}
	switch r.Syscall {
	case "fsync", "fdatasync", "syncfs":
		args = "fd=" + num(r.Fd)
	case "msync", "madvise":
		args = Bytes(r.RequestedBytes) + " of a mapping, from file offset " + unum(r.Offset)
		if r.Advice != "" {
			args = "MADV_" + strings.ToUpper(r.Advice) + ", " + args
		}
	case "fadvise64":
		args = "fd=" + num(r.Fd) + ", POSIX_FADV_" + strings.ToUpper(r.Advice) + ", " + asked + " at offset " + unum(r.Offset)
	case "sync":
		args, target = "", "all filesystems"
	}
	for _, p := range []string{r.Syscall, "(", args, ") ", target, " [", Safe(r.Comm), " pid ", unum(uint64(r.Pid)), " tid ",
		unum(uint64(r.Tid)), "] -> ", result, " in ", Duration(r.DurationNs)} {
		b.WriteString(p)
	}
	if r.BlockedNs > 0 {
		b.WriteString(", blocked on IO " + Duration(r.BlockedNs))
	}
	b.WriteString("\n")
	c := r.Cache
	switch {
	case r.Direct:
		b.WriteString("  O_DIRECT: the page cache was bypassed\n")
	case r.MemoryOnly:
		b.WriteString("  memory-only write: " + Count(c.PagesRequested, "page") + " of " + r.FS + " memory (not a cache of a disk: neither hit nor miss)\n")
	case record.ClassOf(r.Syscall) == record.ClassAdvice && c.PagesAdded > 0:
		b.WriteString("  page cache: " + Count(c.PagesAdded, "page") + " read ahead on request (index " + Ranges(c.AddedRanges) + ")\n")
	case c.PagesRequested > 0 || c.PagesAdded > 0:
		b.WriteString("  page cache: " + Count(c.PagesRequested, "page") + " requested: " + unum(c.PagesHit) + " hit, " + unum(c.PagesMissed) + " missed")
		if c.PagesAdded > 0 {
			b.WriteString("; " + Count(c.PagesAdded, "page") + " added (index " + Ranges(c.AddedRanges) + ")")
		}
		b.WriteString("\n")
	}
	for _, ra := range c.Readahead {
		b.WriteString("  readahead: " + string(ra.Kind) + ", window " + Count(uint64(ra.Pages), "page") + " from index " + unum(ra.StartIndex))
		if ra.AsyncPages > 0 {
			b.WriteString(" (next async readahead when " + unum(uint64(ra.AsyncPages)) + " remain)")
		}
		if ra.Source == record.SourceDerived {
			b.WriteString(" [derived from pages added: no readahead hook on this kernel]")
		}
		b.WriteString("\n")
	}
	switch {
	case r.DirtiedPages > 0 && !record.IsWrite(r.Syscall):
		fmt.Fprintf(&b, "  dirtied %s of the output file in memory; written back later\n", Count(uint64(r.DirtiedPages), "page"))
	case r.DirtiedPages > 0:
		fmt.Fprintf(&b, "  dirtied %s in memory (index %s); written back later\n", Count(uint64(r.DirtiedPages), "page"), Ranges(r.DirtiedRanges))
	case record.IsWrite(r.Syscall) && r.ReturnedBytes > 0 && kernel.MemoryOnly(r.FS):
		fmt.Fprintf(&b, "  %s keeps file data in memory only: these pages are never written back to a disk\n", r.FS)
	case record.IsWrite(r.Syscall) && r.ReturnedBytes > 0 && !r.Direct:
		b.WriteString("  dirtied no page: they were already dirty (an earlier write will carry this data to disk)\n")
	}
	if r.OtherDirtiedPages > 0 {
		fmt.Fprintf(&b, "  also dirtied %s of other inodes (filesystem metadata such as the atime update)\n", Count(uint64(r.OtherDirtiedPages), "page"))
	}
	if r.ReadBeforeWritePages > 0 {
		fmt.Fprintf(&b, "  read %s from disk before writing (partial write to an uncached page)\n", Count(uint64(r.ReadBeforeWritePages), "page"))
	}
	if r.ThrottleNs > 0 || r.ThrottlePauses > 0 {
		fmt.Fprintf(&b, "  throttled in balance_dirty_pages: %s in %s (longest %s)\n", Duration(r.ThrottleNs), Count(uint64(r.ThrottlePauses), "pause"), Duration(r.ThrottleMaxPauseNs))
	}
	if len(r.Bios) == 0 && c.PagesMissed == 0 && !r.Direct && record.IsRead(r.Syscall) {
		switch {
		case r.BlockedNs > 0:
			b.WriteString("  no IO of its own: it waited for pages still being read by an earlier call's readahead\n")
		case r.ReturnedBytes == 0 && r.Error == "":
			b.WriteString("  end of file: nothing to read, no IO\n")
		default:
			b.WriteString("  disk: no IO (served from the page cache)\n")
		}
	}
	if w := r.SyncWriteback; w != nil {
		b.WriteString("  " + syncWritebackLine(r.Syscall, w) + "\n")
	}
	for _, bio := range r.Bios {
		b.WriteString("  " + bioLine(bio) + "\n")
	}
	if r.Syscall == "sync" && r.DeviceFlush == record.FlushNone {
		b.WriteString("  device cache: no flush request attributed to this call (sync has each filesystem flush its device; a flush another thread sent for it is not attributed)\n")
	} else if line := flushLine(r.DeviceFlush); line != "" {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// syncWritebackLine tells what sync or syncfs had the flusher threads
// write (fs/sync.c: every dirty inode, written and waited for).
func syncWritebackLine(call string, w *record.SyncWriteback) string {
	what := "every dirty inode of every filesystem"
	if call == "syncfs" {
		what = "every dirty inode of this filesystem"
	}
	s := "writeback: started for " + what + " and waited for; "
	if w.Bios == 0 && !w.AtLeast {
		return s + "the flusher threads wrote no page traced calls dirtied (reason sync) while it ran"
	}
	n := Count(w.Bios, "bio")
	if w.AtLeast {
		n = "at least " + n
	}
	return s + "the flusher threads wrote " + Bytes(w.Bytes) + " in " + n + " with pages traced calls dirtied (reason sync: see the writeback records)"
}

// flushLine tells what an fsync-family call did to the device's volatile
// write cache when no flush request appears among its bios.
func flushLine(outcome record.DeviceFlush) string {
	switch outcome {
	case record.FlushNotNeeded:
		return "device cache: write through (queue/write_cache): no flush was needed"
	case record.FlushNone:
		return "device cache: write back, but no flush request served this call (the data may still be in the device's cache)"
	case record.FlushNotRequested:
		return "device cache: not flushed (sync_file_range starts or waits for writeback only; it never flushes the device cache)"
	case record.FlushNoDevice:
		return "device cache: none (no block device)"
	}
	return ""
}

func bioLine(bio record.Bio) string {
	rwbs := bio.Rwbs
	if len(rwbs) < 3 {
		rwbs += "   "[len(rwbs):] // %-3s
	}
	s := "bio " + rwbs + " " + Bytes(uint64(bio.Bytes)) + " at sector " + strconv.FormatUint(bio.Sector, 10) + " on " + bio.Dev
	if bio.Kind == record.BioFlush && bio.Bytes == 0 {
		s = "device cache flush: request " + bio.Rwbs + " on " + bio.Dev
		if bio.IssueNs == 0 {
			return s + ": ended with no flush request issued (" + Duration(bio.Q2CNs) + ")"
		}
	} else if bio.Kind != "" {
		s = string(bio.Kind) + " " + s
	}
	if bio.RequestBios > 1 || bio.RequestBytes != bio.Bytes {
		s += fmt.Sprintf(" (request of %s, %d bios)", Bytes(uint64(bio.RequestBytes)), bio.RequestBios)
	}
	if bio.CompleteNs == 0 {
		return s + ": completion not seen"
	}
	s += ": queued->issued " + Duration(sub(bio.IssueNs, bio.QueueNs)) + ", device (D2C) " + Duration(bio.D2CNs)
	if bio.Requeues > 0 {
		s += fmt.Sprintf(", requeued %d×", bio.Requeues)
	}
	if bio.Error != "" {
		s += ", error " + bio.Error
	}
	return s
}
