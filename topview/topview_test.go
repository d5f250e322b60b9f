package topview

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/iopath/iopath/aggregate"
)

func interval() (*aggregate.Snapshot, *aggregate.Snapshot) {
	d := aggregate.NewInterval(time.Unix(0, 0))
	d.Elapsed = time.Second
	add := func(pid uint32, comm string, calls, disk, throttle uint64, latBucket int) {
		p := &aggregate.Proc{Pid: pid, Comm: comm}
		p.Calls[aggregate.Read] = calls
		p.DiskReadBytes = disk
		p.ThrottleNs = throttle
		p.Lat[aggregate.Read][latBucket] = calls
		d.Procs[pid] = p
	}
	add(1, "big-disk", 10, 1<<20, 0, 10)
	add(2, "many-calls", 1000, 4096, 0, 8)
	add(3, "slow", 5, 0, 0, 25)
	add(4, "throttled", 1, 0, 5e9, 9)
	add(5, "idle", 0, 0, 0, 0)
	fk := aggregate.FileKey{Dev: 8<<20 | 1, Ino: 42}
	f := &aggregate.File{FileKey: fk, Name: "data\x01.db"}
	f.Calls[aggregate.Read] = 3
	d.Files[fk] = f
	cur := aggregate.NewInterval(time.Unix(0, 0))
	return d, cur
}

func TestRowsSorted(t *testing.T) {
	d, cur := interval()
	for k, want := range map[SortKey]string{SortDisk: "big-disk", SortCalls: "many-calls", SortLatency: "slow", SortThrottle: "throttled"} {
		rs := Rows(d, cur, ByProcess, k)
		if len(rs) != 4 {
			t.Fatalf("%s: %d rows, want 4 (the idle process has none)", k, len(rs))
		}
		if rs[0].Comm != want {
			t.Errorf("sorted by %s: first row %s, want %s", k, rs[0].Comm, want)
		}
	}
	rs := Rows(d, cur, ByFile, SortDisk)
	if len(rs) != 1 || rs[0].Label(ByFile) != "data?.db (8:1 ino 42)" {
		t.Errorf("file rows %+v", rs)
	}
}

func TestBuildCapsRows(t *testing.T) {
	d, cur := interval()
	iv := Build("interval", d, cur, SortCalls, 2, 7, map[string]uint64{"tp_block_rq_complete": 3})
	if len(iv.Processes) != 2 || iv.RowsOmitted["process"] != 2 || iv.Processes[0].Comm != "many-calls" {
		t.Errorf("processes %+v, omitted %v", iv.Processes, iv.RowsOmitted)
	}
	if iv.Total.Reads != 1016 || iv.LostEvents != 7 || iv.IntervalNs != int64(time.Second) {
		t.Errorf("total %d reads, lost %d, interval %d", iv.Total.Reads, iv.LostEvents, iv.IntervalNs)
	}
	if iv.Total.HitRatio != nil {
		t.Errorf("hit ratio %v without read pages, want null", *iv.Total.HitRatio)
	}
	if iv.MissedRuns["tp_block_rq_complete"] != 3 {
		t.Errorf("missed runs %v, want tp_block_rq_complete 3", iv.MissedRuns)
	}
	if _, err := ParseSort("size"); err == nil {
		t.Error("--sort size accepted")
	}
	if _, err := ParseBy("thread"); err == nil {
		t.Error("--by thread accepted")
	}
}

func TestModelKeys(t *testing.T) {
	quits := 0
	m := NewModel(ByProcess, SortDisk, "every process", time.Second, func() { quits++ })
	d, cur := interval()
	m.Update(&Sample{D: d, Cur: cur, Missed: map[string]uint64{"tp_block_rq_complete": 3}})
	m.Update(tea.KeyPressMsg{Code: 'f', Text: "f"})
	if m.By != ByFile {
		t.Errorf("f: by %s", m.By)
	}
	m.Update(tea.KeyPressMsg{Code: 's', Text: "s"})
	if m.Sort != SortCalls {
		t.Errorf("s: sort %s", m.Sort)
	}
	if v := m.text(); !strings.Contains(v, "data?.db") || !strings.Contains(v, "file view, sorted by calls") ||
		!strings.Contains(v, "missed BPF runs since the start: 3, not counted (tp_block_rq_complete 3)") {
		t.Errorf("view:\n%s", v)
	}
	_, cmd := m.Update(tea.KeyPressMsg{Code: 'q', Text: "q"})
	m.Update(tea.KeyPressMsg{Code: 'q', Text: "q"})
	if cmd == nil || quits != 1 {
		t.Errorf("q: cmd %v, quit called %d times", cmd, quits)
	}
}

// TestHitRatioLeavesOutNoBdev: pages of files without a block device
// (/proc, cgroup) are shown apart and make no ratio; an O_DIRECT run's data
// file, with no cache pages, has a null ratio.
func TestHitRatioLeavesOutNoBdev(t *testing.T) {
	d, cur := interval()
	d.Procs[1].NoBdevPages = 50
	iv := Build("interval", d, cur, SortCalls, 0, 0, nil)
	if iv.Total.HitRatio != nil || iv.Total.NoBdevPages != 50 {
		t.Errorf("total ratio %v, nobdev pages %d: want null and 50", iv.Total.HitRatio, iv.Total.NoBdevPages)
	}
	d.Procs[1].MissPages = 1
	iv = Build("interval", d, cur, SortCalls, 0, 0, nil)
	if iv.Total.HitRatio == nil || *iv.Total.HitRatio != 0 {
		t.Errorf("total ratio %v with one miss, want 0", iv.Total.HitRatio)
	}
}

// TestHitTextBypass: O_DIRECT reads, which bypass the cache, show as
// "bypass", not as a ratio of the few other pages.
func TestHitTextBypass(t *testing.T) {
	io := &aggregate.IO{DirectReadBytes: 4096}
	if got := hitText(io, false); got != "bypass" {
		t.Errorf("O_DIRECT only: %q, want bypass", got)
	}
	io.HitPages = 1
	if got := hitText(io, true); !strings.Contains(got, "100.0%") || !strings.Contains(got, "O_DIRECT") {
		t.Errorf("total with O_DIRECT and one hit: %q", got)
	}
}
