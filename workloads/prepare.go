package workloads

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/iopath/iopath/internal/workdir"
	"github.com/iopath/iopath/tracer/kernel"
)

// Prepared is a workload whose file exists, laid out and opened, ready to Run.
type Prepared struct {
	// Spec is the spec with every default filled in.
	Spec Spec
	// Path is the workload's file.
	Path string
	// Base is the offset, in bytes, where the ops' region starts: the file's
	// size before the run for appends, else 0.
	Base int64
	// Cache is the file's page-cache residency checked after dropping it,
	// when Spec.Cold; nil otherwise.
	Cache *Residency
	// Notes are caveats found while preparing, e.g. that Cold could not
	// drop the file from the page cache.
	Notes []string

	tmpDir  string // directory Prepare created, removed by Cleanup
	created bool   // Prepare created Path
	job            // job 0: the one job of a run without --numjobs
	threads []*job // jobs 1..NumJobs-1 with Spec.Thread
	done    bool   // Cleanup ran
}

// job is what one job issues its IO with.
type job struct {
	fd      int    // the file as the workload uses it (O_DIRECT with Spec.Direct); -1 if closed
	buf     []byte // the IO buffer: an anonymous, page-aligned mapping (IODepth slots for async engines)
	mapping []byte // the file's shared mapping, for the mmap engine
	eng     engine // the synchronous engine, or nil
	aeng    asyncEngine
}

// Prepare validates spec, creates or opens the file, lays it out (writing
// real data, or fallocate with Spec.Prealloc), syncs it, drops it from the
// page cache if Spec.Cold, and opens it for the run. All preparation IO
// happens here, so tracing can start after Prepare returns. On error nothing
// Prepare created is left behind.
func Prepare(spec Spec) (*Prepared, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec.fillDefaults()
	p := &Prepared{Spec: spec, job: job{fd: -1}}
	if err := p.prepare(); err != nil {
		p.remove(true)
		return nil, err
	}
	return p, nil
}

// prepare does Prepare's work; the caller removes what it made on error.
func (p *Prepared) prepare() error {
	// Before any file exists: a kernel that refuses the engine leaves nothing behind.
	if err := probeEngine(p.Spec.Engine); err != nil {
		return err
	}
	f, existed, err := p.openFile()
	if err != nil {
		return err
	}
	defer f.Close()
	if err := p.layout(f, existed); err != nil {
		return err
	}
	return p.open()
}

// openFile creates or opens the file for preparation and reports whether it existed.
func (p *Prepared) openFile() (*os.File, bool, error) {
	s := &p.Spec
	mode := os.O_RDWR
	if !isWrite(s.Kind) {
		mode = os.O_RDONLY
	}
	switch {
	case s.File != "":
		fi, err := os.Stat(s.File)
		if err == nil {
			if !fi.Mode().IsRegular() {
				return nil, false, fmt.Errorf("%s is not a regular file: --file needs a regular file (or a new path)", s.File)
			}
			f, err := os.OpenFile(s.File, mode, 0)
			if err != nil {
				return nil, false, fmt.Errorf("cannot open %s: %w", s.File, errnoOf(err))
			}
			p.Path = s.File
			return f, true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("cannot use %s: %w", s.File, errnoOf(err))
		}
		dir := filepath.Dir(s.File)
		if err := checkDir(dir, "--file"); err != nil {
			return nil, false, err
		}
		f, err := os.OpenFile(s.File, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, false, dirError(dir, "--file", err)
		}
		p.Path, p.created = s.File, true
		return f, false, nil
	case s.Dir != "":
		if err := checkDir(s.Dir, "--dir"); err != nil {
			return nil, false, err
		}
		f, err := os.CreateTemp(s.Dir, "iopath-"+s.Kind+"-*.dat")
		if err != nil {
			return nil, false, dirError(s.Dir, "--dir", err)
		}
		p.Path, p.created = f.Name(), true
		return f, false, nil
	default:
		// Named after this process and its pid namespace like
		// session.MkWorkDir's, so a run killed by SIGKILL leaves a
		// directory the next run removes (workdir.CleanStale).
		dir, err := workdir.Make("", "workload")
		if err != nil {
			return nil, false, dirError(os.TempDir(), "--dir (or $TMPDIR)", err)
		}
		p.tmpDir = dir
		if s.Keep {
			if err := workdir.MarkKept(dir); err != nil {
				return nil, false, dirError(dir, "--dir (or $TMPDIR)", err)
			}
		}
		f, err := os.OpenFile(filepath.Join(dir, s.Kind+".dat"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, false, dirError(dir, "--dir (or $TMPDIR)", err)
		}
		p.Path, p.created = f.Name(), true
		return f, false, nil
	}
}

// checkDir checks that dir, given through flag, exists, is a directory,
// and is not on one of the kernel's own filesystems (creating a file in
// /proc fails with ENOENT: "does not exist" would be wrong).
func checkDir(dir, flag string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return dirError(dir, flag, err)
	}
	if !fi.IsDir() {
		return dirError(dir, flag, unix.ENOTDIR)
	}
	if kfs := kernel.PseudoFS(dir); kfs != "" {
		return fmt.Errorf("%s is on %s, a kernel filesystem that holds no files one can create: choose a directory on a disk (or a tmpfs) with %s, e.g. %s /var/tmp", dir, kfs, flag, flag)
	}
	return nil
}

// layout sizes the region, checks O_DIRECT, and writes or allocates the
// file's contents so the run finds what it needs.
func (p *Prepared) layout(f *os.File, existed bool) error {
	s := &p.Spec
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	cur := fi.Size()
	if s.FileSize == 0 {
		s.FileSize = s.defaultFileSize()
		if existed && !s.appends() && cur > 0 {
			s.FileSize = cur
		}
	}
	if s.BlockSize > s.FileSize {
		return fmt.Errorf("block size %d bytes is larger than the file size %d bytes: every op must fit inside the file; use a larger --size or a smaller --bs", s.BlockSize, s.FileSize)
	}
	switch {
	case s.appends():
		p.Base = cur
	case existed && cur == 0:
		return fmt.Errorf("%s is empty: the workload reads or overwrites it and needs data there; give a file with data, or drop --file to let the workload create one (of --size bytes)", p.Path)
	case existed && cur < s.FileSize:
		return fmt.Errorf("%s is %d bytes, smaller than the %d bytes the workload covers: give --size %d or less, or another --file", p.Path, cur, s.FileSize, cur)
	}
	if s.Direct {
		if err := p.checkDirect(); err != nil {
			return err
		}
	}
	if err := checkSpace(p.Path, p.fillBytes(cur)); err != nil {
		return err
	}
	wrote := false
	switch {
	case s.appends() && s.Engine == EngineMmap:
		// A mapping cannot grow the file: size it first, writes fill it in.
		if s.Prealloc {
			err = fallocate(f, 0, p.Base, s.FileSize)
		} else {
			err = f.Truncate(p.Base + s.FileSize)
		}
		if err != nil {
			return err
		}
		p.Notes = append(p.Notes, fmt.Sprintf("mmap cannot append: the file was extended to %d bytes before the run and the writes fill it in", p.Base+s.FileSize))
	case s.appends() && s.Prealloc:
		// Reserve the blocks past the end but keep the size, so writes still append.
		if err := fallocate(f, unix.FALLOC_FL_KEEP_SIZE, p.Base, s.FileSize); err != nil {
			return err
		}
	case !s.appends() && cur < s.FileSize && s.Prealloc:
		if err := fallocate(f, 0, 0, s.FileSize); err != nil {
			return err
		}
	case !s.appends() && cur < s.FileSize:
		if err := fill(f, cur, s.FileSize); err != nil {
			return err
		}
		wrote = true
	}
	if wrote || s.Cold {
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			if isFull(err) {
				return fullError("while syncing", p.Path, s.FileSize, err)
			}
			return fmt.Errorf("fdatasync %s: %w", p.Path, errnoOf(err))
		}
	}
	if s.Cold {
		return p.dropCache(f)
	}
	return nil
}

// fillBytes is how many bytes layout will write or reserve in a file of cur bytes.
func (p *Prepared) fillBytes(cur int64) int64 {
	s := &p.Spec
	switch {
	case s.appends() && s.Prealloc:
		return s.FileSize
	case !s.appends() && cur < s.FileSize:
		return s.FileSize - cur
	}
	return 0 // appends without --prealloc write during the run; mmap appends only truncate
}

// fallocate reserves length bytes at off, explaining a filesystem that cannot.
func fallocate(f *os.File, mode uint32, off, length int64) error {
	err := unix.Fallocate(int(f.Fd()), mode, off, length)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%s does not support fallocate (%s): drop --prealloc", fsName(f.Name()), f.Name())
	case isFull(err):
		return fullError("while preallocating", f.Name(), 0, err)
	}
	return fmt.Errorf("fallocate %s: %w", f.Name(), errnoOf(err))
}

// fill writes pseudo-random data (which no filesystem can compress or
// deduplicate) into f from offset from to offset to.
func fill(f *os.File, from, to int64) error {
	var seed [32]byte
	rng := rand.NewChaCha8(seed)
	chunk := make([]byte, 1<<20)
	for off := from; off < to; {
		b := chunk[:min(int64(len(chunk)), to-off)]
		rng.Read(b)
		n, err := f.WriteAt(b, off)
		off += int64(n)
		if err != nil {
			if isFull(err) {
				return fullError("while filling", f.Name(), off-from, err)
			}
			return fmt.Errorf("writing %s: %w", f.Name(), errnoOf(err))
		}
	}
	return nil
}

// checkDirect checks that the filesystem takes O_DIRECT and that the block
// size and region start meet its alignment.
func (p *Prepared) checkDirect() error {
	s := &p.Spec
	dir := filepath.Dir(p.Path)
	if p.tmpDir != "" {
		dir = filepath.Dir(p.tmpDir) // name $TMPDIR, not the directory about to be removed
	}
	refused := fmt.Errorf("%s (%s) does not support O_DIRECT: open with O_DIRECT failed with EINVAL; drop --direct, or use --dir on a disk filesystem such as ext4 or xfs", dir, fsName(p.Path))
	fd, err := unix.Open(p.Path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EINVAL) {
		return refused
	}
	if err != nil {
		return fmt.Errorf("cannot open %s with O_DIRECT: %w", p.Path, errnoOf(err))
	}
	a, ok := directAlignment(fd)
	unix.Close(fd)
	if !ok {
		return refused
	}
	if a.offset == 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s reports no O_DIRECT alignment (no STATX_DIOALIGN, no block device): bs and offsets were not checked", fsName(p.Path)))
		return nil
	}
	if page := int64(os.Getpagesize()); a.mem > page {
		return fmt.Errorf("O_DIRECT on %s needs buffers aligned to %d bytes (%s), more than a page (%d bytes), which iopath does not support; drop --direct", p.Path, a.mem, a.source, page)
	}
	rule := fmt.Sprintf("O_DIRECT on %s (%s) needs offsets and lengths that are multiples of %d bytes (from %s)", dir, fsName(p.Path), a.offset, a.source)
	if s.Kind == KindRead1Byte {
		return fmt.Errorf("read-1byte cannot use --direct: %s, not 1 byte; use seq-read --direct --bs %d", rule, a.offset)
	}
	if s.BlockSize%a.offset != 0 {
		return fmt.Errorf("--bs %d does not fit O_DIRECT: %s; use --bs %d or another multiple of %d",
			s.BlockSize, rule, max(a.offset, (s.BlockSize+a.offset-1)/a.offset*a.offset), a.offset)
	}
	if p.Base%a.offset != 0 {
		return fmt.Errorf("--direct appends start at the end of %s, offset %d, which does not fit O_DIRECT: %s; use --overwrite or a file whose size is a multiple of %d",
			p.Path, p.Base, rule, a.offset)
	}
	return nil
}

// dropCache evicts the (synced) file from the page cache and checks that it worked.
func (p *Prepared) dropCache(f *os.File) error {
	end := p.Base + p.Spec.FileSize
	if fi, err := f.Stat(); err == nil {
		end = max(end, fi.Size())
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("posix_fadvise(POSIX_FADV_DONTNEED) on %s: %w", p.Path, errnoOf(err))
	}
	r, err := CacheResidency(f, end)
	if err != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("--cold: could not check that %s left the page cache: %v", p.Path, err))
		return nil
	}
	p.Cache = &r
	if r.CachedPages > 0 {
		why := "other processes may have it mapped or locked"
		if n := fsName(p.Path); n == "tmpfs" || n == "ramfs" {
			why = n + " keeps files only in memory; use --dir on a disk filesystem"
		}
		p.Notes = append(p.Notes, fmt.Sprintf("--cold did not work: %d of %d pages of %s are still in the page cache after POSIX_FADV_DONTNEED (%s): %s",
			r.CachedPages, r.TotalPages, p.Path, r.Method, why))
	}
	return nil
}

// open opens the file for the run, once per job (one per thread with
// Spec.Thread; job processes open their own), and applies the access advice.
func (p *Prepared) open() error {
	j, err := p.openJob()
	p.job = j
	if err != nil {
		return err
	}
	if p.Spec.Thread {
		for range p.Spec.NumJobs - 1 {
			j, err := p.openJob()
			p.threads = append(p.threads, &j)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// openJob opens the file and builds a job's IO buffer and engine. On error
// the job holds what was made, for remove to release.
func (p *Prepared) openJob() (j job, err error) {
	s := &p.Spec
	j.fd = -1
	write := isWrite(s.Kind)
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if write {
		flags = unix.O_RDWR | unix.O_CLOEXEC
	}
	if s.Direct {
		flags |= unix.O_DIRECT
	}
	fd, err := unix.Open(p.Path, flags, 0)
	if err != nil {
		return j, fmt.Errorf("cannot open %s: %w", p.Path, errnoOf(err))
	}
	j.fd = fd
	advice := map[string]int{FadviseRandom: unix.FADV_RANDOM, FadviseSequential: unix.FADV_SEQUENTIAL}
	madvice := map[string]int{FadviseRandom: unix.MADV_RANDOM, FadviseSequential: unix.MADV_SEQUENTIAL}
	if s.Fadvise != "" {
		if err := unix.Fadvise(fd, 0, 0, advice[s.Fadvise]); err != nil {
			return j, fmt.Errorf("posix_fadvise on %s: %w", p.Path, errnoOf(err))
		}
	}
	// Each slot starts on a page, as O_DIRECT needs.
	page := int64(os.Getpagesize())
	stride := (s.BlockSize + page - 1) / page * page
	slots := int64(1)
	if async(s.Engine) {
		slots = int64(s.IODepth)
	}
	j.buf, err = unix.Mmap(-1, 0, int(stride*slots), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return j, fmt.Errorf("allocating %d buffers of %d bytes: %w", slots, s.BlockSize, err)
	}
	rand.NewChaCha8([32]byte{1}).Read(j.buf) // data to write; for reads, faults the buffer in now
	if !async(s.Engine) {
		j.buf = j.buf[:s.BlockSize]
	}
	switch s.Engine {
	case EnginePsync:
		j.eng = &psyncEngine{syncCounter: syncCounter{fd: fd}, write: write}
	case EngineSync:
		j.eng = &syncEngine{syncCounter: syncCounter{fd: fd}, s: fdStream{fd: fd}, write: write}
	case EngineStdio:
		j.eng = newStdioEngine(fd, write)
	case EngineMmap:
		prot := unix.PROT_READ
		if write {
			prot |= unix.PROT_WRITE
		}
		j.mapping, err = unix.Mmap(fd, 0, int(p.Base+s.FileSize), prot, unix.MAP_SHARED)
		if err != nil {
			return j, fmt.Errorf("mmap %s: %w", p.Path, errnoOf(err))
		}
		if s.Fadvise != "" {
			if err := unix.Madvise(j.mapping, madvice[s.Fadvise]); err != nil {
				return j, fmt.Errorf("madvise on the mapping of %s: %w", p.Path, errnoOf(err))
			}
		}
		if err := p.madvise(j.mapping); err != nil {
			return j, err
		}
		j.eng = &mmapEngine{m: j.mapping, write: write}
	case EngineLibaio:
		j.aeng, err = newAioEngine(s.IODepth, fd, write, j.buf, stride, s.BlockSize)
	case EngineIOUring:
		j.aeng, err = newUringEngine(s.IODepth, fd, write, j.buf, stride, s.BlockSize, uringOpts{async: s.UringAsync, sqpoll: s.SQPoll, fixed: s.UringFixed, link: s.UringLink})
	}
	if err != nil {
		j.aeng = nil // a nil *aioEngine in the interface would not be nil
	}
	return j, err
}

// release closes what the job holds.
func (j *job) release() []error {
	var errs []error
	if j.aeng != nil {
		errs = append(errs, j.aeng.close()) // waits for requests in flight: before the buffer goes
		j.aeng = nil
	}
	if j.mapping != nil {
		errs = append(errs, unix.Munmap(j.mapping))
		j.mapping = nil
	}
	if j.buf != nil {
		errs = append(errs, unix.Munmap(j.buf[:cap(j.buf)]))
		j.buf = nil
	}
	if j.fd >= 0 {
		errs = append(errs, unix.Close(j.fd))
		j.fd = -1
	}
	return errs
}

// Offsets returns a new generator of the offsets Run uses, in the same order.
func (p *Prepared) Offsets() *Offsets { return p.jobOffsets(0) }

// Cleanup closes the file and removes what Prepare created (the file, and
// the temporary directory) unless Spec.Keep. It is safe to call twice.
func (p *Prepared) Cleanup() error { return p.remove(false) }

// remove releases everything; force removes created files even with Keep.
func (p *Prepared) remove(force bool) error {
	if p.done {
		return nil
	}
	p.done = true
	errs := p.release()
	for _, j := range p.threads {
		errs = append(errs, j.release()...)
	}
	if !p.Spec.Keep || force {
		if p.created && p.tmpDir == "" {
			errs = append(errs, os.Remove(p.Path))
		}
		if p.tmpDir != "" {
			errs = append(errs, os.RemoveAll(p.tmpDir))
		}
	}
	return errors.Join(errs...)
}
