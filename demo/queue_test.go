package demo

import (
	"regexp"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/workloads"
)

// qbio is a bio of one request: issued at issue, completed at done (0: not seen).
func qbio(issue, done uint64) record.Bio {
	return record.Bio{Dev: "254:0", Bytes: 4096, RequestBytes: 4096, Rwbs: "W", QueueNs: issue - 1, IssueNs: issue, CompleteNs: done}
}

// One request at a time: 1 in flight at every issue, even when the next is
// issued in the nanosecond the previous one completed.
func TestDeviceQueueSerial(t *testing.T) {
	q := DeviceQueueOf([]record.Bio{qbio(100, 200), qbio(200, 300), qbio(310, 410)})
	if q.Requests != 3 || q.MaxAtIssue != 1 || q.MeanAtIssue != 1 || q.SpanNs != 310 || q.MeanD2CNs() != 100 || q.MeanQ2DNs() != 1 {
		t.Errorf("serial: %+v", q)
	}
	if q.MeanAtDevice < 0.96 || q.MeanAtDevice > 0.97 { // 300 ns busy of 310
		t.Errorf("time-averaged %v", q.MeanAtDevice)
	}
}

// Overlapping requests, one of two merged bios, one never completed.
func TestDeviceQueueOverlap(t *testing.T) {
	merged := qbio(100, 500)
	merged.Sector, merged.RequestBytes = 8, 8192
	first := qbio(100, 500)
	first.RequestBytes = 8192
	q := DeviceQueueOf([]record.Bio{first, merged, qbio(110, 300), qbio(120, 400), qbio(600, 0), qbio(450, 700)})
	// At issue: 100 → 1, 110 → 2, 120 → 3, 450 → 2 (300 and 400 done).
	if q.Bios != 6 || q.Requests != 5 || q.Incomplete != 1 || q.Bytes != 8192+4*4096 || q.MaxAtIssue != 3 || q.MeanAtIssue != 2 {
		t.Errorf("overlap: %+v", q)
	}
	// Busy 400+190+280+250 = 1120 ns over 100..700.
	if q.SpanNs != 600 || q.MeanAtDevice < 1.86 || q.MeanAtDevice > 1.87 || q.QuantileD2CNs(0) != 190 || q.QuantileD2CNs(1) != 400 {
		t.Errorf("overlap: span %d, time-averaged %v, D2C %v", q.SpanNs, q.MeanAtDevice, q.D2CNs)
	}
	if e := DeviceQueueOf(nil); e.Requests != 0 || e.MaxAtIssue != 0 || e.DeviceIOPS() != 0 {
		t.Errorf("empty: %+v", e)
	}
}

// runBios takes the run's data bios on its work file: its read/write
// calls', its requests', and those it queued in an untraced io_submit or
// io_uring_enter, in its direction; not another pid's, not another file's
// (an exec's page-ins, a read of its binary), not exec's or openat's
// unattributed bios, not metadata, not a non-read/write call's.
func TestRunBios(t *testing.T) {
	const dev, ino = "254:0", 42
	tr := &traced{
		recs: []any{
			&record.Syscall{Pid: 7, Syscall: "pwrite64", Dev: dev, Ino: ino, Bios: []record.Bio{qbio(30, 40), {Rwbs: "WM", Bytes: 4096, IssueNs: 35}}},
			&record.Syscall{Pid: 7, Syscall: "pwrite64", Dev: dev, Ino: ino + 1, Bios: []record.Bio{qbio(31, 41)}},
			&record.Syscall{Pid: 8, Syscall: "pwrite64", Dev: dev, Ino: ino, Bios: []record.Bio{qbio(50, 60)}},
			&record.Syscall{Pid: 7, Syscall: "io_submit", Dev: dev, Ino: ino, Bios: []record.Bio{qbio(60, 70)}},
			&record.Request{Pid: 7, Dev: dev, Ino: ino, Bios: []record.Bio{qbio(80, 90)}},
			&record.Request{Pid: 7, Dev: "8:1", Ino: ino, Bios: []record.Bio{qbio(82, 92)}},
			&record.Request{Pid: 8, Dev: dev, Ino: ino, Bios: []record.Bio{qbio(81, 91)}},
			&record.Fault{Pid: 7, Dev: dev, Ino: ino, Bios: []record.Bio{qbio(83, 93)}},
		},
		unattr: []pidBio{
			{7, "syscall:209", qbio(10, 20)},
			{7, "exec", qbio(11, 21)},
			{7, "syscall:execve", qbio(15, 25)},
			{7, "syscall:openat", qbio(16, 26)},
			{7, "syscall:209", record.Bio{Rwbs: "R", Bytes: 4096, IssueNs: 12}},
			{9, "syscall:209", qbio(13, 23)},
			{7, "syscall:209", record.Bio{Rwbs: "FWS", IssueNs: 14}},
		},
	}
	got, src := runBios(tr, 7, dev, ino, true)
	if len(got) != 3 || got[0].IssueNs != 10 || got[1].IssueNs != 30 || got[2].IssueNs != 80 || src != (BioSources{Calls: 1, Requests: 1, Unattributed: 1}) {
		t.Errorf("write bios %+v from %+v", got, src)
	}
	if got, src := runBios(tr, 7, dev, ino, false); len(got) != 1 || got[0].IssueNs != 12 || src != (BioSources{Unattributed: 1}) {
		t.Errorf("read bios %+v from %+v", got, src)
	}
	note := sourcesNote([]*QueueRun{{Sources: BioSources{Calls: 4096}}, {Sources: BioSources{Unattributed: 4096}}})
	if !strings.Contains(note, "4096 in their pread64/pwrite64 records, 4096 among their unattributed bios") || strings.Contains(note, "request records") {
		t.Errorf("note %q", note)
	}
}

// queueRun is a QueueRun of a synthetic report.
func queueRun(label string, depth, batch int, iops, latNs float64, calls []workloads.SyscallCount, q DeviceQueue, slat, clat *workloads.Latency) *QueueRun {
	rep := &workloads.Report{IODepth: depth, Batch: batch, CompleteMin: batch, Ops: 4096, IOPS: iops, Latency: workloads.Latency{Mean: latNs, P99: int64(2 * latNs)},
		Syscalls: calls, SubmitLatency: slat, CompletionLatency: clat, MaxInflight: depth}
	return &QueueRun{Label: label, Rec: &record.Workload{Report: rep}, Queue: q}
}

func TestSyncAsyncStory(t *testing.T) {
	serial := DeviceQueueOf([]record.Bio{qbio(100, 200), qbio(300, 400)})
	deep := DeviceQueueOf([]record.Bio{qbio(100, 500), qbio(110, 520), qbio(120, 530)})
	lat := func(ns float64) *workloads.Latency { return &workloads.Latency{Mean: ns, P99: int64(ns)} }
	runs := []*QueueRun{
		queueRun("psync", 1, 1, 15000, 66000, []workloads.SyscallCount{{Name: "pwrite64", Calls: 4096}}, serial, nil, nil),
		queueRun("libaio, iodepth 32", 32, 1, 90000, 300000, []workloads.SyscallCount{{Name: "io_submit", Calls: 4096}, {Name: "io_getevents", Calls: 1024}}, deep, lat(4000), lat(296000)),
		queueRun("libaio, iodepth 32, batches", 32, 32, 100000, 280000, []workloads.SyscallCount{{Name: "io_submit", Calls: 128}, {Name: "io_getevents", Calls: 128}}, deep, lat(90000), lat(190000)),
	}
	runs[0].TracedCalls = 4096
	if p, a, b := runs[0].SyscallsPerRequest(), runs[1].SyscallsPerRequest(), runs[2].SyscallsPerRequest(); p != 1 || a != 1.25 || b != 0.0625 {
		t.Errorf("calls per request %v %v %v", p, a, b)
	}
	tab := SyncAsyncTable(runs)
	for _, s := range []string{"4096 io_submit + 1024 io_getevents", "mean 1.0, max 1", "mean 2.0, max 3", "1.25", "0.06", "—"} {
		if !strings.Contains(tab, s) {
			t.Errorf("table lacks %q:\n%s", s, tab)
		}
	}
	why := SyncAsyncWhy(runs)
	for _, s := range []string{"1.00 system calls per request (iopath traced 4096 pwrite64", "at most 1 of its requests", "up to 3 of them",
		"IOPS went to 90000 (6.0x)", "make 1.25 calls per request", "made it 0.06 (128 io_submit + 128 io_getevents)"} {
		if !strings.Contains(why, s) {
			t.Errorf("explanation lacks %q:\n%s", s, why)
		}
	}
	// One IOPS figure per run, the workload's; the device's rate (3
	// requests over 430 ns) is named as such, not as a second "IOPS".
	for _, m := range regexp.MustCompile(`(\d+) IOPS`).FindAllStringSubmatch(why, -1) {
		if m[1] != "15000" && m[1] != "90000" && m[1] != "100000" {
			t.Errorf("%q is not a workload's IOPS:\n%s", m[0], why)
		}
	}
	if !strings.Contains(why, "6976744/s is the device's rate") {
		t.Errorf("device rate not explained:\n%s", why)
	}
}

func TestIODepthStory(t *testing.T) {
	var runs []*QueueRun
	// IOPS doubles up to 8, then flattens while latency doubles.
	for i, v := range []struct{ iops, lat float64 }{{10000, 100e3}, {20000, 100e3}, {40000, 100e3}, {80000, 100e3}, {85000, 188e3}, {86000, 372e3}} {
		d := 1 << i
		runs = append(runs, queueRun("", d, 1, v.iops, v.lat, []workloads.SyscallCount{{Name: "io_submit", Calls: 4096}, {Name: "io_getevents", Calls: 2048}}, DeviceQueueOf([]record.Bio{qbio(100, 200)}), nil, nil))
	}
	if k := IODepthKnee(runs); k != 4 {
		t.Errorf("knee at %d, want 4 (iodepth 16)", k)
	}
	why := IODepthWhy(runs)
	for _, s := range []string{"Up to iodepth 8 more requests in flight meant more IOPS (80000, 8.0x)", "From iodepth 8 on", "IOPS went from 80000 to 86000",
		"86000 IOPS × 372.0 µs = 32.0 in flight"} {
		if !strings.Contains(why, s) {
			t.Errorf("explanation lacks %q:\n%s", s, why)
		}
	}
	// Still growing at the last doubling: no knee, and said so.
	runs[5].Rec.Report.IOPS = 170000
	if k := IODepthKnee(runs); k != -1 || !strings.Contains(IODepthWhy(runs), "did not saturate") {
		t.Errorf("knee %d:\n%s", k, IODepthWhy(runs))
	}
	if !strings.Contains(why, "the device had 1 request\n  at a time") || !strings.Contains(why, "latency that stayed about the same") {
		t.Errorf("iodepth 1 or latency wording:\n%s", why)
	}
}

// A sweep whose latency fell and whose IOPS dipped once on the way: said
// as it was, not as "latency grew 0.6x" or as if every doubling paid; and
// "N requests" in the plural.
func TestIODepthStoryNotMonotonic(t *testing.T) {
	var runs []*QueueRun
	for i, v := range []struct{ iops, lat float64 }{{10000, 100e3}, {30000, 66e3}, {29000, 60e3}, {80000, 50e3}, {82000, 190e3}} {
		d := 1 << i
		runs = append(runs, queueRun("", d, 1, v.iops, v.lat, nil, DeviceQueueOf([]record.Bio{qbio(100, 200), qbio(110, 210)}), nil, nil))
	}
	why := IODepthWhy(runs)
	for _, s := range []string{"the device had 2 requests\n", "more IOPS overall (80000, 8.0x), though not at every", "IOPS fell from 30000 at iodepth 2 to 29000 at iodepth 4",
		"latency that fell to 0.5x"} {
		if !strings.Contains(why, s) {
			t.Errorf("explanation lacks %q:\n%s", s, why)
		}
	}
	if strings.Contains(why, "grew 0.") || strings.Contains(why, "2 request\n") {
		t.Errorf("wrong wording:\n%s", why)
	}
}

func TestIODepthTable(t *testing.T) {
	var runs []*QueueRun
	for i := range 6 {
		runs = append(runs, queueRun("", 1<<i, 1, 1000, 1e3, nil, DeviceQueueOf([]record.Bio{qbio(100, 200)}), nil, nil))
	}
	if tab := IODepthTable(runs); !strings.Contains(tab, "IOPS × lat") || strings.Count(tab, "\n") != 7 {
		t.Errorf("table:\n%s", tab)
	}
}
