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
}

// Run performs the workload and reports it. It locks the calling goroutine
// to its OS thread and issues every op from that thread, so the thread's
// /proc/thread-self/io counts exactly the workload's system calls (reported
// as Report.Kernel). On an IO error it returns the error together with a
// Report of what completed before it. Cancelling ctx stops the run early
// (checked every 1024 ops); the Report then has Interrupted set.
func (p *Prepared) Run(ctx context.Context) (*Report, error) {
	if p.done {
		return nil, errors.New("workload already cleaned up")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := &runState{
		lat:     hdrhistogram.New(1, maxLatency, 3),
		syncLat: hdrhistogram.New(1, maxLatency, 3),
	}
	p.eng.reset(rawSyscalls)
	offs := p.Offsets()
	pio, pioErr := openProcIO()
	if pio != nil {
		defer pio.close()
	}
	if p.mapping != nil {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	}
	runtime.GC() // so the collector has nothing to do during the run
	var ru0, ru1 unix.Rusage
	var io0, io1 ProcIO
	var self int64
	if pio != nil {
		io0, self, pioErr = pio.read()
	}
	unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	err := p.loop(ctx, st, offs)
	unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	if pio != nil && pioErr == nil {
		io1, _, pioErr = pio.read()
	}
	rep := p.report(st, &ru0, &ru1)
	if pioErr == nil {
		d := io1.delta(io0, self)
		rep.Kernel = &d
	} else {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no kernel IO accounting (/proc/thread-self/io): %v", pioErr))
	}
	rep.Faults = p.mmapFaults(rep)
	if err != nil {
		return rep, p.runError(err, rep)
	}
	return rep, nil
}

// loop is the measured hot loop: one clock read per op (and per sync), no
// allocation. Latency of an op is the time between consecutive clock reads.
func (p *Prepared) loop(ctx context.Context, st *runState, offs *Offsets) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = p.faultError(r)
		}
	}()
	s := &p.Spec
	eng, buf, bs := p.eng, p.buf, s.BlockSize
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
type errShort struct{ n, bs int64 }

func (e errShort) Error() string {
	return fmt.Sprintf("short IO: %d of %d bytes (did the file shrink during the run?)", e.n, e.bs)
}

// errFault is a memory fault (SIGBUS) on the file's mapping during the run.
type errFault struct{ off int64 } // file offset of the faulting address; -1 if unknown

func (e errFault) Error() string {
	return fmt.Sprintf("memory fault (SIGBUS) at file offset %d", e.off)
}

// faultError turns a memory fault in the mapping into an errFault, and
// re-panics on anything else.
func (p *Prepared) faultError(r any) error {
	re, ok := r.(interface {
		runtime.Error
		Addr() uintptr
	})
	if !ok || len(p.mapping) == 0 {
		panic(r)
	}
	start := uintptr(unsafe.Pointer(&p.mapping[0]))
	off := int64(-1)
	if a := re.Addr(); a >= start && a < start+uintptr(len(p.mapping)) {
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
