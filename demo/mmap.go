package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
)

// mmap-vs-read (issue 14): one access pattern (a byte of every 4 KiB page
// of a cold 8 MiB file, in order) done three ways, each on a freshly
// evicted file: pread(2) of that byte, a load from a private read-only
// mapping, and the same load after madvise(MADV_RANDOM). Each way is one
// traced child (Child); the explanation is made of the records' numbers.
func init() {
	register(&Demo{Name: "mmap-vs-read", Run: runMmap,
		Short: "a byte of every page of a cold 8 MiB file: read(2) vs a mapping vs MADV_RANDOM"})
}

// mmapDemoSize is the demo file's size in bytes; mmapWays are its runs, in
// order (Child kinds "mmap-vs-read:WAY").
const mmapDemoSize = 8 << 20

var mmapWays = []string{"read", "mmap", "mmap-random"}

// MmapRun is what one way of reading cost, from its records on the file.
type MmapRun struct {
	Name          string
	Calls, Faults int // read-family call records, fault records
	Major         int // faults the kernel counted in maj_flt
	// KernelMajor, KernelMinor: the child's own maj_flt and min_flt during
	// the accesses (getrusage), all its faults, not only the traced ones.
	KernelMajor, KernelMinor int64
	// Blocked: records that slept on IO; WaitedMinor: minor faults that
	// slept without a bio of their own (on a page an earlier fault's
	// read-around was still reading).
	Blocked, WaitedMinor int
	Bios                 int
	BioBytes             uint64
	MinBio, MaxBio       uint32            // bytes
	SpanNs               uint64            // first record's start to the last one's end
	BlockedNs            uint64            // time asleep on IO, summed
	FirstRA              *record.Readahead // the earliest record's first readahead decision
	RAKinds              map[record.ReadaheadKind]int
	MaxWindow            uint32 // largest readahead window, pages
	MaxAround            uint64 // largest fault-around window, pages
	recs                 []any
}

func runMmap(o *Options) error {
	dir, fs, cleanup, err := setup(o, "its mappings never read a disk")
	if err != nil {
		return err
	}
	defer cleanup()
	path := filepath.Join(dir, "mmap-vs-read.dat")
	var runs []*MmapRun
	var hooks []tracer.HookStatus
	var lost uint64
	for _, way := range mmapWays {
		left, err := makeColdFile(path, mmapDemoSize)
		if err != nil {
			return err
		}
		if left != 0 {
			return fmt.Errorf("%s: %d pages still cached after posix_fadvise(DONTNEED): the demo needs a cold file; is another process reading it?", path, left)
		}
		dev, ino, err := session.Inode(path)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		tr, err := traceChildOut(o, &out, 0, 0, "mmap-vs-read:"+way, path)
		if err != nil {
			return err
		}
		if _, traced := tracer.FaultUnavailable(tr.hooks); !traced {
			return fmt.Errorf("this kernel gives no fault records (fault_entry=%s, fault_end=%s): the mapping runs cannot be shown; run `iopath doctor` for why",
				mech(tr.hooks, "fault_entry"), mech(tr.hooks, "fault_end"))
		}
		hooks, lost = tr.hooks, lost+tr.sum.LostEvents
		r := MmapRunOf(way, tr.recs, dev, ino)
		if _, err := fmt.Sscanf(out.String(), "maj_flt %d min_flt %d", &r.KernelMajor, &r.KernelMinor); err != nil {
			return fmt.Errorf("the %s run's child printed no fault counts (%q): %w", way, out.String(), err)
		}
		if r.Calls+r.Faults == 0 {
			return fmt.Errorf("saw no traced access to %s in the %s run (lost events: %d): run `iopath doctor`", path, way, tr.sum.LostEvents)
		}
		runs = append(runs, r)
	}
	w := o.Out
	fmt.Fprintf(w, "iopath demo mmap-vs-read: one byte of every 4 KiB page of a cold %s file, three ways\n\n", render.Bytes(mmapDemoSize))
	fmt.Fprintf(w, "file: %s, %s on %s (disk %s, read_ahead_kb=%d), made anew and dropped from the page cache before each run\n",
		path, fs.Type, kernel.Dev(fs.Dev), fs.Disk, fs.ReadAheadKB)
	fmt.Fprintln(w, "traced: pread(fd, &c, 1, off) for every page; loads from a PROT_READ MAP_PRIVATE mapping; the same after madvise(MADV_RANDOM)")
	fmt.Fprintf(w, "hooks: fault_entry=%s, fault_end=%s, readahead=%s, block_rq_issue=%s\n",
		mech(hooks, "fault_entry"), mech(hooks, "fault_end"), mech(hooks, "readahead"), mech(hooks, "block_rq_issue"))
	if fields, _ := tracer.FaultUnavailable(hooks); len(fields) > 0 {
		fmt.Fprintf(w, "unavailable on this kernel: %s\n", strings.Join(fields, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, MmapTable(runs))
	fmt.Fprintln(w)
	fmt.Fprint(w, MmapWhy(runs, fs.ReadAheadKB))
	lostWarning(w, &record.Summary{LostEvents: lost})
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, r := range runs {
			for _, rec := range r.recs {
				enc.Encode(rec)
			}
		}
	}
	return nil
}

// MmapRunOf sums a run's read-family calls and faults on the file (dev,
// ino); other records are left out.
func MmapRunOf(name string, recs []any, dev uint32, ino uint64) *MmapRun {
	r := &MmapRun{Name: name, RAKinds: map[record.ReadaheadKind]int{}}
	var first, last, firstRA uint64 // records come in completion order: the earliest is looked for
	see := func(start, d, blocked uint64, bios []record.Bio, ra []record.Readahead) {
		if first == 0 || start < first {
			first = start
		}
		last = max(last, start+d)
		r.BlockedNs += blocked
		if blocked > 0 {
			r.Blocked++
		}
		for _, b := range bios {
			r.Bios++
			r.BioBytes += uint64(b.Bytes)
			if r.MinBio == 0 || b.Bytes < r.MinBio {
				r.MinBio = b.Bytes
			}
			r.MaxBio = max(r.MaxBio, b.Bytes)
		}
		if len(ra) > 0 && (r.FirstRA == nil || start < firstRA) {
			r.FirstRA, firstRA = &ra[0], start
		}
		for _, d := range ra {
			r.RAKinds[d.Kind]++
			r.MaxWindow = max(r.MaxWindow, d.Pages)
		}
	}
	for _, rec := range recs {
		switch x := rec.(type) {
		case *record.Syscall:
			if x.Ino != ino || x.Dev != kernel.Dev(dev) || !record.IsRead(x.Syscall) {
				continue
			}
			r.Calls++
			see(x.TimeNs, x.DurationNs, x.BlockedNs, x.Bios, x.Cache.Readahead)
		case *record.Fault:
			if x.Ino != ino || x.Dev != kernel.Dev(dev) {
				continue
			}
			r.Faults++
			if x.Major {
				r.Major++
			} else if x.BlockedNs > 0 && len(x.Bios) == 0 {
				r.WaitedMinor++
			}
			if x.FaultAround != nil {
				r.MaxAround = max(r.MaxAround, uint64(x.FaultAround.Pages))
			}
			see(x.TimeNs, x.DurationNs, x.BlockedNs, x.Bios, x.Cache.Readahead)
		default:
			continue
		}
		r.recs = append(r.recs, rec)
	}
	if last > first {
		r.SpanNs = last - first
	}
	return r
}

// bioSizes is "4.0 KiB-2.0 MiB", or "-" without bios.
func (r *MmapRun) bioSizes() string {
	if r.Bios == 0 {
		return "-"
	}
	if r.MinBio == r.MaxBio {
		return render.Bytes(uint64(r.MinBio))
	}
	return render.Bytes(uint64(r.MinBio)) + "-" + render.Bytes(uint64(r.MaxBio))
}

// MmapTable compares the runs; every cell comes from their records.
func MmapTable(runs []*MmapRun) string {
	pages := uint64(mmapDemoSize / 4096)
	rows := [][]string{{"way", "read calls", "faults", "major", "maj/min_flt (getrusage)", "bios", "disk read", "disk pages/access", "bio sizes", "asleep on IO", "time"}}
	for _, r := range runs {
		rows = append(rows, []string{r.Name, fmt.Sprint(r.Calls), fmt.Sprint(r.Faults), fmt.Sprint(r.Major),
			fmt.Sprintf("%d/%d", r.KernelMajor, r.KernelMinor), fmt.Sprint(r.Bios),
			render.Bytes(r.BioBytes), fmt.Sprintf("%.2f", float64(r.BioBytes)/4096/float64(pages)), r.bioSizes(),
			render.Duration(r.BlockedNs), render.Duration(r.SpanNs)})
	}
	return demoTable(rows)
}

// MmapWhy explains the table with its own numbers: runs are read, mmap and
// mmap-random (mmapWays); readAheadKB is the device's read_ahead_kb.
func MmapWhy(runs []*MmapRun, readAheadKB int) string {
	var b strings.Builder
	pages := uint64(mmapDemoSize / 4096)
	read, mm, rnd := runs[0], runs[1], runs[2]
	fmt.Fprintf(&b, "read(2): %s of 1 byte, one per page. ", render.Count(uint64(read.Calls), "call"))
	if ra := read.FirstRA; ra != nil {
		fmt.Fprintf(&b, "The first call's %s readahead read %s from page %d; in all the kernel made %s, windows up to %s, ",
			ra.Kind, render.Count(uint64(ra.Pages), "page"), ra.StartIndex, raSummary(read.RAKinds), render.Count(uint64(read.MaxWindow), "page"))
	}
	fmt.Fprintf(&b, "and the file came in %s (%s).\n", render.Count(uint64(read.Bios), "bio"), read.bioSizes())
	fmt.Fprintf(&b, "mapping: no read calls; %s on the file were traced, %d major (the thread's own count over the loop: maj_flt %d, min_flt %d). ",
		render.Count(uint64(mm.Faults), "fault"), mm.Major, mm.KernelMajor, mm.KernelMinor)
	if ra := mm.FirstRA; ra != nil {
		fmt.Fprintf(&b, "The first fault's decision was %s of %s from page %d (read_ahead_kb=%d); in all %s. ",
			ra.Kind, render.Count(uint64(ra.Pages), "page"), ra.StartIndex, readAheadKB, raSummary(mm.RAKinds))
	}
	if uint64(mm.Faults) < pages {
		fmt.Fprintf(&b, "Fault-around maps cached pages next to a fault without IO, so there were fewer faults than pages touched (%d", pages)
		if mm.MaxAround > 0 {
			fmt.Fprintf(&b, "; windows up to %s", render.Count(mm.MaxAround, "page"))
		}
		b.WriteString("). ")
	}
	fmt.Fprintf(&b, "%s slept on pages still being read by an earlier read-around, without a bio of their own.\n", render.Count(uint64(mm.WaitedMinor), "minor fault"))
	fmt.Fprintf(&b, "MADV_RANDOM: read-around is off, %s (%d major), ", render.Count(uint64(rnd.Faults), "fault"), rnd.Major)
	if rnd.Major > 0 && rnd.BioBytes == uint64(rnd.Major)*4096 {
		b.WriteString("each major fault read only its own page: ")
	}
	fmt.Fprintf(&b, "%s of %s, %s read, and %s asleep on the disk in all.\n",
		render.Count(uint64(rnd.Bios), "bio"), rnd.bioSizes(), render.Bytes(rnd.BioBytes), render.Duration(rnd.BlockedNs))
	if mm.SpanNs > 0 && rnd.SpanNs > 0 {
		fmt.Fprintf(&b, "Same bytes, same pattern: MADV_RANDOM took %.1f× the time of the plain mapping", float64(rnd.SpanNs)/float64(mm.SpanNs))
		if read.SpanNs > 0 {
			fmt.Fprintf(&b, ", and the mapping %.1f× that of read(2)", float64(mm.SpanNs)/float64(read.SpanNs))
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// raSummary names readahead decisions by kind: "3 readahead decisions
// (async 2, read-around 1)".
func raSummary(kinds map[record.ReadaheadKind]int) string {
	var n int
	var parts []string
	for _, k := range []record.ReadaheadKind{record.ReadaheadSync, record.ReadaheadAsync, record.ReadaheadReadAround, record.ReadaheadNone, record.ReadaheadUnknown} {
		if kinds[k] > 0 {
			n += kinds[k]
			parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
		}
	}
	if n == 0 {
		return "no readahead decision"
	}
	return render.Count(uint64(n), "readahead decision") + " (" + strings.Join(parts, ", ") + ")"
}
