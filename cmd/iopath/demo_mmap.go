package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// demo mmap-vs-read: one access pattern (a byte of every 4 KiB page of a
// cold 8 MiB file, in order) done three ways, each on a freshly evicted
// file: read(2) of that byte, a load from a private read-only mapping, and
// the same load after madvise(MADV_RANDOM). Each run is traced; the
// explanation is made of the records' numbers.

const mmapDemoSize = 8 << 20

func init() {
	demos["mmap-vs-read"] = struct {
		short string
		run   func(cmd *cobra.Command, f *demoFlags, args []string) error
	}{"a byte of every page of a cold 8 MiB file: read(2) vs a mapping vs MADV_RANDOM", runDemoMmap}
	for _, k := range []string{"read", "mmap", "mmap-random"} {
		demoChildren["mmap-vs-read:"+k] = mmapDemoChild
	}
}

// mmapRun is what one way of reading cost, from its records.
type mmapRun struct {
	name            string
	calls, faults   int // records on the file
	major, blocked  int
	bios            int
	bioBytes        uint64
	minBio, maxBio  uint32
	spanNs, blockNs uint64
	firstRA         *record.Readahead // the first readahead decision seen
	raKinds         map[record.ReadaheadKind]int
	maxWindow       uint32 // pages
	recs            []any
}

func runDemoMmap(cmd *cobra.Command, f *demoFlags, _ []string) error {
	if err := tracer.Preflight(); err != nil {
		return err
	}
	dir, cleanup, err := demoDir(f)
	if err != nil {
		return err
	}
	defer cleanup()
	fs := describeFS(dir)
	if !fs.blockDevice {
		return fmt.Errorf("%s is on %s, which has no block device: its mappings never read a disk; use --dir on a disk-backed filesystem such as /var/tmp", filepath.Dir(dir), fs.fsType)
	}
	path := filepath.Join(dir, "mmap-vs-read.dat")
	w := cmd.OutOrStdout()
	fmt.Fprintln(w, "iopath demo mmap-vs-read: one byte of every 4 KiB page of a cold 8 MiB file, three ways")
	fmt.Fprintf(w, "file: %s, %s on %s (disk %s, read_ahead_kb=%d)\n\n", path, fs.fsType, kernel.Dev(fs.dev), fs.disk, fs.readAheadKB)
	var runs []*mmapRun
	for _, mode := range []string{"read", "mmap", "mmap-random"} {
		left, err := makeColdFile(path, mmapDemoSize)
		if err != nil {
			return err
		}
		if left != 0 {
			return fmt.Errorf("%s: %d pages still cached after posix_fadvise(DONTNEED): the demo needs a cold file", path, left)
		}
		dev, ino, err := inode(path)
		if err != nil {
			return err
		}
		recs, sum, _, err := traceChild(cmd, tracer.Options{}, 0, nil, "mmap-vs-read:"+mode, path)
		if err != nil {
			return err
		}
		if sum.LostEvents > 0 {
			fmt.Fprintf(w, "warning: %d events were lost in the %s run; its numbers may be incomplete\n", sum.LostEvents, mode)
		}
		runs = append(runs, summarizeMmapRun(mode, recs, dev, ino))
	}
	explainMmapRuns(w, runs, fs)
	if f.json {
		enc := json.NewEncoder(w)
		for _, r := range runs {
			for _, rec := range r.recs {
				enc.Encode(rec)
			}
		}
	}
	return nil
}

func summarizeMmapRun(name string, recs []any, dev uint32, ino uint64) *mmapRun {
	r := &mmapRun{name: name, raKinds: map[record.ReadaheadKind]int{}}
	var first, last, firstRA uint64 // records come in completion order: the first is the earliest
	see := func(start, d, blocked uint64, bios []record.Bio, ra []record.Readahead) {
		if first == 0 || start < first {
			first = start
		}
		last = max(last, start+d)
		r.blockNs += blocked
		if blocked > 0 {
			r.blocked++
		}
		for _, b := range bios {
			r.bios++
			r.bioBytes += uint64(b.Bytes)
			if r.minBio == 0 || b.Bytes < r.minBio {
				r.minBio = b.Bytes
			}
			r.maxBio = max(r.maxBio, b.Bytes)
		}
		if len(ra) > 0 && (r.firstRA == nil || start < firstRA) {
			r.firstRA, firstRA = &ra[0], start
		}
		for _, d := range ra {
			r.raKinds[d.Kind]++
			r.maxWindow = max(r.maxWindow, d.Pages)
		}
	}
	for _, rec := range recs {
		switch x := rec.(type) {
		case *record.Syscall:
			if x.Ino != ino || x.Dev != kernel.Dev(dev) || !record.IsRead(x.Syscall) {
				continue
			}
			r.calls++
			see(x.TimeNs, x.DurationNs, x.BlockedNs, x.Bios, x.Cache.Readahead)
		case *record.Fault:
			if x.Ino != ino || x.Dev != kernel.Dev(dev) {
				continue
			}
			r.faults++
			if x.Major {
				r.major++
			}
			see(x.TimeNs, x.DurationNs, x.BlockedNs, x.Bios, x.Cache.Readahead)
		default:
			continue
		}
		r.recs = append(r.recs, rec)
	}
	r.spanNs = sub(last, first)
	return r
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

func explainMmapRuns(w io.Writer, runs []*mmapRun, fs fsInfo) {
	pages := uint64(mmapDemoSize / 4096)
	fmt.Fprintf(w, "%-12s %6s %7s %6s %6s %10s %12s %18s %10s\n", "way", "calls", "faults", "major", "bios", "disk read", "pages/access", "bio sizes", "time")
	for _, r := range runs {
		sizes := "-"
		if r.bios > 0 {
			sizes = human(uint64(r.minBio)) + "-" + human(uint64(r.maxBio))
		}
		fmt.Fprintf(w, "%-12s %6d %7d %6d %6d %10s %12.2f %18s %10s\n", r.name, r.calls, r.faults, r.major, r.bios, human(r.bioBytes),
			float64(r.bioBytes)/4096/float64(pages), sizes, dur(r.spanNs))
	}
	fmt.Fprintln(w)
	read, mm, rnd := runs[0], runs[1], runs[2]
	fmt.Fprintf(w, "read(2): %d calls of 1 byte, one per page. ", read.calls)
	if ra := read.firstRA; ra != nil {
		fmt.Fprintf(w, "The first call's %s readahead read %s from page %d; in all the kernel made %s, windows up to %s, ",
			ra.Kind, pl(uint64(ra.Pages), "page"), ra.StartIndex, raSummary(read.raKinds), pl(uint64(read.maxWindow), "page"))
	}
	fmt.Fprintf(w, "and the file came in %s (%s to %s each).\n", pl(uint64(read.bios), "bio"), human(uint64(read.minBio)), human(uint64(read.maxBio)))
	fmt.Fprintf(w, "mapping: no read calls; %s on the file were traced (%d major: the kernel's maj_flt). ", pl(uint64(mm.faults), "fault"), mm.major)
	if ra := mm.firstRA; ra != nil {
		fmt.Fprintf(w, "The first fault's decision was %s of %s from page %d (read_ahead_kb=%d); in all %s. ", ra.Kind, pl(uint64(ra.Pages), "page"), ra.StartIndex, fs.readAheadKB, raSummary(mm.raKinds))
	}
	fmt.Fprintf(w, "Fault-around maps cached pages next to a fault without IO, so there were fewer faults than pages (%d); %d faults slept on pages still being read.\n", pages, mm.blocked)
	fmt.Fprintf(w, "MADV_RANDOM: read-around is off, so each fault read only its own page: %d major faults, %s of %s, and %s asleep on the disk in all.\n",
		rnd.major, pl(uint64(rnd.bios), "bio"), human(uint64(rnd.maxBio)), dur(rnd.blockNs))
	if mm.spanNs > 0 && rnd.spanNs > 0 {
		fmt.Fprintf(w, "Same bytes, same pattern: MADV_RANDOM took %.1f× the time of the plain mapping.\n", float64(rnd.spanNs)/float64(mm.spanNs))
	}
}

// raSummary names readahead decisions by kind: "3 decisions (read-around 1, async 2)".
func raSummary(kinds map[record.ReadaheadKind]int) string {
	var n int
	var parts []string
	for _, k := range []record.ReadaheadKind{record.ReadaheadSync, record.ReadaheadAsync, record.ReadaheadReadAround, record.ReadaheadNone, record.ReadaheadUnknown} {
		if kinds[k] > 0 {
			n += kinds[k]
			parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
		}
	}
	return pl(uint64(n), "readahead decision") + " (" + strings.Join(parts, ", ") + ")"
}

// mmapDemoChild is the traced side of mmap-vs-read: one byte of every page
// of the file, by pread(2) or by loads from a mapping.
func mmapDemoChild(kind, path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if kind == "mmap-vs-read:read" {
		var c [1]byte
		for off := int64(0); off < mmapDemoSize; off += 4096 {
			if _, err := unix.Pread(fd, c[:], off); err != nil {
				return err
			}
		}
		return nil
	}
	m, err := unix.Mmap(fd, 0, mmapDemoSize, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	if kind == "mmap-vs-read:mmap-random" {
		if err := unix.Madvise(m, unix.MADV_RANDOM); err != nil {
			return err
		}
	}
	var sum byte
	for off := 0; off < mmapDemoSize; off += 4096 {
		sum += m[off]
	}
	runtime.KeepAlive(sum) // the loads must happen
	return nil
}
