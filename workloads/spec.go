package workloads

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Workload kinds, the values of Spec.Kind.
const (
	KindRead1Byte  = "read-1byte"  // read(2) of 1 byte per call; sequential unless Spec.Random
	KindSmallWrite = "small-write" // writes of BlockSize bytes (default 1): appends, or overwrites with Spec.Overwrite
	KindSeqRead    = "seq-read"    // sequential reads of BlockSize bytes
	KindRandRead   = "rand-read"   // uniformly random block-aligned reads
	KindSeqWrite   = "seq-write"   // sequential writes: appends, or overwrites with Spec.Overwrite
	KindRandWrite  = "rand-write"  // uniformly random block-aligned overwrites
)

// Engines, the values of Spec.Engine: how each op reaches the kernel.
const (
	EnginePsync = "psync" // pread(2)/pwrite(2) at the op's offset; one system call per op
	EngineSync  = "sync"  // lseek(2) when the file position differs from the op's offset, then read(2)/write(2)
	EngineMmap  = "mmap"  // copy to or from a shared mapping of the file: page faults, no read/write calls
	EngineStdio = "stdio" // a 4096-byte user-space buffer over read(2)/write(2), like glibc fread/fwrite
	// EngineLibaio keeps Spec.IODepth requests in flight with Linux native
	// AIO: io_submit(2) and io_getevents(2), like fio's libaio engine.
	EngineLibaio = "libaio"
	// EngineIOUring keeps Spec.IODepth requests in flight on an io_uring
	// (Linux 5.6+): IORING_OP_READ/WRITE submitted and reaped with
	// io_uring_enter(2), like fio's io_uring engine.
	EngineIOUring = "io_uring"
)

// Spec.Fadvise values.
const (
	FadviseRandom     = "random"     // POSIX_FADV_RANDOM (and MADV_RANDOM for mmap): no readahead
	FadviseSequential = "sequential" // POSIX_FADV_SEQUENTIAL (and MADV_SEQUENTIAL for mmap): larger readahead
)

// StdioBufferSize is the user-space buffer of the stdio engine, in bytes: the
// size of glibc's stdio buffer for a file on a 4 KiB-block filesystem.
const StdioBufferSize = 4096

// Defaults; sizes in bytes.
const (
	DefaultBlockSize      = 4096     // block size of seq-read, rand-read, seq-write, rand-write
	DefaultSmallBlockSize = 1        // block size of read-1byte and small-write
	DefaultFileSize       = 64 << 20 // file size of seq-read, rand-read, seq-write, rand-write
	DefaultSmallFileSize  = 1 << 20  // file size of read-1byte and small-write (a million 1-byte calls)
	DefaultSeed           = 1        // seed of random offsets, so runs repeat unless told otherwise
)

// Kinds returns the workload kinds, in the order the help lists them.
func Kinds() []string {
	return []string{KindRead1Byte, KindSmallWrite, KindSeqRead, KindRandRead, KindSeqWrite, KindRandWrite}
}

// Engines returns the IO engines, default first.
func Engines() []string {
	return []string{EnginePsync, EngineSync, EngineMmap, EngineStdio, EngineLibaio, EngineIOUring}
}

// async reports whether the engine keeps many requests in flight.
func async(engine string) bool { return engine == EngineLibaio || engine == EngineIOUring }

// Spec describes one workload. The zero value of each field means its
// default; Prepare fills the defaults in (Prepared.Spec shows them).
type Spec struct {
	// Kind is one of Kinds().
	Kind string
	// Engine is one of Engines(); "" means psync.
	Engine string
	// BlockSize is the bytes each op reads or writes; 0 means 1 for
	// read-1byte and small-write, 4096 for the others.
	BlockSize int64
	// FileSize is the bytes of file the ops cover: offsets stay in
	// [0, FileSize), or for appends in [end of file, end of file + FileSize).
	// 0 means the size of an existing File (for reads and overwrites), else
	// 1 MiB for read-1byte and small-write and 64 MiB for the others.
	FileSize int64
	// Count is the number of ops; 0 means one pass over FileSize
	// (FileSize/BlockSize ops), or no limit when Duration is set.
	// Sequential ops wrap to the start of the region after its end.
	Count int64
	// Duration bounds the run's time; 0 means no time limit. With Count too,
	// whichever is reached first ends the run.
	Duration time.Duration
	// Random picks uniformly random block-aligned offsets for read-1byte, and
	// for small-write with Overwrite. rand-read and rand-write are always random.
	Random bool
	// Seed seeds the random offsets; the same seed gives the same offsets.
	// 0 means DefaultSeed.
	Seed uint64
	// Overwrite makes small-write and seq-write write over an existing, full
	// file instead of appending to an empty one.
	Overwrite bool
	// FsyncEvery calls fsync(2) after every FsyncEvery writes; 0 never.
	FsyncEvery int64
	// FdatasyncEvery calls fdatasync(2) after every FdatasyncEvery writes; 0 never.
	FdatasyncEvery int64
	// Direct opens the file with O_DIRECT: IO bypasses the page cache, and
	// BlockSize and offsets must be multiples of the filesystem's O_DIRECT
	// alignment (statx STATX_DIOALIGN, else the device's logical block size).
	Direct bool
	// Cold drops the file from the page cache before the run
	// (fdatasync, then POSIX_FADV_DONTNEED) and checks that it worked.
	Cold bool
	// Fadvise is "", FadviseRandom or FadviseSequential: the access pattern
	// advice given to the kernel before the run.
	Fadvise string
	// Madvise is "" or one of MadviseRandom, MadviseSequential,
	// MadviseWillneed: madvise(2) advice on the mmap engine's mapping.
	Madvise string
	// MsyncEvery calls msync(MS_SYNC) after every MsyncEvery writes of the
	// mmap engine; 0 never.
	MsyncEvery int64
	// Prealloc reserves the file's blocks with fallocate(2) instead of
	// writing real data into it. Reads of such a file return zeros without
	// touching the disk.
	Prealloc bool
	// Dir is the directory for the file; "" means a new directory under
	// $TMPDIR, removed by Cleanup. Not with File.
	Dir string
	// File is the file to use. An existing file is used as is and never
	// removed; a new one is created and removed by Cleanup unless Keep.
	File string
	// Keep leaves the files that Prepare created in place after Cleanup.
	Keep bool
	// IODepth is the requests each job keeps in flight, 1 to MaxIODepth,
	// with the libaio and io_uring engines; 0 means 1.
	IODepth int
	// IODepthBatch is the most requests one io_submit or io_uring_enter
	// submits, 1 to IODepth; 0 means 1, fio's default (iodepth_batch_submit):
	// each request goes to the device as soon as it is prepared, where a
	// batch would hold the first ones back (plugged) until the last is in.
	IODepthBatch int
	// IODepthCompleteMin is the fewest completions one io_getevents or
	// io_uring_enter waits for, 1 to IODepth (fewer when fewer are in
	// flight); 0 means 1, fio's default (iodepth_batch_complete_min): the
	// loop refills as soon as one request completed. With IODepthBatch, it
	// makes the batches whole: N completions reaped, N requests submitted.
	IODepthCompleteMin int
	// NumJobs is the number of jobs issuing the workload at once on the same
	// file, each with its own open file, buffer, engine and offsets (job i
	// uses seed Seed+i); 0 means 1. The jobs are processes (fio's default),
	// or threads of this process with Thread. Count and Duration are per
	// job; the report has each job and the aggregate (fio's group reporting).
	NumJobs int
	// Thread runs the jobs as threads instead of processes (fio's --thread).
	Thread bool
	// UringAsync sets IOSQE_ASYNC on every io_uring request: the kernel
	// punts it to an io-wq worker without trying it inline (fio's
	// force_async). SQPoll sets the ring up with IORING_SETUP_SQPOLL: a
	// kernel thread of the process (iou-sqp-PID) takes the requests from
	// the submission queue (fio's sqthread_poll).
	UringAsync bool
	SQPoll     bool
	// UringFixed registers the job's file with its ring
	// (IORING_REGISTER_FILES, 5.1+) and every SQE names it by its index 0
	// with IOSQE_FIXED_FILE (fio's registerfiles): no fd lookup per request.
	UringFixed bool
	// UringLink > 0 chains every UringLink SQEs of a submit call with
	// IOSQE_IO_LINK (5.3+): the kernel starts each after the one before it
	// completed, and a failed or short one completes the rest of its chain
	// with -ECANCELED.
	UringLink int

	job jobRole // set in a job process started by Run (the hidden --job flag)
}

// isWrite reports whether the kind writes.
func isWrite(kind string) bool {
	return kind == KindSmallWrite || kind == KindSeqWrite || kind == KindRandWrite
}

// appends reports whether the workload writes at the end of the file, growing it.
func (s *Spec) appends() bool {
	return (s.Kind == KindSmallWrite || s.Kind == KindSeqWrite) && !s.Overwrite
}

// random reports whether offsets are random.
func (s *Spec) random() bool {
	return s.Kind == KindRandRead || s.Kind == KindRandWrite || s.Random
}

// small reports whether the kind defaults to 1-byte ops on a 1 MiB file.
func (s *Spec) small() bool {
	return s.Kind == KindRead1Byte || s.Kind == KindSmallWrite
}

// fillDefaults sets the defaults that do not depend on an existing file.
func (s *Spec) fillDefaults() {
	if s.Engine == "" {
		s.Engine = EnginePsync
	}
	if s.BlockSize == 0 {
		s.BlockSize = DefaultBlockSize
		if s.small() {
			s.BlockSize = DefaultSmallBlockSize
		}
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	if s.IODepth == 0 {
		s.IODepth = 1
	}
	if s.NumJobs == 0 {
		s.NumJobs = 1
	}
	if s.IODepthBatch == 0 {
		s.IODepthBatch = 1
	}
	if s.IODepthCompleteMin == 0 {
		s.IODepthCompleteMin = 1
	}
}

// defaultFileSize is FileSize's default when there is no existing file to size it.
func (s *Spec) defaultFileSize() int64 {
	if s.small() {
		return DefaultSmallFileSize
	}
	return DefaultFileSize
}

// ForLayout is the spec that lays out s's file (session.PrepareWorkFile,
// in the tracer's untraced process): s without what only the run needs, the
// engine's options (queue depth, jobs, io_uring flags, madvise, msync) and
// the mmap and stdio engines (psync instead: the mmap engine would also
// extend an appended file, which the run does itself). With them, the
// preparation held the user's --numjobs aio contexts or an SQPOLL thread
// for the whole trace, and an mmap spec with --madvise failed its
// validation once the engine was psync.
func (s Spec) ForLayout() Spec {
	if s.Engine == EngineMmap || s.Engine == EngineStdio {
		s.Engine = EnginePsync
	}
	s.Madvise, s.MsyncEvery = "", 0
	s.IODepth, s.IODepthBatch, s.IODepthCompleteMin, s.NumJobs, s.Thread = 0, 0, 0, 0, false
	s.UringAsync, s.SQPoll, s.UringFixed, s.UringLink = false, false, false, 0
	return s
}

// Validate checks the spec without touching the filesystem. Prepare calls it
// too; it is exported so callers can reject bad input before doing anything.
func (s Spec) Validate() error {
	s.fillDefaults()
	if !slices.Contains(Kinds(), s.Kind) {
		return fmt.Errorf("unknown workload kind %q: choose one of %s", s.Kind, strings.Join(Kinds(), ", "))
	}
	if !slices.Contains(Engines(), s.Engine) {
		return fmt.Errorf("unknown engine %q: choose one of %s", s.Engine, strings.Join(Engines(), ", "))
	}
	switch {
	case s.BlockSize < 0:
		return fmt.Errorf("block size %d is negative: give a positive number of bytes, e.g. --bs 4k", s.BlockSize)
	case s.FileSize < 0:
		return fmt.Errorf("file size %d is negative: give a positive number of bytes, e.g. --size 64M", s.FileSize)
	case s.Count < 0:
		return fmt.Errorf("op count %d is negative: give a positive --count, or 0 for one pass over the file", s.Count)
	case s.Duration < 0:
		return fmt.Errorf("duration %s is negative: give a positive --duration, e.g. 10s", s.Duration)
	case s.FsyncEvery < 0 || s.FdatasyncEvery < 0:
		return fmt.Errorf("--fsync and --fdatasync take a positive number of writes between syncs")
	}
	if s.Kind == KindRead1Byte && s.BlockSize != 1 {
		return fmt.Errorf("read-1byte always reads 1 byte per call, not %d: use seq-read --bs %d instead", s.BlockSize, s.BlockSize)
	}
	if s.FileSize > 0 && s.BlockSize > s.FileSize {
		return fmt.Errorf("block size %d bytes is larger than the file size %d bytes: every op must fit inside the file; use a larger --size or a smaller --bs", s.BlockSize, s.FileSize)
	}
	if s.Random && s.Kind != KindRead1Byte && s.Kind != KindSmallWrite {
		return fmt.Errorf("--random applies to read-1byte and small-write, not %s: use rand-read or rand-write for random offsets", s.Kind)
	}
	if s.Random && s.Kind == KindSmallWrite && !s.Overwrite {
		return fmt.Errorf("small-write --random needs --overwrite: appends always go to the end of the file")
	}
	if s.Overwrite && s.Kind != KindSmallWrite && s.Kind != KindSeqWrite {
		return fmt.Errorf("--overwrite applies to small-write and seq-write (rand-write always overwrites; reads don't write)")
	}
	if (s.FsyncEvery > 0 || s.FdatasyncEvery > 0) && !isWrite(s.Kind) {
		return fmt.Errorf("--fsync and --fdatasync apply to write workloads, not %s", s.Kind)
	}
	if s.FsyncEvery > 0 && s.FdatasyncEvery > 0 {
		return fmt.Errorf("choose one of --fsync and --fdatasync, not both")
	}
	if s.Direct && (s.Engine == EngineMmap || s.Engine == EngineStdio) {
		return fmt.Errorf("--direct does not combine with --engine %s: O_DIRECT needs the psync, sync, libaio or io_uring engine", s.Engine)
	}
	if err := s.validateQueue(); err != nil {
		return err
	}
	if s.Fadvise != "" && s.Fadvise != FadviseRandom && s.Fadvise != FadviseSequential {
		return fmt.Errorf("unknown --fadvise %q: choose random or sequential", s.Fadvise)
	}
	if err := s.validateMmap(); err != nil {
		return err
	}
	if s.Dir != "" && s.File != "" {
		return fmt.Errorf("give either --dir or --file, not both: --file already names the directory")
	}
	return nil
}
