package workloads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"time"
	"unsafe"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// maxLatency is the largest latency the histograms record, in ns; longer ops count as this.
const maxLatency = int64(time.Hour)

// ctxCheckEvery is how many ops run between checks for cancellation.
const ctxCheckEvery = 1024

// runState is what the loop has done so far; it lives outside the loop's
// registers so a fault in the mmap engine can still report it.
type runState struct {
	ops     int64
	bytes   int64 // bytes of completed ops, plus the partial last one
	elapsed time.Duration
	lat     *hdrhistogram.Histogram
	syncLat *hdrhistogram.Histogram
	stopped bool // cancelled through the context

	// Async engines only: fio's latency split (lat is the total) and exact sums.
	slat, clat  *hdrhistogram.Histogram
	sums        [3]int64 // ns of slat, clat, lat
	maxInflight int
}

// Run performs the workload and reports it. It locks the calling goroutine
// to its OS thread and issues every op from that thread, so the thread's
// /proc/thread-self/io counts exactly the workload's system calls (reported
// as Report.Kernel). On an IO error it returns the error together with a
// Report of what completed before it. Cancelling ctx stops the run early
// (checked every 1024 ops); the Report then has Interrupted set. With
// Spec.NumJobs > 1 it runs the jobs (threads, or processes running this
// executable) at once and reports each and their aggregate.
func (p *Prepared) Run(ctx context.Context) (*Report, error) {
	if p.done {
		return nil, errors.New("workload already cleaned up")
	}
	switch s := &p.Spec; {
	case s.job.of > 0:
		return p.runJobProcess(ctx)
	case s.NumJobs > 1 && s.Thread:
		return p.runThreads(ctx)
	case s.NumJobs > 1:
		return p.runProcesses(ctx)
	}
	return p.runJob(ctx, &p.job, 0, nil)
}

// runJob runs job j, the job with the given index, from one locked thread.
// gate, if not nil, is called once the job is ready and returns when all
// jobs may start.
func (p *Prepared) runJob(ctx context.Context, j *job, index int, gate func()) (*Report, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := &runState{lat: newHist(), syncLat: newHist()}
	if j.eng != nil {
		j.eng.reset(rawSyscalls)
	} else {
		j.aeng.reset(rawSyscalls)
	}
	offs := p.jobOffsets(index)
	pioPath := procIOPath(&p.Spec)
	pio, pioErr := openIOAccounting(&p.Spec)
	if pio != nil {
		defer pio.close()
	}
	if j.mapping != nil {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	}
	who := unix.RUSAGE_SELF
	if p.Spec.Thread && p.Spec.NumJobs > 1 {
		who = unix.RUSAGE_THREAD
	}
	if gate != nil {
		gate()
	} else {
		runtime.GC() // so the collector has nothing to do during the run
	}
	var ru0, ru1 unix.Rusage
	var io0, io1 ioSnapshot
	if pio != nil {
		io0, pioErr = pio.read()
	}
	unix.Getrusage(who, &ru0)
	var err error
	if j.aeng != nil {
		err = p.asyncRun(ctx, j, st, offs)
	} else {
		err = p.loop(ctx, j, st, offs)
	}
	unix.Getrusage(who, &ru1)
	if pio != nil && pioErr == nil {
		io1, pioErr = pio.read()
	}
	rep := p.report(j, st, &ru0, &ru1)
	if pioErr == nil {
		d := io1.delta(io0)
		rep.Kernel, rep.KernelScope = &d, pioPath
	} else {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no kernel IO accounting (%s): %v", pioPath, pioErr))
	}
	rep.Faults = p.mmapFaults(rep)
	if err != nil {
		return rep, p.runError(err, rep)
	}
	return rep, nil
}

// asyncRun runs the async engine's loop and copies its results into st.
func (p *Prepared) asyncRun(ctx context.Context, j *job, st *runState, offs *Offsets) error {
	s := &p.Spec
	l := newAsyncLoop(j.aeng, s.IODepth, s.BlockSize)
	l.limit = s.Count
	if l.limit == 0 {
		l.limit = math.MaxInt64
		if s.Duration == 0 {
			l.limit = offs.Blocks()
		}
	}
	if s.Duration > 0 {
		l.deadline = s.Duration
	}
	l.next, l.done, l.batch, l.completeMin = offs.Next, ctx.Done(), s.IODepthBatch, s.IODepthCompleteMin
	l.syncEvery, l.syncLat = s.FsyncEvery, st.syncLat
	if s.FdatasyncEvery > 0 {
		l.syncEvery, l.dataSync = s.FdatasyncEvery, true
	}
	start := time.Now()
	l.now = func() time.Duration { return time.Since(start) }
	err := l.run()
	var short errShort
	if errors.As(err, &short) && isWrite(s.Kind) && short.n > 0 {
		// Like psync's pwrite: write the rest, which either completes or
		// returns the reason (such as ENOSPC).
		rest := j.buf[short.n:s.BlockSize]
		n, werr := sysIO(false, unix.SYS_PWRITE64, j.fd, rest, short.off+short.n)
		l.bytes += int64(max(n, 0))
		if werr != nil {
			err = werr
		}
	}
	st.ops, st.bytes, st.elapsed, st.stopped = l.ops, l.bytes, l.elapsed, l.stopped
	st.lat, st.slat, st.clat, st.sums, st.maxInflight = l.lat, l.slat, l.clat, l.sums, l.maxInflight
	return err
}

// jobOffsets returns job index's offsets: job i uses seed Seed+i.
func (p *Prepared) jobOffsets(index int) *Offsets {
	s := &p.Spec
	return NewOffsets(p.Base, s.FileSize, s.BlockSize, s.random(), s.Seed+uint64(index))
}

// loop is the measured hot loop: one clock read per op (and per sync), no
// allocation. Latency of an op is the time between consecutive clock reads.
func (p *Prepared) loop(ctx context.Context, j *job, st *runState, offs *Offsets) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = faultError(r, j.mapping)
		}
	}()
	s := &p.Spec
	eng, buf, bs := j.eng, j.buf, s.BlockSize
	limit := s.Count
	if limit == 0 {
		limit = math.MaxInt64
		if s.Duration == 0 {
			limit = offs.Blocks()
		}
	}
	deadline := time.Duration(math.MaxInt64)
	if s.Duration > 0 {
		deadline = s.Duration
	}
	syncEvery, dataSync := s.FsyncEvery, false
	if s.FdatasyncEvery > 0 {
		syncEvery, dataSync = s.FdatasyncEvery, true
	}
	if s.MsyncEvery > 0 {
		syncEvery = s.MsyncEvery // the mmap engine's sync is msync(MS_SYNC)
	}
	toSync := syncEvery
	done := ctx.Done()
	lat, syncLat := st.lat, st.syncLat
	check := int64(ctxCheckEvery)

	start := time.Now()
	prev := time.Duration(0)
	for st.ops < limit {
		n, err := eng.op(buf, offs.Next())
		now := time.Since(start)
		if int64(n) != bs || err != nil {
			st.bytes += int64(max(n, 0))
			st.elapsed = now
			if err == nil {
				err = errShort{n: int64(n), bs: bs}
			}
			return err
		}
		record(lat, now-prev)
		prev = now
		st.ops++
		st.bytes += bs
		if toSync--; toSync == 0 {
			toSync = syncEvery
			if err := eng.sync(dataSync); err != nil {
				st.elapsed = time.Since(start)
				return err
			}
			now = time.Since(start)
			record(syncLat, now-prev)
			prev = now
		}
		if now >= deadline {
			break
		}
		if check--; check == 0 {
			check = ctxCheckEvery
			select {
			case <-done:
				st.stopped = true
				st.elapsed = now
				return eng.finish()
			default:
			}
		}
	}
	err = eng.finish()
	st.elapsed = time.Since(start)
	return err
}

// record adds a latency in ns to h, clamped to the histogram's range.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	h.RecordValue(min(int64(d), maxLatency))
}

// errShort is a read or write that moved fewer bytes than the block size.
type errShort struct{ n, bs, off int64 } // off: file offset of the op, for async engines

func (e errShort) Error() string {
	return fmt.Sprintf("short IO: %d of %d bytes (did the file shrink during the run?)", e.n, e.bs)
}

// errFault is a memory fault (SIGBUS) on the file's mapping during the run.
type errFault struct{ off int64 } // file offset of the faulting address; -1 if unknown

func (e errFault) Error() string {
	return fmt.Sprintf("memory fault (SIGBUS) at file offset %d", e.off)
}

// faultError turns a memory fault in mapping into an errFault, and
// re-panics on anything else.
func faultError(r any, mapping []byte) error {
	re, ok := r.(interface {
		runtime.Error
		Addr() uintptr
	})
	if !ok || len(mapping) == 0 {
		panic(r)
	}
	start := uintptr(unsafe.Pointer(&mapping[0]))
	off := int64(-1)
	if a := re.Addr(); a >= start && a < start+uintptr(len(mapping)) {
		off = int64(a - start)
	}
	return errFault{off: off}
}

// runError explains an error from the run, with what got done.
func (p *Prepared) runError(err error, rep *Report) error {
	s := &p.Spec
	written := rep.Bytes
	for _, c := range rep.Syscalls {
		if c.Name == "write" || c.Name == "pwrite64" {
			written = c.Bytes
		}
	}
	var fault errFault
	switch {
	case errors.As(err, &fault):
		return fmt.Errorf("the mapping of %s faulted (SIGBUS) at offset %d after %d ops and %d bytes: the filesystem (%s) could not provide the page, usually because it is full; free space, use a smaller --size, --prealloc, or another --engine",
			p.Path, fault.off, rep.Ops, rep.Bytes, fsName(p.Path))
	case isFull(err):
		return fullError("while writing", p.Path, written, err)
	case errors.Is(err, unix.EINVAL) && s.Direct:
		return fmt.Errorf("O_DIRECT IO on %s failed with EINVAL after %d ops: the offset, length or buffer is not aligned as the filesystem needs; try --bs 4k", p.Path, rep.Ops)
	case isWrite(s.Kind):
		return fmt.Errorf("writing %s failed after %d ops and %d bytes: %w", p.Path, rep.Ops, written, errnoOf(err))
	}
	return fmt.Errorf("reading %s failed after %d ops: %w", p.Path, rep.Ops, errnoOf(err))
}
