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
	if len(rs) != 1 || rs[0].Label(ByFile, false) != "data?.db (8:1 ino 42)" {
		t.Errorf("file rows %+v", rs)
	}
}

// A process that did all its IO in earlier intervals and exited in this
// one is a row of this one (exited, its totals in Cum), once: the read
// that retired it was the only one that saw it gone (dd writing 1 MiB and
// exiting often straddles a 50 ms interval). One that never did IO is not.
func TestRowsExitedWithoutIOInInterval(t *testing.T) {
	prev := aggregate.NewInterval(time.Unix(0, 0))
	cur := aggregate.NewInterval(time.Unix(1, 0))
	w := &aggregate.Proc{Pid: 7, Comm: "dd"}
	w.Calls[aggregate.Write] = 16
	w.DirtiedPages = 256
	prev.Procs[7] = w
	gone := *w
	gone.Exited = true
	cur.Procs[7] = &gone
	prev.Procs[8] = &aggregate.Proc{Pid: 8, Comm: "idle"}
	cur.Procs[8] = &aggregate.Proc{Pid: 8, Comm: "idle", Exited: true}
	d := aggregate.Delta(prev, cur)
	rs := Rows(d, cur, ByProcess, SortDisk)
	if len(rs) != 1 || rs[0].Comm != "dd" || !rs[0].Exited || rs[0].IO.AllCalls() != 0 || rs[0].Cum.DirtiedPages != 256 {
		t.Fatalf("rows %+v, want dd alone: exited, no calls in the interval, 256 dirtied pages in all", rs)
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

// TestLatencyPerOp: a row's percentiles are per op, never a mix: 99 fast
// reads and one slow fsync give a fast read p99 and a slow sync p50.
func TestLatencyPerOp(t *testing.T) {
	d, cur := interval()
	p := d.Procs[1]
	p.Lat[aggregate.Read] = aggregate.Hist{}
	p.Calls[aggregate.Read], p.Lat[aggregate.Read][10] = 99, 99 // [1, 2) µs
	p.Calls[aggregate.Sync], p.Lat[aggregate.Sync][24] = 1, 1   // [16.8, 33.6) ms
	iv := Build("interval", d, cur, SortDisk, 0, 0, nil)
	var row *IOJSON
	for i := range iv.Processes {
		if iv.Processes[i].Pid == 1 {
			row = &iv.Processes[i]
		}
	}
	if row == nil || row.ReadP99Ns == nil || row.SyncP50Ns == nil {
		t.Fatalf("row %+v", row)
	}
	if *row.ReadP99Ns >= 2048 || *row.SyncP50Ns < 1<<24 || row.WriteP50Ns != nil {
		t.Errorf("read p99 %v ns (want < 2048), sync p50 %v ns (want ≥ 2^24), write p50 %v (want null)", *row.ReadP99Ns, *row.SyncP50Ns, row.WriteP50Ns)
	}
	if tab := Table(d, cur, ByProcess, SortDisk, 0); !strings.Contains(tab, "SYNC P50/P99") {
		t.Errorf("table without per-op percentiles:\n%s", tab)
	}
	// By the slowest op's p99: pid 3's reads (bucket 25), then pid 1's fsync.
	if rs := Rows(d, cur, ByProcess, SortLatency); rs[0].Pid != 3 || rs[1].Pid != 1 {
		t.Errorf("sorted by latency: pids %d, %d first; want 3, 1", rs[0].Pid, rs[1].Pid)
	}
}

// TestReusedInodeRows: two files on one inode number (a deleted file's,
// reused) are two rows, each under its own name, told apart by generation.
func TestReusedInodeRows(t *testing.T) {
	d, cur := interval()
	for gen, name := range map[uint32]string{7: "a.tmp", 9: "b0"} {
		fk := aggregate.FileKey{Dev: 8<<20 | 1, Ino: 100, Gen: gen}
		f := &aggregate.File{FileKey: fk, Name: name}
		f.Calls[aggregate.Write] = uint64(gen)
		d.Files[fk] = f
	}
	iv := Build("interval", d, cur, SortCalls, 0, 0, nil)
	got := map[string]uint32{}
	for _, f := range iv.Files {
		if f.Ino == 100 {
			got[f.Name] = f.Gen
		}
	}
	if len(got) != 2 || got["a.tmp"] != 7 || got["b0"] != 9 {
		t.Errorf("rows of inode 100: %v, want a.tmp gen 7 and b0 gen 9", got)
	}
	tab := Table(d, cur, ByFile, SortCalls, 0)
	if !strings.Contains(tab, "a.tmp (8:1 ino 100 gen 7)") || !strings.Contains(tab, "b0 (8:1 ino 100 gen 9)") || !strings.Contains(tab, "data?.db (8:1 ino 42)") {
		t.Errorf("table:\n%s", tab)
	}
}
