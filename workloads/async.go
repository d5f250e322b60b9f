package workloads

import (
	"errors"
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// MaxIODepth is the largest --iodepth: the requests one job keeps in flight.
const MaxIODepth = 1024

// completion is one finished request: its slot and its result, bytes done
// or -errno.
type completion struct {
	slot uint32
	res  int64
}

// asyncEngine is an engine with many requests in flight (libaio, io_uring).
// A request lives in a slot, 0 ≤ slot < depth, which owns its buffer; the
// loop never reuses a slot before its completion.
type asyncEngine interface {
	// prep queues a request for slot at file offset off, not yet submitted.
	prep(slot int, off int64)
	// submit hands the kernel the first n queued requests and returns how
	// many it took, in the order they were queued; the rest stay queued.
	submit(n int) (int, error)
	// wait blocks until at least min requests completed and moves up to
	// len(out) completions into out.
	wait(min int, out []completion) (int, error)
	// sync is fsync(2), or fdatasync(2) if data, of the file.
	sync(data bool) error
	// reset zeroes the counters before a run; raw selects raw system calls.
	reset(raw bool)
	// calls lists the system calls made since reset.
	calls() []SyscallCount
	// close releases the kernel's context; in-flight requests are waited for.
	close() error
}

// asyncLoop keeps depth requests in flight until limit requests completed
// or the deadline passed, measuring fio's latency split: slat from before a
// request is prepared to after the call that submitted it returned, clat
// from then to after the call that reaped its completion returned, and lat,
// their sum. All times are of the clock now, in ns since the run started.
type asyncLoop struct {
	eng      asyncEngine
	depth    int
	bs       int64
	limit    int64         // requests to complete
	deadline time.Duration // stop submitting after this
	next     func() int64  // offset of the next request
	now      func() time.Duration
	done     <-chan struct{} // closed to stop early
	batch    int             // most requests per submit call
	// completeMin is the fewest completions a wait call waits for (fewer
	// when fewer are in flight).
	completeMin int
	// syncEvery > 0: after every syncEvery submitted requests, wait for all
	// of them to complete, then sync (fdatasync if dataSync), like psync's
	// --fsync N.
	syncEvery int64
	dataSync  bool
	syncLat   *hdrhistogram.Histogram

	ops, bytes     int64 // completed requests, their bytes (plus a short one's)
	elapsed        time.Duration
	stopped        bool // stopped through done
	slat, clat     *hdrhistogram.Histogram
	lat            *hdrhistogram.Histogram
	sums           [3]int64 // exact sums of slat, clat, lat, in ns
	maxInflight    int
	submits, waits int64 // submit and wait calls of the loop, including retries
}

// newAsyncLoop returns a loop with empty histograms.
func newAsyncLoop(eng asyncEngine, depth int, bs int64) *asyncLoop {
	return &asyncLoop{
		eng: eng, depth: depth, bs: bs, limit: math.MaxInt64, deadline: math.MaxInt64, batch: depth, completeMin: 1,
		slat: newHist(), clat: newHist(), lat: newHist(), syncLat: newHist(),
	}
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, maxLatency, 3) }

// retryable reports whether a submit error means "come back after reaping".
func retryable(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EINTR)
}

// run is the measured loop. On a failed request it stops submitting, waits
// for the requests still in flight (their buffers must stay valid), and
// returns the first error.
func (l *asyncLoop) run() error {
	depth := l.depth
	free := make([]int32, depth) // slots without a request
	for i := range free {
		free[i] = int32(depth - 1 - i)
	}
	queued := make([]int32, 0, depth) // prepared, not yet submitted, in order
	offAt := make([]int64, depth)
	prepAt := make([]time.Duration, depth)
	issueAt := make([]time.Duration, depth)
	evs := make([]completion, depth)
	var issued int64               // submitted requests
	toSync := int64(math.MaxInt64) // requests to submit before the next sync
	if l.syncEvery > 0 {
		toSync = l.syncEvery
	}
	inflight := 0
	stop := false
	var firstErr error
	check := ctxCheckEvery
	for {
		// Submit, up to batch requests per call, each batch prepared just
		// before its call (so slat is the submission of that batch).
		for {
			if !stop {
				if n := int(min(int64(len(free)), int64(l.batch-len(queued)), l.limit-issued-int64(len(queued)), toSync-int64(len(queued)))); n > 0 {
					t := l.now()
					for range n {
						s := free[len(free)-1]
						free = free[:len(free)-1]
						prepAt[s], offAt[s] = t, l.next()
						l.eng.prep(int(s), offAt[s])
						queued = append(queued, s)
					}
				}
			}
			if len(queued) == 0 {
				break
			}
			k, err := l.eng.submit(min(len(queued), l.batch))
			l.submits++
			t := l.now()
			for _, s := range queued[:k] {
				issueAt[s] = t
				d := t - prepAt[s]
				record(l.slat, d)
				l.sums[0] += int64(d)
			}
			inflight += k
			issued += int64(k)
			toSync -= int64(k)
			l.maxInflight = max(l.maxInflight, inflight)
			queued = queued[:copy(queued, queued[k:])]
			if err == nil && k == 0 {
				err = fmt.Errorf("the kernel accepted none of %d requests", len(queued))
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil && retryable(err) && inflight > 0 {
				break // reap, then offer the rest again
			}
			if err != nil {
				firstErr = err
				stop = true
				free = append(free, queued...)
				queued = queued[:0]
			}
		}
		if inflight == 0 && toSync == 0 && !stop {
			t := l.now()
			if err := l.eng.sync(l.dataSync); err != nil {
				firstErr, stop = err, true
			}
			record(l.syncLat, l.now()-t)
			toSync = l.syncEvery
		}
		if inflight == 0 {
			if stop || issued >= l.limit {
				break
			}
			continue
		}
		m, err := l.eng.wait(max(1, min(l.completeMin, inflight)), evs[:inflight])
		l.waits++
		t := l.now()
		if err != nil {
			// Requests are still in flight and cannot be reaped: give up
			// on them (closing the context waits for them).
			l.elapsed = t
			return errors.Join(firstErr, fmt.Errorf("waiting for completions: %w", err))
		}
		for _, ev := range evs[:m] {
			s := int32(ev.slot)
			inflight--
			free = append(free, s)
			if ev.res != l.bs {
				if ev.res > 0 {
					l.bytes += ev.res
				}
				if firstErr == nil {
					firstErr = resultError(ev.res, l.bs, offAt[s])
				}
				stop = true
				continue
			}
			c, a := t-issueAt[s], t-prepAt[s]
			record(l.clat, c)
			record(l.lat, a)
			l.sums[1] += int64(c)
			l.sums[2] += int64(a)
			l.ops++
			l.bytes += l.bs
		}
		if t >= l.deadline {
			stop = true
		}
		if check--; check <= 0 {
			check = ctxCheckEvery
			select {
			case <-l.done:
				stop, l.stopped = true, true
			default:
			}
		}
	}
	l.elapsed = l.now()
	return firstErr
}

// resultError is the error of a request's result res (bytes or -errno)
// for a block of bs bytes at file offset off.
func resultError(res, bs, off int64) error {
	if res < 0 {
		return unix.Errno(-res)
	}
	return errShort{n: res, bs: bs, off: off}
}

// summary summarizes h with the exact mean sum/count.
func summary(h *hdrhistogram.Histogram, sum int64) Latency {
	l := summarize(h)
	if l.Count > 0 {
		l.Mean = float64(sum) / float64(l.Count)
	}
	return l
}
