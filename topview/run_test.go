package topview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/aggregate"
	"github.com/iopath/iopath/session"
)

// fakeSource serves cumulative snapshots: process 7 makes 10 more read
// calls before each read; reads signals after the third.
type fakeSource struct {
	mu    sync.Mutex
	n     int
	reads chan struct{}
}

func (f *fakeSource) snap() *aggregate.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n == 3 {
		close(f.reads)
	}
	s := &aggregate.Snapshot{At: time.Unix(int64(f.n), 0), Procs: map[uint32]*aggregate.Proc{}, Files: map[aggregate.FileKey]*aggregate.File{},
		Devices: map[aggregate.DevKey]*aggregate.Device{}}
	p := &aggregate.Proc{Pid: 7, Comm: "reader"}
	p.Calls[aggregate.Read] = uint64(10 * f.n)
	s.Procs[7] = p
	return s
}

func (f *fakeSource) Read() (*aggregate.Snapshot, error)  { return f.snap(), nil }
func (f *fakeSource) Final() (*aggregate.Snapshot, error) { return f.snap(), nil }
func (f *fakeSource) Losses() (uint64, map[string]uint64) { return 2, nil }

// The JSON intervals add up to the total, which spans from the first read
// to the final one, and the run's result comes back.
func TestRunJSONTotal(t *testing.T) {
	src := &fakeSource{reads: make(chan struct{})}
	var out bytes.Buffer
	trace := func(session.Trace) (session.Result, error) {
		<-src.reads
		return session.Result{Code: 3}, nil
	}
	res, err := run(src, trace, session.Trace{}, Options{Out: &out, Interval: 10 * time.Millisecond, Sort: SortDisk})
	if err != nil || res.Code != 3 {
		t.Fatalf("run: %+v, %v", res, err)
	}
	var sum uint64
	var ivs []Interval
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var iv Interval
		if err := json.Unmarshal(sc.Bytes(), &iv); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		ivs = append(ivs, iv)
	}
	if len(ivs) < 2 {
		t.Fatalf("%d objects, want intervals and a total:\n%s", len(ivs), out.String())
	}
	for _, iv := range ivs[:len(ivs)-1] {
		if iv.Type != "interval" || iv.LostEvents != 2 {
			t.Errorf("object %+v, want an interval with lost_events 2", iv)
		}
		sum += iv.Total.Reads
	}
	last := ivs[len(ivs)-1]
	// reads 1 (first) to n (final): 10*(n-1) calls.
	want := uint64(10 * (src.n - 1))
	if last.Type != "total" || last.Total.Reads != want || sum != want {
		t.Errorf("total %s with %d reads, intervals sum to %d; want total %d", last.Type, last.Total.Reads, sum, want)
	}
	if len(last.Processes) != 1 || last.Processes[0].Pid != 7 || last.Processes[0].Reads != want {
		t.Errorf("total's processes %+v, want pid 7 with %d reads", last.Processes, want)
	}
}

// epipeWriter is an output whose reader is gone.
type epipeWriter struct{}

func (epipeWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// A closed output ends a run without a command: its Stop closes.
func TestRunClosedOutputStops(t *testing.T) {
	src := &fakeSource{reads: make(chan struct{})}
	stopped := make(chan struct{})
	trace := func(tr session.Trace) (session.Result, error) {
		select {
		case <-tr.Stop:
			close(stopped)
		case <-time.After(10 * time.Second):
		}
		return session.Result{}, nil
	}
	if _, err := run(src, trace, session.Trace{}, Options{Out: epipeWriter{}, Interval: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Error("the trace was not stopped after EPIPE on the output")
	}
}
