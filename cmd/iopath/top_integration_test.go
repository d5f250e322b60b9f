package main

// Privileged integration tests of `iopath top`: the in-kernel aggregates
// (bpf/agg.h) read back as JSON intervals, checked against the workload's
// own report and the kernel's /proc/PID/io.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/topview"
	"github.com/iopath/iopath/workloads"
)

// topRun is what `iopath top --json` printed: its intervals, the total and
// the traced command's own JSON lines.
type topRun struct {
	intervals []*topview.Interval
	total     *topview.Interval
	other     []string
}

func parseTop(t *testing.T, out string) *topRun {
	t.Helper()
	r := &topRun{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, `{"type":"interval"`) && !strings.HasPrefix(line, `{"type":"total"`) {
			r.other = append(r.other, line)
			continue
		}
		iv := &topview.Interval{}
		if err := json.Unmarshal([]byte(line), iv); err != nil {
			t.Fatalf("decoding %s: %v", line, err)
		}
		if iv.Type == "total" {
			r.total = iv
		} else {
			r.intervals = append(r.intervals, iv)
		}
	}
	if r.total == nil {
		t.Fatalf("no total object in:\n%s", out)
	}
	return r
}

// topParts runs `iopath top --json -- sh -c script sh args...`, whose
// process changes its comm from first to second (a rename, an exec): it
// returns the run and the total's rows of both parts, checked to be one
// pid whose first part ended.
func topParts(t *testing.T, tmp, script string, args []string, first, second string) (*topRun, *topview.IOJSON, *topview.IOJSON) {
	t.Helper()
	stdout, stderr, code := runIopath(t, tmp, append([]string{"top", "--json", "--interval", "50ms", "--rows", "0", "--",
		"sh", "-c", script, "sh"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	run := parseTop(t, stdout)
	var a, b *topview.IOJSON
	for i, p := range run.total.Processes {
		switch p.Comm {
		case first:
			a = &run.total.Processes[i]
		case second:
			b = &run.total.Processes[i]
		}
	}
	if a == nil || b == nil {
		t.Fatalf("want a row for %s and one for %s: %+v\n%s", first, second, run.total.Processes, topEvidence(run))
	}
	if a.Pid != b.Pid || !a.Exited {
		t.Errorf("%s row pid %d ended %v, %s row pid %d: want one pid, the %s part ended", first, a.Pid, a.Exited, second, b.Pid, first)
	}
	return run, a, b
}

// topEvidence describes a run for a failure message: the total's reads,
// what the maps refused and the records lost, and every interval's rows,
// so that a failure seen once (TestTopExec on 5.10, 1 of 6 suite runs)
// says where the missing calls went.
func topEvidence(run *topRun) string {
	var b strings.Builder
	tot := run.total
	fmt.Fprintf(&b, "total: reads %d read_bytes %d, overflow %v, lost %d, missed %v\n", tot.Total.Reads, tot.Total.ReadBytes, tot.Overflow, tot.LostEvents, tot.MissedRuns)
	for _, f := range tot.Files {
		fmt.Fprintf(&b, "  total file %s ino %d: reads %d read_bytes %d\n", f.Name, f.Ino, f.Reads, f.ReadBytes)
	}
	for i, iv := range run.intervals {
		fmt.Fprintf(&b, "interval %d: reads %d", i, iv.Total.Reads)
		for _, p := range iv.Processes {
			fmt.Fprintf(&b, "; pid %d %q exited %v reads %d", p.Pid, p.Comm, p.Exited, p.Reads)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// TestTopWorkloadRandReadCold: `iopath top --json -- iopath workload
// rand-read --cold` shows the workload's process and file with the
// workload's numbers (±5 %), summed over the intervals and in the total.
func TestTopWorkloadRandReadCold(t *testing.T) {
	needRoot(t)
	tmp := diskDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runIopath(t, tmp, "top", "--json", "--interval", "200ms", "--rows", "0", "--",
		self, "-test.run=^TestWorkloadHelperProcess$", "--", "workload", "rand-read", "--cold", "--size", "32m",
		"--count", "3000", "--dir", tmp, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	run := parseTop(t, stdout)
	// The other lines are the workload's report (indented JSON).
	rep := &workloads.Report{}
	if err := json.Unmarshal([]byte(strings.Join(run.other, "\n")), rep); err != nil {
		t.Fatalf("workload report: %v\n%s", err, strings.Join(run.other, "\n"))
	}
	if rep.Ops != 3000 || rep.Kernel == nil {
		t.Fatalf("workload report: %d ops, kernel_io %v", rep.Ops, rep.Kernel)
	}
	// The workload removed its file: its row is found by name.
	var fileRow *topview.IOJSON
	for i, f := range run.total.Files {
		if f.Name == filepath.Base(rep.File) {
			fileRow = &run.total.Files[i]
		}
	}
	if fileRow == nil {
		t.Fatalf("no row of %s in the total: %+v", filepath.Base(rep.File), run.total.Files)
	}
	// The file's row: exactly the workload's reads, and the kernel's
	// read_bytes of the thread (/proc/thread-self/io) as disk bytes.
	if fileRow.Reads != uint64(rep.Ops) || fileRow.ReadBytes != uint64(rep.Bytes) {
		t.Errorf("file row: %d reads, %d bytes; the workload: %d ops, %d bytes", fileRow.Reads, fileRow.ReadBytes, rep.Ops, rep.Bytes)
	}
	if !within(float64(fileRow.DiskReadBytes), float64(rep.Kernel.ReadBytes), 0.05) {
		t.Errorf("file row: disk_read_bytes %d; the kernel's read_bytes %d (±5%%)", fileRow.DiskReadBytes, rep.Kernel.ReadBytes)
	}
	pages := float64(fileRow.HitPages + fileRow.MissPages)
	if !within(pages, float64(rep.Ops), 0.05) || fileRow.HitRatio == nil {
		t.Errorf("file row: %d hit + %d miss pages for %d 4 KiB reads", fileRow.HitPages, fileRow.MissPages, rep.Ops)
	}
	// Every page read from the disk was inserted: inside a read's range
	// (a miss) or beyond it (readahead, or the rest of a large folio).
	if !within(float64(fileRow.MissPages+fileRow.ReadaheadPages)*4096, float64(rep.Kernel.ReadBytes), 0.05) {
		t.Errorf("file row: %d miss + %d readahead pages, the kernel read %d bytes", fileRow.MissPages, fileRow.ReadaheadPages, rep.Kernel.ReadBytes)
	}
	if fileRow.ReadP50Ns == nil || rep.Latency.P50 == 0 || *fileRow.ReadP50Ns > 4*float64(rep.Latency.P50) || *fileRow.ReadP50Ns < float64(rep.Latency.P50)/4 {
		t.Errorf("file row: read p50 %v ns; the workload's p50 %d ns (log2 buckets: within 2x, allowed 4x)", fileRow.ReadP50Ns, rep.Latency.P50)
	}
	// The process's row: its reads are the workload's plus the few of
	// its start (/proc, cgroup files) — within 5 %.
	var proc *topview.IOJSON
	for i, p := range run.total.Processes {
		if p.Reads >= uint64(rep.Ops) {
			proc = &run.total.Processes[i]
		}
	}
	if proc == nil {
		t.Fatalf("no process row with %d reads: %+v", rep.Ops, run.total.Processes)
	}
	if !within(float64(proc.Reads), float64(rep.Ops), 0.05) || !within(float64(proc.ReadBytes), float64(rep.Bytes), 0.05) {
		t.Errorf("process row: %d reads, %d bytes; the workload: %d ops, %d bytes", proc.Reads, proc.ReadBytes, rep.Ops, rep.Bytes)
	}
	if !within(float64(proc.DiskReadBytes), float64(rep.Kernel.ReadBytes), 0.05) {
		t.Errorf("process row: disk_read_bytes %d; the kernel's %d", proc.DiskReadBytes, rep.Kernel.ReadBytes)
	}
	// The intervals add up to the total.
	var reads, diskRead uint64
	for _, iv := range run.intervals {
		for _, f := range iv.Files {
			if f.Dev == fileRow.Dev && f.Ino == fileRow.Ino {
				reads += f.Reads
				diskRead += f.DiskReadBytes
			}
		}
	}
	if reads != fileRow.Reads || diskRead != fileRow.DiskReadBytes {
		t.Errorf("intervals sum to %d reads, %d disk bytes; the total says %d, %d", reads, diskRead, fileRow.Reads, fileRow.DiskReadBytes)
	}
	// A disk served the misses: read requests with D2C percentiles.
	var devReadBytes, unseen uint64
	for _, d := range run.total.Devices {
		unseen += d.Unseen
		if d.Op == "read" {
			devReadBytes += d.Bytes
			if d.Requests > 0 && (d.D2CP50Ns == nil || d.D2CP99Ns == nil || *d.D2CP99Ns < *d.D2CP50Ns) {
				t.Errorf("device %s: D2C p50 %v p99 %v", d.Device, d.D2CP50Ns, d.D2CP99Ns)
			}
		}
	}
	// The disks read at least the work file's disk bytes. Not the process's
	// read_bytes: in the VMs (test binary on 9p, no block device) it was
	// 4 KiB above every disk's reads on 6.1 and 6.12, both runs alike.
	// Exactly: the disks' requests and bytes are counted at issue. Counted
	// at completion they came out short on the 6.18 host (28 KiB of 12 MiB
	// on 2026-12-01): no BPF program runs for a block_rq_complete fired in a
	// softirq on top of the sandbox's init threads (docs/kernel-notes.md).
	if devReadBytes < fileRow.DiskReadBytes {
		t.Errorf("devices read %d bytes, fewer than the work file's %d (missed BPF runs: %v, completions unseen: %d)",
			devReadBytes, fileRow.DiskReadBytes, run.total.MissedRuns, unseen)
	}
	t.Logf("devices read %d bytes, the work file %d; request completions no BPF program saw: %d", devReadBytes, fileRow.DiskReadBytes, unseen)
	for k, v := range run.total.Overflow {
		if v != 0 {
			t.Errorf("overflow %s: %d", k, v)
		}
	}
	if run.total.LostEvents != 0 {
		t.Errorf("lost %d events", run.total.LostEvents)
	}
}

// TestTraceInterval: `iopath trace --json --interval` puts interval
// objects between the records, whole lines, with the workload's reads.
func TestTraceInterval(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	tmp := diskDir(t)
	stdout, stderr, code := runIopath(t, tmp, "trace", "--json", "--interval", "100ms", "--workload", "rand-read", "--",
		"--cold", "--size", "32m", "--count", "4000")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	// Some interval has syscall records before and after it (when the
	// first comes depends on the machine's speed: not asserted).
	var records int
	var at []int // records seen when each interval came
	var intervals []*topview.Interval
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		switch {
		case strings.HasPrefix(line, `{"type":"interval"`):
			iv := &topview.Interval{}
			if err := json.Unmarshal([]byte(line), iv); err != nil {
				t.Fatalf("interval line %s: %v", line, err)
			}
			intervals = append(intervals, iv)
			at = append(at, records)
		case strings.HasPrefix(line, `{"type":"syscall"`):
			records++
		}
	}
	between := false
	for _, n := range at {
		between = between || (n > 0 && n < records)
	}
	if !between {
		t.Fatalf("%d intervals after %v of %d records: want one between records", len(intervals), at, records)
	}
	var reads uint64
	for _, iv := range intervals {
		reads += iv.Total.Reads
	}
	// The last, partial interval is printed too: the intervals add up to
	// the run (the workload's 4000 reads and a few of its start-up's).
	if reads < 4000 || reads > 4000+100 {
		t.Errorf("intervals count %d reads; the workload made 4000", reads)
	}
}

// TestTopExec: a process that reads, then execs another program, shows as
// two rows: the first program's calls under its comm (ended), the second's
// under the new comm — per-comm numbers follow the program, not the pid.
func TestTopExec(t *testing.T) {
	needRoot(t)
	tmp := diskDir(t)
	f := filepath.Join(tmp, "exec.dat")
	data := append([]byte("first line\n"), make([]byte, 65536-11)...)
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// dash's read builtin reads its input with read(2), a byte at a time.
	_, sh, cat := topParts(t, tmp, `read x < "$1"; exec cat "$1" >/dev/null`, []string{f}, "sh", "cat")
	if sh.ReadBytes == 0 || sh.ReadBytes >= 65536 {
		t.Errorf("sh read %d bytes, want its read builtin's few", sh.ReadBytes)
	}
	if cat.ReadBytes < 65536 {
		t.Errorf("cat read %d bytes, want the whole 64 KiB file", cat.ReadBytes)
	}
}

// TestTopDirectOutput: `iopath top --json -o FILE -- workload rand-read
// --cold --direct`: the JSON goes to FILE only (stdout is the workload's
// report alone), and with O_DIRECT reads, which bypass the page cache, the
// data file's hit ratio is null, the total shows the bytes that bypassed
// the cache, and the /proc and cgroup files the workload's start reads are
// counted apart, not as hits.
func TestTopDirectOutput(t *testing.T) {
	needRoot(t)
	tmp := diskDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "top.jsonl")
	stdout, stderr, code := runIopath(t, tmp, "top", "--json", "-o", out, "--interval", "200ms", "--rows", "0", "--",
		self, "-test.run=^TestWorkloadHelperProcess$", "--", "workload", "rand-read", "--cold", "--direct", "--size", "16m",
		"--count", "500", "--dir", tmp, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	rep := &workloads.Report{}
	if err := json.Unmarshal([]byte(stdout), rep); err != nil || rep.Ops != 500 {
		t.Fatalf("stdout is not the workload's report alone (%v):\n%s", err, stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	run := parseTop(t, string(b))
	if len(run.other) != 0 {
		t.Errorf("-o file has lines other than top's JSON: %q", run.other)
	}
	var fileRow *topview.IOJSON
	for i, f := range run.total.Files {
		if f.Name == filepath.Base(rep.File) {
			fileRow = &run.total.Files[i]
		}
	}
	if fileRow == nil || fileRow.Reads != 500 {
		t.Fatalf("no row of %s with 500 reads in the total: %+v", filepath.Base(rep.File), run.total.Files)
	}
	if fileRow.HitRatio != nil || fileRow.HitPages+fileRow.MissPages != 0 {
		t.Errorf("O_DIRECT file: ratio %v, %d hit + %d miss pages; want null and none", fileRow.HitRatio, fileRow.HitPages, fileRow.MissPages)
	}
	// The total's pages are the few cached reads of block-backed files
	// (the dynamic loader's of libc, the binary's of itself); the
	// workload's bytes are shown as bypassing the cache.
	if tot := run.total.Total; tot.DirectReadBytes != uint64(rep.Bytes) {
		t.Errorf("total: direct_read_bytes %d, the workload read %d with O_DIRECT", tot.DirectReadBytes, rep.Bytes)
	}
	if run.total.Total.NoBdevPages == 0 {
		t.Errorf("no page of /proc or cgroup files counted apart: %+v", run.total.Total)
	}
	if run.total.MissedRuns == nil {
		t.Error("no missed_runs object")
	}
}

// TestTopExitedWriterCleaned: a writer (dd) exits, top retires its entry,
// and only then are its dirty pages written (by `sync FILE`, whose fsync
// queues them). The total must show no page still pending: the kernel
// credits the cleaning to a process that has no entry any more, and that
// goes to the totals (bpf/agg.h AGG_OTHER_GONE). Before, the 256 pages
// stayed pending in the total for the rest of the run (and a flusher's
// writeback bytes of them were missing), while the file's row said 0; and
// on kernels without large folios in ext4's page cache (5.10–6.12) the
// file's row said 240 pending too: only the first page of each 64 KiB
// write was counted cleaned (bpf/block.c claim).
func TestTopExitedWriterCleaned(t *testing.T) {
	needRoot(t)
	tmp := diskDir(t)
	f := filepath.Join(tmp, "exited.dat")
	out := filepath.Join(tmp, "top.jsonl")
	// The command waits for top to print dd's row as exited (a condition,
	// not a time): its entry is retired by then. Bounded (exit 7 after
	// 3000 polls, 150 s or more): the 5.10 VM once waited here 16 minutes
	// (2026-12-07, a suite run on a machine with 8 VMs).
	script := `dd if=/dev/zero of="$1" bs=64k count=16 2>/dev/null
i=0; until grep -q '"comm":"dd","exited":true' "$2"; do i=$((i+1)); [ $i -le 3000 ] || exit 7; sleep 0.05; done
sync "$1"`
	_, stderr, code := runIopath(t, tmp, "top", "--json", "-o", out, "--interval", "50ms", "--rows", "0", "--",
		"sh", "-c", script, "sh", f, out)
	if code != 0 {
		b, _ := os.ReadFile(out)
		t.Fatalf("exit %d (7: top never showed dd exited)\nstderr: %s\ntop's JSON (last 4 KiB): %s", code, stderr, b[max(0, len(b)-4096):])
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	run := parseTop(t, string(b))
	tot := run.total.Total
	if tot.DirtiedPages != 256 {
		t.Fatalf("total dirtied %d pages, want dd's 256 (1 MiB)\n%s", tot.DirtiedPages, topEvidence(run))
	}
	// sync wrote every page: nothing is pending, in the file's row nor in
	// the total (where the cleaning of an exited writer's pages counts).
	for _, r := range run.total.Files {
		if r.Name == "exited.dat" && (r.DirtiedPages != 256 || r.DirtyPending != 0) {
			t.Errorf("file row: dirtied %d, pending %d; want 256, 0", r.DirtiedPages, r.DirtyPending)
		}
	}
	if tot.DirtyPending != 0 {
		t.Errorf("total: %d pages pending after sync wrote them (dd exited first)", tot.DirtyPending)
	}
}
