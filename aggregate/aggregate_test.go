package aggregate

import (
	"math"
	"testing"
	"time"
)

func TestQuantileLog2(t *testing.T) {
	var h Hist
	if _, ok := h.Quantile(0.5); ok {
		t.Fatal("an empty histogram has no quantile")
	}
	// 100 values in [1024, 2048) ns (bucket 10), 1 in [2^20, 2^21).
	h[10] = 100
	h[20] = 1
	p50, _ := h.Quantile(0.5)
	if p50 < 1024 || p50 >= 2048 {
		t.Errorf("p50 %v, want within bucket 10 [1024, 2048)", p50)
	}
	// rank 50.5 of 100 in bucket 10: 1024 + 1024*50.5/100.
	if want := 1024 + 1024*50.5/100; math.Abs(p50-want) > 1e-9 {
		t.Errorf("p50 %v, want %v (linear inside the bucket)", p50, want)
	}
	p999, _ := h.Quantile(0.999)
	if p999 < 1<<20 || p999 > 1<<21 {
		t.Errorf("p99.9 %v, want in bucket 20", p999)
	}
	var last Hist
	last[Buckets-1] = 3
	if v, _ := last.Quantile(0.99); v != Lower(Buckets-1) {
		t.Errorf("open last bucket: %v, want its lower bound %v", v, Lower(Buckets-1))
	}
	if !math.IsInf(Upper(Buckets-1), 1) || Upper(0) != 2 || Lower(0) != 0 || Lower(3) != 8 {
		t.Errorf("bucket bounds: Upper(last) %v Upper(0) %v Lower(3) %v", Upper(Buckets-1), Upper(0), Lower(3))
	}
}

func snap(at time.Time, pid uint32, comm string, calls uint64) *Snapshot {
	s := &Snapshot{At: at, Procs: map[uint32]*Proc{}, Files: map[FileKey]*File{}, Devices: map[DevKey]*Device{}}
	p := &Proc{Pid: pid, Comm: comm}
	p.Calls[Read] = calls
	p.Lat[Read][12] = calls
	p.DirtiedPages = calls
	s.Procs[pid] = p
	s.Devices[DevKey{Dev: 1, Op: RqRead}] = &Device{DevKey: DevKey{Dev: 1, Op: RqRead}, Requests: calls, Bytes: 4096 * calls}
	s.Global.Overflow[OverflowFiles] = calls / 10
	return s
}

func TestDeltaAndAccumulate(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := snap(t0, 7, "db", 10)
	b := snap(t0.Add(time.Second), 7, "db", 25)
	b.Procs[8] = &Proc{Pid: 8, Comm: "new"}
	b.Procs[8].Calls[Write] = 3
	d := Delta(a, b)
	if d.Elapsed != time.Second {
		t.Errorf("elapsed %v", d.Elapsed)
	}
	if got := d.Procs[7].Calls[Read]; got != 15 {
		t.Errorf("pid 7: %d reads in the interval, want 15", got)
	}
	if got := d.Procs[7].Lat[Read][12]; got != 15 {
		t.Errorf("pid 7: bucket 12 holds %d, want 15", got)
	}
	if got := d.Procs[8].Calls[Write]; got != 3 {
		t.Errorf("a new pid counts from 0: %d writes, want 3", got)
	}
	if dv := d.Devices[DevKey{Dev: 1, Op: RqRead}]; dv.Requests != 15 || dv.Bytes != 15*4096 {
		t.Errorf("device delta %+v", dv)
	}
	if d.Global.Overflow[OverflowFiles] != 1 {
		t.Errorf("overflow delta %d, want 1", d.Global.Overflow[OverflowFiles])
	}
	// A pid reused by another program (another comm) starts from 0,
	// and a counter that went down never underflows.
	c := snap(t0.Add(2*time.Second), 7, "other", 4)
	if got := Delta(b, c).Procs[7].Calls[Read]; got != 4 {
		t.Errorf("reused pid: %d reads, want 4", got)
	}
	if got := (IO{}).Sub(&b.Procs[7].IO).Calls[Read]; got != 0 {
		t.Errorf("Sub underflowed to %d", got)
	}
	// Accumulated intervals keep an exited process's rows.
	tot := NewInterval(t0)
	tot.Accumulate(d)
	e := Delta(b, c)
	e.Procs[8] = &Proc{Pid: 8, Comm: "new", Exited: true}
	tot.Accumulate(e)
	if tot.Procs[7].Calls[Read] != 19 || tot.Procs[8].Calls[Write] != 3 || !tot.Procs[8].Exited {
		t.Errorf("accumulated: pid 7 %d reads, pid 8 %+v", tot.Procs[7].Calls[Read], tot.Procs[8])
	}
	if got := tot.Total(); got.Calls[Read] != 19 || got.Calls[Write] != 3 {
		t.Errorf("interval total %d reads %d writes; an interval counts exited rows", got.Calls[Read], got.Calls[Write])
	}
	if tot.Elapsed != 2*time.Second {
		t.Errorf("accumulated elapsed %v", tot.Elapsed)
	}
}

func TestTotalCumulative(t *testing.T) {
	s := snap(time.Unix(1, 0), 7, "db", 10)
	s.Procs[9] = &Proc{Pid: 9, Exited: true}
	s.Procs[9].Calls[Read] = 5 // also in Retired
	s.Retired.Calls[Read] = 5
	s.OtherProcs.Calls[Read] = 2
	if got := s.Total().Calls[Read]; got != 17 {
		t.Errorf("total %d reads, want 10 + 5 retired + 2 without room (the exited row not twice)", got)
	}
}

func TestRatios(t *testing.T) {
	io := IO{HitPages: 3, MissPages: 1, DirtiedPages: 10, CleanedPages: 4, DiskReadBytes: 4096}
	io.Bytes[Read] = 4096 * 4
	if r, ok := io.HitRatio(); !ok || r != 0.75 {
		t.Errorf("hit ratio %v %v", r, ok)
	}
	if a, ok := io.Amplification(); !ok || a != 0.25 {
		t.Errorf("amplification %v %v", a, ok)
	}
	if io.DirtyPending() != 6 {
		t.Errorf("pending %d", io.DirtyPending())
	}
	var none IO
	if _, ok := none.HitRatio(); ok {
		t.Error("a hit ratio without pages")
	}
	if none.DirtyPending() != 0 {
		t.Error("pending below 0")
	}
}

// TestDeltaOfEndedParts: a process renamed (or exec'ed) between two reads
// shows as its ended part under the old comm, with the calls since the
// previous read only, and its live entry, restarted at the split, under
// the new comm; over the intervals each comm gets exactly its calls.
func TestDeltaOfEndedParts(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := snap(t0, 7, "db", 0)
	b := snap(t0.Add(time.Second), 7, "db", 10)
	// The kernel moved the 10 + 5 calls of "db" to its ended part 0; 4
	// calls came under the new name.
	c := snap(t0.Add(2*time.Second), 7, "db-writer", 4)
	c.Procs[7].Part = 1
	part := &Proc{Pid: 7, Comm: "db", Exited: true, Part: 0}
	part.Calls[Read] = 15
	c.Procs[EndedKey(7, 0)] = part
	d := Delta(b, c)
	if got := d.Procs[EndedKey(7, 0)].Calls[Read]; got != 5 {
		t.Errorf("ended part: %d reads in the interval, want 5 (15 - the 10 read before)", got)
	}
	if got := d.Procs[7].Calls[Read]; got != 4 {
		t.Errorf("renamed process: %d reads in the interval, want 4 (its entry restarted)", got)
	}
	tot := NewInterval(t0)
	tot.Accumulate(Delta(a, b))
	tot.Accumulate(d)
	byComm := map[string]uint64{}
	for _, p := range tot.Procs {
		byComm[p.Comm] += p.Calls[Read]
	}
	if byComm["db"] != 15 || byComm["db-writer"] != 4 || len(tot.Procs) != 2 {
		t.Errorf("over the run: %v in %d rows, want db 15 and db-writer 4 in 2", byComm, len(tot.Procs))
	}
	// An exec that keeps the comm: the live entry restarted too.
	e := snap(t0.Add(2*time.Second), 7, "db", 3)
	e.Procs[7].Part = 1
	e.Procs[EndedKey(7, 0)] = part
	if got := Delta(b, e).Procs[7].Calls[Read]; got != 3 {
		t.Errorf("exec under the same comm: %d reads, want 3", got)
	}
}

// TestAccumulateNamesLatest: a file's row over the run has its latest name.
func TestAccumulateNamesLatest(t *testing.T) {
	k := FileKey{Dev: 1, Ino: 2, Gen: 3}
	tot := NewInterval(time.Unix(0, 0))
	for _, name := range []string{"a.tmp", "a"} {
		d := NewInterval(time.Unix(0, 0))
		d.Files[k] = &File{FileKey: k, Name: name}
		tot.Accumulate(d)
	}
	if got := tot.Files[k].Name; got != "a" {
		t.Errorf("name %q, want the latest, a", got)
	}
}
