package demo

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer/kernel"
)

func init() {
	register(&Demo{Name: "read-1byte", Run: runRead1,
		Short: "read(fd, &c, 1) on a cold 1 MiB file, then again warm: what reached the disk"})
}

func runRead1(o *Options) error {
	dir, fs, cleanup, err := setup(o, "its reads never reach a disk")
	if err != nil {
		return err
	}
	defer cleanup()
	path := filepath.Join(dir, "read-1byte.dat")
	left, err := makeColdFile(path, 1<<20)
	if err != nil {
		return err
	}
	dev, ino, err := session.Inode(path)
	if err != nil {
		return err
	}
	tr, err := traceChild(o, 0, 0, "read-1byte", path)
	if err != nil {
		return err
	}
	recs, sum, hooks := tr.recs, tr.sum, tr.hooks
	calls := FileRecords(recs, dev, ino)
	w := o.Out
	fmt.Fprintln(w, "iopath demo read-1byte: what does read(fd, &c, 1) cost?")
	fmt.Fprintln(w)
	where := fmt.Sprintf("%s on %s", fs.Type, kernel.Dev(fs.Dev))
	if fs.BlockDevice {
		where += fmt.Sprintf(" (disk %s, read_ahead_kb=%d)", fs.Disk, fs.ReadAheadKB)
	}
	fmt.Fprintf(w, "file: %s, 1 MiB, %s\n", path, where)
	fmt.Fprintf(w, "evicted with posix_fadvise(POSIX_FADV_DONTNEED): %d of 256 pages still cached (mincore)\n", left)
	fmt.Fprintf(w, "traced: read(fd, &c, 1) at offset 0, twice, in a child process (hooks: vfs_read=%s, readahead=%s, block=%s)\n\n",
		mech(hooks, "vfs_read"), mech(hooks, "readahead"), mech(hooks, "block_rq_issue"))
	if len(calls) < 2 {
		return fmt.Errorf("expected 2 traced reads of %s, saw %d (lost events: %d): run `iopath doctor`", path, len(calls), sum.LostEvents)
	}
	for _, c := range calls[:2] {
		fmt.Fprint(w, render.SyscallStory(c))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, explainRead(calls[0], "first read (cold)", fs))
	fmt.Fprint(w, explainRead(calls[1], "second read (warm)", fs))
	lostWarning(w, sum)
	if o.JSON {
		enc := json.NewEncoder(w)
		for _, c := range calls[:2] {
			enc.Encode(c)
		}
	}
	return nil
}

// explainRead says in plain words what one read did, from its record only.
func explainRead(c *record.Syscall, title string, fs session.FS) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s(…, %d byte at offset %d) returned %d byte in %s", title, c.Syscall, c.RequestedBytes, c.Offset, c.ReturnedBytes, render.Duration(c.DurationNs))
	if c.BlockedNs > 0 {
		fmt.Fprintf(&b, ", %s of it asleep waiting for the device", render.Duration(c.BlockedNs))
	}
	b.WriteString(".\n")
	cc := c.Cache
	if cc.PagesMissed == 0 && len(c.Bios) == 0 {
		fmt.Fprintf(&b, "  It was a page-cache hit: %d page requested, %d hit, no disk IO.\n", cc.PagesRequested, cc.PagesHit)
		return b.String()
	}
	fmt.Fprintf(&b, "  It missed the page cache: %d of %d requested page was not cached.\n", cc.PagesMissed, cc.PagesRequested)
	for _, ra := range cc.Readahead {
		fmt.Fprintf(&b, "  The kernel's %s readahead chose a window of %d pages (%s) starting at page %d", ra.Kind, ra.Pages, render.Bytes(uint64(ra.Pages)*4096), ra.StartIndex)
		if ra.Source == record.SourceDerived {
			b.WriteString(" (derived from the pages added: this kernel has no readahead hook)")
		}
		b.WriteString(",\n")
	}
	fmt.Fprintf(&b, "  so %d pages (%s) were added to the page cache for 1 byte asked.\n", cc.PagesAdded, render.Bytes(cc.PagesAdded*4096))
	if !fs.BlockDevice {
		fmt.Fprintf(&b, "  The file is on %s, which has no block device: no disk was involved.\n", fs.Type)
		return b.String()
	}
	var bytes uint64
	var d2c uint64
	var flags []string
	for _, bio := range c.Bios {
		bytes += uint64(bio.Bytes)
		d2c = max(d2c, bio.D2CNs)
		flags = append(flags, bio.Rwbs)
	}
	fmt.Fprintf(&b, "  The disk read %s in %s (rwbs %s", render.Bytes(bytes), render.Count(uint64(len(c.Bios)), "bio"), strings.Join(flags, ","))
	if strings.Contains(strings.Join(flags, ""), "A") {
		b.WriteString(": A = readahead")
	}
	fmt.Fprintf(&b, "); the device took %s (D2C).\n", render.Duration(d2c))
	if c.RequestedBytes > 0 {
		fmt.Fprintf(&b, "  Amplification: %d bytes read from disk per byte asked.\n", bytes/c.RequestedBytes)
	}
	return b.String()
}
