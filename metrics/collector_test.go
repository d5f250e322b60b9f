package metrics

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/aggregate"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func gather(t *testing.T, c *Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func labels(m *dto.Metric) string {
	var l []string
	for _, p := range m.GetLabel() {
		l = append(l, p.GetName()+"="+p.GetValue())
	}
	return strings.Join(l, ",")
}

func find(t *testing.T, fams map[string]*dto.MetricFamily, name, lbl string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
	for _, m := range f.GetMetric() {
		if labels(m) == lbl {
			return m
		}
	}
	t.Fatalf("%s has no series {%s}", name, lbl)
	return nil
}

func TestCollector(t *testing.T) {
	s := &aggregate.Snapshot{At: time.Now(), Procs: map[uint32]*aggregate.Proc{}, Files: map[aggregate.FileKey]*aggregate.File{},
		Devices: map[aggregate.DevKey]*aggregate.Device{}, RetiredByComm: map[string]*aggregate.IO{}}
	db := &aggregate.Proc{Pid: 10, Comm: "postgres"}
	db.Calls[aggregate.Read] = 7
	db.HitPages, db.MissPages, db.DiskReadBytes = 5, 2, 8192
	s.Procs[10] = db
	other := &aggregate.Proc{Pid: 11, Comm: "cron"}
	other.Calls[aggregate.Read] = 1
	s.Procs[11] = other
	s.RetiredByComm["postgres"] = &aggregate.IO{Calls: [aggregate.Ops]uint64{3, 0, 0}}
	s.Retired.Calls[aggregate.Read] = 3
	// 2 reads of ~1.5 µs (bucket 10), 1 of ~3 s (the open last bucket).
	s.Global.SyscallLat[aggregate.Read][1][10] = 2
	s.Global.SyscallLat[aggregate.Read][1][aggregate.Buckets-1] = 1
	s.Global.SyscallLatNs[aggregate.Read][1] = 3_000_003_000
	dk := aggregate.DevKey{Dev: 1 << 31, Op: aggregate.RqRead} // no such disk: named MAJ:MIN
	s.Devices[dk] = &aggregate.Device{DevKey: dk, Requests: 4, Bytes: 16384}
	c := New(func() (*aggregate.Snapshot, error) { return s, nil }, []string{"postgres"}, func() map[string]uint64 {
		return map[string]uint64{"ringbuf_lost": 9}
	})
	c.Missed = func() (map[string]uint64, bool) {
		return map[string]uint64{"tp_block_rq_complete": 46, "raw_sys_exit": 0}, true
	}
	s.Global.Overflow[aggregate.OverflowNoDisk] = 2
	fams := gather(t, c)
	if v := find(t, fams, "iopath_missed_runs_total", "program=tp_block_rq_complete").GetCounter().GetValue(); v != 46 {
		t.Errorf("missed runs %v, want 46", v)
	}
	// A program that missed no run has its series, at 0 (a counter exists
	// from the start: increase() and absent-series alerts need it).
	if m := find(t, fams, "iopath_missed_runs_total", "program=raw_sys_exit"); m.GetCounter().GetValue() != 0 {
		t.Errorf("missed runs of raw_sys_exit %v, want a series at 0", m.GetCounter().GetValue())
	}
	if v := find(t, fams, "iopath_disk_requests_unnamed_total", "").GetCounter().GetValue(); v != 2 {
		t.Errorf("requests without a disk %v, want 2", v)
	}
	if v := find(t, fams, "iopath_syscalls_total", "op=read").GetCounter().GetValue(); v != 11 {
		t.Errorf("syscalls_total read %v, want 7 + 1 + 3 exited", v)
	}
	if v := find(t, fams, "iopath_process_syscalls_total", "comm=postgres,op=read").GetCounter().GetValue(); v != 10 {
		t.Errorf("postgres reads %v, want 7 live + 3 exited", v)
	}
	for _, m := range fams["iopath_process_syscalls_total"].GetMetric() {
		if strings.Contains(labels(m), "cron") {
			t.Errorf("a comm outside --per-comm has a series: %s", labels(m))
		}
	}
	if v := find(t, fams, "iopath_page_cache_accesses_total", "result=miss").GetCounter().GetValue(); v != 2 {
		t.Errorf("misses %v", v)
	}
	h := find(t, fams, "iopath_syscall_duration_seconds", "cache=miss,op=read").GetHistogram()
	if h.GetSampleCount() != 3 || math.Abs(h.GetSampleSum()-3.000003) > 1e-9 {
		t.Errorf("histogram count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= 2048e-9 {
			want = 2 // cumulative from bucket 10 (le 2^11 ns); the last bucket only in +Inf
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	name := aggregate.DeviceName(dk.Dev)
	if v := find(t, fams, "iopath_disk_bytes_total", "device="+name+",op=read").GetCounter().GetValue(); v != 16384 {
		t.Errorf("disk bytes %v", v)
	}
	if v := find(t, fams, "iopath_lost_events_total", "").GetCounter().GetValue(); v != 9 {
		t.Errorf("lost %v", v)
	}
	// A failed read of the maps fails the scrape, it is never a 0.
	bad := New(func() (*aggregate.Snapshot, error) { return nil, errors.New("map gone") }, nil, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(bad)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "map gone") {
		t.Errorf("gather of a failing read: %v", err)
	}
}

// On a kernel that does not count skipped runs (before 5.12) there is no
// iopath_missed_runs_total series: a 0 would claim none was skipped.
func TestCollectorMissedUncounted(t *testing.T) {
	s := &aggregate.Snapshot{At: time.Now(), Procs: map[uint32]*aggregate.Proc{}, Files: map[aggregate.FileKey]*aggregate.File{},
		Devices: map[aggregate.DevKey]*aggregate.Device{}, RetiredByComm: map[string]*aggregate.IO{}}
	c := New(func() (*aggregate.Snapshot, error) { return s, nil }, nil, nil)
	c.Missed = func() (map[string]uint64, bool) { return map[string]uint64{}, false }
	if f := gather(t, c)["iopath_missed_runs_total"]; f != nil {
		t.Errorf("missed_runs_total series without the kernel's count: %v", f)
	}
}
