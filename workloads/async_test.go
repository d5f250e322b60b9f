package workloads

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeEngine is an asyncEngine without a kernel: it advances a fake clock
// by submitCost per submit and waitCost per wait, takes at most takeMax
// requests per submit (the rest stay queued), and completes requests in
// the order pick chooses. It checks the loop's use of slots.
type fakeEngine struct {
	t                    *testing.T
	clock                *time.Duration
	submitCost, waitCost time.Duration
	takeMax              int                      // 0: all
	eagainEvery          int                      // every Nth submit fails with EAGAIN (0: never)
	pick                 func(inflight []int) int // index into inflight of the next completion
	fail                 map[int64]int64          // offset -> result instead of bs
	bs                   int64

	queued, inflight []int
	offs             map[int]int64 // slot -> offset of its request
	submitCalls      int
	syncs            []int // completions before each sync
	completedOffs    []int64
}

func newFake(t *testing.T, clock *time.Duration, bs int64) *fakeEngine {
	return &fakeEngine{t: t, clock: clock, bs: bs, submitCost: 10, waitCost: 100, offs: map[int]int64{}}
}

func (f *fakeEngine) prep(slot int, off int64) {
	if _, busy := f.offs[slot]; busy {
		f.t.Errorf("slot %d reused while its request is queued or in flight", slot)
	}
	f.offs[slot] = off
	f.queued = append(f.queued, slot)
}

func (f *fakeEngine) submit(n int) (int, error) {
	f.submitCalls++
	*f.clock += f.submitCost
	if n != len(f.queued) {
		f.t.Errorf("submit(%d) with %d queued", n, len(f.queued))
	}
	if f.eagainEvery > 0 && f.submitCalls%f.eagainEvery == 0 && len(f.inflight) > 0 {
		return 0, unix.EAGAIN
	}
	k := n
	if f.takeMax > 0 {
		k = min(k, f.takeMax)
	}
	f.inflight = append(f.inflight, f.queued[:k]...)
	f.queued = f.queued[k:]
	return k, nil
}

func (f *fakeEngine) wait(minN int, out []completion) (int, error) {
	*f.clock += f.waitCost
	if minN > len(f.inflight) {
		f.t.Fatalf("wait for %d with %d in flight: would block forever", minN, len(f.inflight))
	}
	n := 0
	for n < len(out) && len(f.inflight) > 0 && (n < minN || f.pick == nil) {
		i := 0
		if f.pick != nil {
			i = f.pick(f.inflight)
		}
		s := f.inflight[i]
		f.inflight = append(f.inflight[:i], f.inflight[i+1:]...)
		off := f.offs[s]
		delete(f.offs, s)
		res := f.bs
		if r, ok := f.fail[off]; ok {
			res = r
		}
		f.completedOffs = append(f.completedOffs, off)
		out[n] = completion{slot: uint32(s), res: res}
		n++
	}
	return n, nil
}

func (f *fakeEngine) sync(bool) error {
	if len(f.inflight) > 0 || len(f.queued) > 0 {
		f.t.Errorf("sync with %d requests in flight and %d queued", len(f.inflight), len(f.queued))
	}
	f.syncs = append(f.syncs, len(f.completedOffs))
	*f.clock += 1000
	return nil
}

func (f *fakeEngine) reset(bool)                    {}
func (f *fakeEngine) calls() []SyscallCount         { return nil }
func (f *fakeEngine) close() error                  { return nil }
func (f *fakeEngine) clockFn() func() time.Duration { return func() time.Duration { return *f.clock } }

// fakeLoop returns a loop over f issuing offsets 0, bs, 2bs, ...
func fakeLoop(f *fakeEngine, depth int, limit int64) *asyncLoop {
	l := newAsyncLoop(f, depth, f.bs)
	l.limit = limit
	next := int64(0)
	l.next = func() int64 { next += f.bs; return next - f.bs }
	l.now = f.clockFn()
	return l
}

// TestAsyncLatencySplit: requests all completing at the first wait after
// their submit have slat = the submit's cost, clat = the wait's cost, and
// lat = their sum, exactly.
func TestAsyncLatencySplit(t *testing.T) {
	var clock time.Duration
	f := newFake(t, &clock, 4096)
	l := fakeLoop(f, 4, 8)
	if err := l.run(); err != nil {
		t.Fatal(err)
	}
	if l.ops != 8 || l.bytes != 8*4096 || l.maxInflight != 4 {
		t.Fatalf("ops %d bytes %d max in flight %d, want 8, 32768, 4", l.ops, l.bytes, l.maxInflight)
	}
	for _, c := range []struct {
		name string
		got  Latency
		want int64
	}{{"slat", summary(l.slat, l.sums[0]), 10}, {"clat", summary(l.clat, l.sums[1]), 100}, {"lat", summary(l.lat, l.sums[2]), 110}} {
		if c.got.Count != 8 || c.got.Min != c.want || c.got.Max != c.want || c.got.Mean != float64(c.want) || c.got.P50 != c.want {
			t.Errorf("%s %+v, want 8 values of %d ns", c.name, c.got, c.want)
		}
	}
	if l.elapsed != 220 || l.submits != 2 || l.waits != 2 {
		t.Errorf("elapsed %d submits %d waits %d, want 220 ns in 2 submits and 2 waits", l.elapsed, l.submits, l.waits)
	}

	// One request per submit, each prepared just before its call: slat is
	// one submit's cost; the first of a round waits for the later submits.
	f = newFake(t, &clock, 4096)
	l = fakeLoop(f, 4, 8)
	l.batch = 1
	if err := l.run(); err != nil {
		t.Fatal(err)
	}
	sl, cl := summary(l.slat, l.sums[0]), summary(l.clat, l.sums[1])
	if l.submits != 8 || sl.Count != 8 || sl.Min != 10 || sl.Max != 10 || cl.Min != 100 || cl.Max != 130 {
		t.Errorf("batch 1: %d submits, slat %+v, clat %+v; want 8 submits, slat 10 ns, clat 100..130 ns", l.submits, sl, cl)
	}
}

// TestAsyncOneAtATime: one completion per wait, the oldest first: after the
// first round every request waits depth rounds of submit+wait.
func TestAsyncOneAtATime(t *testing.T) {
	var clock time.Duration
	f := newFake(t, &clock, 512)
	f.pick = func([]int) int { return 0 }
	l := fakeLoop(f, 4, 100)
	if err := l.run(); err != nil {
		t.Fatal(err)
	}
	if l.ops != 100 || len(f.completedOffs) != 100 {
		t.Fatalf("ops %d, completions %d, want 100", l.ops, len(f.completedOffs))
	}
	for i, off := range f.completedOffs {
		if off != int64(i)*512 {
			t.Fatalf("completion %d at offset %d, want FIFO order", i, off)
		}
	}
	if l.sums[2] != l.sums[0]+l.sums[1] {
		t.Errorf("lat sum %d != slat sum %d + clat sum %d", l.sums[2], l.sums[0], l.sums[1])
	}
	// Steady state: submitted at the end of a submit, completed 4 waits and 3 submits later.
	if c := summary(l.clat, l.sums[1]); c.Max != 4*100+3*10 || c.Min != 100 {
		t.Errorf("clat %+v, want min 100 ns (first request) and max 430 ns", c)
	}
}

// TestAsyncOutOfOrderPartial: completions in reverse order, submits that
// take one request at a time and fail with EAGAIN now and then: every
// offset completes exactly once, no slot is reused early, and the counts
// of the latency histograms are exact.
func TestAsyncOutOfOrderPartial(t *testing.T) {
	var clock time.Duration
	f := newFake(t, &clock, 4096)
	f.takeMax, f.eagainEvery = 1, 3
	f.pick = func(in []int) int { return len(in) - 1 }
	l := fakeLoop(f, 16, 1000)
	if err := l.run(); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, off := range f.completedOffs {
		if seen[off] {
			t.Fatalf("offset %d completed twice", off)
		}
		seen[off] = true
	}
	if l.ops != 1000 || len(seen) != 1000 || l.slat.TotalCount() != 1000 || l.clat.TotalCount() != 1000 || l.lat.TotalCount() != 1000 {
		t.Errorf("ops %d, distinct offsets %d, slat/clat/lat counts %d/%d/%d; want 1000 each",
			l.ops, len(seen), l.slat.TotalCount(), l.clat.TotalCount(), l.lat.TotalCount())
	}
	if l.maxInflight > 16 || l.maxInflight < 2 {
		t.Errorf("max in flight %d, want 2..16", l.maxInflight)
	}
	if l.sums[2] != l.sums[0]+l.sums[1] {
		t.Errorf("lat sum %d != slat sum %d + clat sum %d", l.sums[2], l.sums[0], l.sums[1])
	}
}

// TestAsyncFailedRequest: a failed request stops submission, the requests
// in flight are still reaped, and the error is the request's errno.
func TestAsyncFailedRequest(t *testing.T) {
	var clock time.Duration
	f := newFake(t, &clock, 4096)
	f.pick = func([]int) int { return 0 }
	f.fail = map[int64]int64{10 * 4096: -int64(unix.EIO)}
	l := fakeLoop(f, 8, 1000)
	err := l.run()
	if !errors.Is(err, unix.EIO) {
		t.Fatalf("error %v, want EIO", err)
	}
	if len(f.inflight) != 0 || len(f.queued) != 0 {
		t.Errorf("%d requests left in flight, %d queued: the loop must wait for them", len(f.inflight), len(f.queued))
	}
	if l.ops != int64(len(f.completedOffs))-1 || l.lat.TotalCount() != l.ops {
		t.Errorf("ops %d of %d completions, lat count %d: only the failed one is not counted", l.ops, len(f.completedOffs), l.lat.TotalCount())
	}
	f2 := newFake(t, &clock, 4096)
	f2.fail = map[int64]int64{0: 1000}
	if err := fakeLoop(f2, 1, 5).run(); !errors.As(err, new(errShort)) {
		t.Errorf("short result: %v, want errShort", err)
	}
}

// TestAsyncDeadlineAndCancel: past the deadline, or once done is closed,
// no request is submitted and those in flight complete.
func TestAsyncDeadlineAndCancel(t *testing.T) {
	var clock time.Duration
	f := newFake(t, &clock, 4096)
	l := fakeLoop(f, 4, 1<<40)
	l.deadline = 1000 // 110 ns per round of 4
	if err := l.run(); err != nil {
		t.Fatal(err)
	}
	if l.ops != 4*10 || len(f.inflight) != 0 {
		t.Errorf("deadline 1000 ns: %d ops, %d in flight; want 40 and 0", l.ops, len(f.inflight))
	}
	done := make(chan struct{})
	close(done)
	f = newFake(t, &clock, 4096)
	l = fakeLoop(f, 4, 1<<40)
	l.done = done
	if err := l.run(); err != nil {
		t.Fatal(err)
	}
	if !l.stopped || l.ops > 4*ctxCheckEvery || len(f.inflight) != 0 {
		t.Errorf("cancelled: stopped %v after %d ops with %d in flight", l.stopped, l.ops, len(f.inflight))
	}
}

// TestAsyncSync: with syncEvery 25 and 100 requests at depth 8, the loop
// drains the queue and syncs after requests 25, 50, 75 and 100, and the
// sync's time is not in any request's latency.
func TestAsyncSync(t *testing.T) {
	var clock time.Duration
	f := newFake(t, &clock, 4096)
	l := fakeLoop(f, 8, 100)
	l.syncEvery = 25
	if err := l.run(); err != nil {
		t.Fatal(err)
	}
	if len(f.syncs) != 4 || f.syncs[0] != 25 || f.syncs[3] != 100 || l.syncLat.TotalCount() != 4 || l.syncLat.Min() != 1000 {
		t.Errorf("syncs after %v completions, sync latency count %d min %d; want after 25, 50, 75, 100, 1000 ns each", f.syncs, l.syncLat.TotalCount(), l.syncLat.Min())
	}
	if l.ops != 100 || l.lat.Max() >= 1000 {
		t.Errorf("%d ops, max lat %d ns: want 100, below the sync's 1000 ns", l.ops, l.lat.Max())
	}
}

func TestJobsError(t *testing.T) {
	err := jobsError([]error{errors.New("a"), nil, errors.New("a"), errors.New("b\nc")})
	if want := "jobs 0, 2: a; job 3: b; c"; err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
	if jobsError([]error{nil, nil}) != nil {
		t.Error("no error gave an error")
	}
}

// TestAsyncCompleteMin: one completion per wait (pick), batches of 8 and
// completeMin 8: every wait reaps 8 and every submit takes 8, so 100
// requests take 13 submits and 13 waits (the last ones of 4); with
// completeMin 1 the same batch submits one request per call.
func TestAsyncCompleteMin(t *testing.T) {
	for _, c := range []struct{ completeMin, submits int }{{8, 13}, {1, 93}} {
		var clock time.Duration
		f := newFake(t, &clock, 512)
		f.pick = func([]int) int { return 0 }
		l := fakeLoop(f, 8, 100)
		l.batch, l.completeMin = 8, c.completeMin
		if err := l.run(); err != nil {
			t.Fatal(err)
		}
		if l.ops != 100 || f.submitCalls != c.submits || l.waits != int64(c.submits) && c.completeMin == 8 {
			t.Errorf("completeMin %d: ops %d, submits %d (want %d), waits %d", c.completeMin, l.ops, f.submitCalls, c.submits, l.waits)
		}
	}
}
