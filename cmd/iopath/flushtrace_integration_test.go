package main

// The kernel's side of TestTraceFlushJoins (flushjoin_integration_test.go):
// a tracefs instance of the test's own records the flush requests the
// kernel issued on the test device, with the jbd2 steps, handles and wakes
// that tell which commit each belonged to and whether its end released a
// traced call.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// flushTrace is what flushIssues's tracefs instance recorded last: the
// issuing task of each flush request (by issue time) and every line, for a
// failure's message.
var flushTrace struct {
	issuers map[uint64]string
	lines   []traceLine
}

// traceLine is one tracefs line and its time (ns, trace_clock mono).
type traceLine struct {
	ns   uint64
	text string
}

// flushEvents are the events flushIssues records besides the flush
// requests, to tell what a flush no call names was: the jbd2 steps of the
// test filesystem's journal (the handles each transaction had and their
// tasks; a commit's record is PREFLUSH|FUA, a journal
// superblock write FUA: on a device without FUA, 2 and 1 flush requests)
// and the device's bios and requests that ask for a flush ("F" in rwbs).
// Only those the kernel has are enabled (jbd2's come with the module).
var flushEvents = []string{
	"jbd2/jbd2_handle_start", "jbd2/jbd2_start_commit", "jbd2/jbd2_commit_locking", "jbd2/jbd2_commit_flushing",
	"jbd2/jbd2_commit_logging", "jbd2/jbd2_end_commit", "jbd2/jbd2_update_log_tail",
	"jbd2/jbd2_write_superblock", "jbd2/jbd2_checkpoint", "jbd2/jbd2_run_stats",
	"block/block_bio_queue", "block/block_rq_issue", "ext4/ext4_sync_file_exit",
	"sched/sched_waking", // by the journal's jbd2 thread only: whom each commit's end woke
}

// flushIssues records, in a tracefs instance of its own (trace_clock mono,
// the clock of bpf_ktime_get_ns), the issue times of the flush requests
// (block_rq_issue, rwbs FF) of kernel device kdev while run runs, and the
// flushEvents in flushTrace (the wakes of jbd2 thread jbd2Pid).
func flushIssues(t *testing.T, kdev uint32, jbd2Pid int, run func()) []uint64 {
	t.Helper()
	inst := fmt.Sprintf("/sys/kernel/tracing/instances/iopath-flush-%d", os.Getpid())
	if err := os.Mkdir(inst, 0o755); err != nil {
		t.Skipf("tracefs instance: %v", err)
	}
	defer os.Remove(inst)
	write := func(p, v string) {
		if err := os.WriteFile(p, []byte(v), 0); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	write(inst+"/trace_clock", "mono")
	write(inst+"/buffer_size_kb", "8192")
	var enabled []string
	for _, e := range flushEvents {
		ev := inst + "/events/" + e
		if _, err := os.Stat(ev); err != nil {
			continue
		}
		filter := fmt.Sprintf("dev == %d", kdev)
		switch {
		case strings.HasPrefix(e, "block/"):
			filter += ` && rwbs ~ "*F*"`
		case strings.HasPrefix(e, "sched/"):
			filter = fmt.Sprintf("common_pid == %d", jbd2Pid)
		}
		write(ev+"/filter", filter)
		write(ev+"/enable", "1")
		enabled = append(enabled, ev)
		defer os.WriteFile(ev+"/enable", []byte("0"), 0)
	}
	run()
	for _, ev := range enabled {
		write(ev+"/enable", "0")
	}
	f, err := os.Open(inst + "/trace")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var issues []uint64
	flushTrace.issuers, flushTrace.lines = map[uint64]string{}, nil
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "kworker/1:1H-82 [001] ..... 1234.567890: block_rq_issue: 7,1 FF 0 () 0 + 0 ..."
		l := sc.Text()
		i := strings.Index(l, ": ")
		if strings.HasPrefix(l, "#") || i < 0 {
			continue
		}
		fs := strings.Fields(l[:i])
		sec, err := strconv.ParseFloat(fs[len(fs)-1], 64)
		if err != nil {
			t.Fatalf("tracefs line %q: %v", l, err)
		}
		ns := uint64(sec * 1e9)
		flushTrace.lines = append(flushTrace.lines, traceLine{ns, l})
		if ev := strings.Fields(l[i+2:]); len(ev) > 2 && ev[0] == "block_rq_issue:" && ev[2] == "FF" {
			issues = append(issues, ns)
			flushTrace.issuers[ns] = fs[0] // the task that issued it: COMM-PID
		}
	}
	stats, _ := filepath.Glob(inst + "/per_cpu/cpu*/stats")
	for _, p := range stats {
		for _, l := range strings.Split(readFile(t, p), "\n") {
			if f := strings.Fields(l); len(f) == 2 && (f[0] == "overrun:" || f[0] == "dropped") && f[1] != "0" {
				t.Fatalf("tracefs lost events (%s %s): the kernel's count is not known", p, l)
			}
		}
	}
	return issues
}

// unnamedFlushes returns the flush request issues of kernel (tracefs,
// sorted) that no time of named (BPF, sorted) matches: the two lists are
// walked in order, a pair matching when the times differ by at most 1 ms
// (under TCG the two clocks are read up to 400 µs apart).
func unnamedFlushes(kernel, named []uint64) []uint64 {
	var out []uint64
	j := 0
	for _, k := range kernel {
		for j < len(named) && named[j]+1_000_000 < k {
			j++ // a name tracefs has no issue for
		}
		if j < len(named) && named[j] <= k+1_000_000 {
			j++
			continue
		}
		out = append(out, k)
	}
	return out
}

// logAround logs the flushTrace lines within 20 ms of time ns, the time of
// the line or flush request what names.
func logAround(t *testing.T, what string, ns uint64) {
	t.Helper()
	var b strings.Builder
	for _, l := range flushTrace.lines {
		if l.ns+20_000_000 > ns && l.ns < ns+20_000_000 {
			mark := "  "
			if l.ns == ns {
				mark = "> "
			}
			b.WriteString(mark + l.text + "\n")
		}
	}
	t.Logf("tracefs around %s at %d:\n%s", what, ns, b.String())
}

// jbd2Task returns the pid of the jbd2 thread of block device name
// (comm "jbd2/NAME-8").
func jbd2Task(t *testing.T, name string) int {
	t.Helper()
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range comms {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == "jbd2/"+name+"-8" {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	t.Fatalf("no jbd2 thread jbd2/%s-8", name)
	return 0
}

// unwakedCommits returns the [start, end] (flushTrace times) of the jbd2
// commits whose end released no traced fdatasync: no thread of tids that
// the jbd2 thread woke after the commit's end (before its next commit)
// left ext4_sync_file before the jbd2 thread woke it again. iopath names a
// commit's flushes for a call by that wake (bpf/flush.c): the call that
// needed such a commit got there after it ended, so it never slept in
// jbd2_log_wait_commit and no wake names the commit; if the commit record
// was queued after the latest fdatasync to start had returned (bpf/block.c
// keeps only that call as the device's waiter), no call names its flushes.
func unwakedCommits(tids map[uint32]bool) [][2]uint64 {
	type commit struct{ start, end, next uint64 }
	var commits []*commit
	wakes := map[uint32][]uint64{} // traced tid -> the jbd2 thread's wakes of it
	exits := map[uint32][]uint64{} // traced tid -> its ext4_sync_file exits
	var cur *commit
	for _, l := range flushTrace.lines {
		i := strings.Index(l.text, ": ")
		task, ev := strings.Fields(l.text[:i])[0], append(strings.Fields(l.text[i+2:]), "")
		switch ev[0] {
		case "jbd2_start_commit:":
			if cur != nil && cur.next == 0 {
				cur.next = l.ns
			}
			cur = &commit{start: l.ns}
		case "jbd2_end_commit:":
			if cur != nil {
				cur.end = l.ns
				commits = append(commits, cur)
			}
		case "sched_waking:":
			for _, f := range ev[1:] {
				if pid, ok := strings.CutPrefix(f, "pid="); ok {
					if tid, _ := strconv.ParseUint(pid, 10, 32); tids[uint32(tid)] {
						wakes[uint32(tid)] = append(wakes[uint32(tid)], l.ns)
					}
				}
			}
		case "ext4_sync_file_exit:":
			tid, _ := strconv.ParseUint(task[strings.LastIndex(task, "-")+1:], 10, 32)
			exits[uint32(tid)] = append(exits[uint32(tid)], l.ns)
		}
	}
	// next returns the first time of ts after ns (none: the maximum).
	next := func(ts []uint64, ns uint64) uint64 {
		if i, _ := slices.BinarySearch(ts, ns+1); i < len(ts) {
			return ts[i]
		}
		return ^uint64(0)
	}
	var out [][2]uint64
	for _, c := range commits {
		if c.end == 0 {
			continue
		}
		before := c.next
		if before == 0 {
			before = ^uint64(0)
		}
		released := false
		for tid, ws := range wakes {
			if w := next(ws, c.end); w < before && next(exits[tid], w) < next(ws, w) {
				released = true
			}
		}
		if !released {
			out = append(out, [2]uint64{c.start, c.end})
		}
	}
	return out
}
