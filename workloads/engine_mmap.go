package workloads

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mmapEngine copies between the buffer and a shared mapping of the file, so
// the kernel sees page faults instead of read/write calls. sync is
// msync(MS_SYNC) of the whole mapping.
type mmapEngine struct {
	m      []byte
	write  bool
	msyncs int64
}

func (e *mmapEngine) op(buf []byte, off int64) (int, error) {
	if e.write {
		return copy(e.m[off:off+int64(len(buf))], buf), nil
	}
	return copy(buf, e.m[off:off+int64(len(buf))]), nil
}

func (e *mmapEngine) sync(bool) error {
	e.msyncs++
	return retry(func() error { return unix.Msync(e.m, unix.MS_SYNC) })
}

func (e *mmapEngine) finish() error { return nil }

func (e *mmapEngine) reset(bool) { e.msyncs = 0 }

func (e *mmapEngine) calls() []SyscallCount {
	if e.msyncs == 0 {
		return nil
	}
	return []SyscallCount{{Name: "msync", Calls: e.msyncs}}
}

// Spec.Madvise values: madvise(2) advice given to the mmap engine's mapping
// before the run.
const (
	MadviseRandom     = "random"     // MADV_RANDOM: a fault reads only its page (no read-around)
	MadviseSequential = "sequential" // MADV_SEQUENTIAL: faults read ahead like sequential reads
	MadviseWillneed   = "willneed"   // MADV_WILLNEED: the kernel reads the whole mapping ahead now
)

var madvices = map[string]int{MadviseRandom: unix.MADV_RANDOM, MadviseSequential: unix.MADV_SEQUENTIAL, MadviseWillneed: unix.MADV_WILLNEED}

// validateMmap checks the mmap engine's own flags (--madvise, --msync).
func (s *Spec) validateMmap() error {
	if s.Madvise != "" {
		if _, ok := madvices[s.Madvise]; !ok {
			return fmt.Errorf("unknown --madvise %q: choose random, sequential or willneed", s.Madvise)
		}
		if s.Engine != EngineMmap {
			return fmt.Errorf("--madvise applies to --engine mmap (for read/write calls use --fadvise)")
		}
	}
	switch {
	case s.MsyncEvery < 0:
		return fmt.Errorf("--msync takes a positive number of writes between msync calls")
	case s.MsyncEvery > 0 && (s.Engine != EngineMmap || !isWrite(s.Kind)):
		return fmt.Errorf("--msync applies to write workloads with --engine mmap (writes through the mapping)")
	case s.MsyncEvery > 0 && (s.FsyncEvery > 0 || s.FdatasyncEvery > 0):
		return fmt.Errorf("choose one of --msync, --fsync and --fdatasync")
	}
	return nil
}

// madvise applies Spec.Madvise to a job's mapping.
func (p *Prepared) madvise(m []byte) error {
	if p.Spec.Madvise == "" {
		return nil
	}
	if err := unix.Madvise(m, madvices[p.Spec.Madvise]); err != nil {
		return fmt.Errorf("madvise(MADV_%s) on the mapping of %s: %w", strings.ToUpper(p.Spec.Madvise), p.Path, errnoOf(err))
	}
	return nil
}

// Faults is what the mmap engine's page faults cost, from the kernel's
// counts for the run (getrusage, /proc/thread-self/io).
type Faults struct {
	Minor int64 `json:"minor"` // served from the page cache
	Major int64 `json:"major"` // the page was not cached: the fault read it from storage
	// DiskBytesPerMajor is the run thread's storage reads (read_bytes) per
	// major fault: the faulting page plus its read-around.
	DiskBytesPerMajor float64 `json:"disk_bytes_per_major_fault"`
	// ReadAroundPages is the window a major fault reads around its page
	// without madvise: the file's readahead size (the device's
	// read_ahead_kb / 4 KiB); -1 if unknown. MADV_RANDOM reads 1 page,
	// MADV_SEQUENTIAL reads ahead like read(2).
	ReadAroundPages int `json:"read_around_pages"`
}

// mmapFaults builds the report's fault section (nil for other engines).
func (p *Prepared) mmapFaults(r *Report) *Faults {
	if p.Spec.Engine != EngineMmap {
		return nil
	}
	f := &Faults{Minor: r.MinorFaults, Major: r.MajorFaults, ReadAroundPages: readAroundPages(p.Path)}
	if r.Kernel != nil && f.Major > 0 {
		f.DiskBytesPerMajor = float64(r.Kernel.ReadBytes) / float64(f.Major)
	}
	return f
}

// readAroundPages reads the read_ahead_kb of the device holding path.
func readAroundPages(path string) int {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return -1
	}
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	for _, q := range []string{sys + "/queue/read_ahead_kb", sys + "/../queue/read_ahead_kb"} {
		if b, err := os.ReadFile(q); err == nil {
			if kb, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return kb / 4
			}
		}
	}
	return -1
}
