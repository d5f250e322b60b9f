package main

// Privileged integration tests: the real tracer on this machine's kernel.
// They run `iopath trace --json -- CMD` (this test binary acting as iopath)
// and check the records of the traced command only: the kernel filters by
// pid, and other processes on the machine do IO at the same time.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	t.Helper()
	testutil.NeedRoot(t)
}

// completed says whether a bio completed: seen (complete_ns), or inferred
// where the kernel hid its completion from BPF (completed_before_ns: its
// request's address issued again, or, at the end, more requests held than
// its disk counted in flight; docs/kernel-notes.md, "Completions BPF never
// sees").
func completed(b record.Bio) bool { return b.CompleteNs != 0 || b.CompletedBeforeNs != 0 }

// diskDir returns a temp dir on a disk-backed filesystem ($TMPDIR, or /var/tmp
// when $TMPDIR is tmpfs), removed at the end of the test.
func diskDir(t *testing.T) string {
	t.Helper()
	return testutil.DiskDir(t)
}

// coldFile writes size random bytes, syncs and evicts them from the page cache.
func coldFile(t *testing.T, dir string, size int64) string {
	t.Helper()
	return testutil.ColdFile(t, dir, fmt.Sprintf("cold-%d.dat", size), size)
}

// traced holds the records of one `iopath trace --json` run.
type traced struct {
	calls     []record.Syscall
	wbs       []record.Writeback
	persisted []record.Persisted
	faults    []record.Fault
	requests  []record.Request
	async     []record.AsyncCall // "async_call" records
	summary   *record.Summary
	stderr    string
	code      int
	// The fault helper's pid and the window of its fault count (race and
	// churn modes: CLOCK_MONOTONIC ns).
	helperPid              uint32
	windowStart, windowEnd uint64
}

// warmBinary runs name --version, so that its binary and libraries are in
// the page cache before a trace: execve reads a cold binary's ELF header
// and interpreter outside any call (cause "exec", docs: unattributed bios),
// which a test that counts the traced program's disk reads must not see.
// A binary that a previous test's tree evicted (CI: TestTraceSequentialRead's
// dd had 1 unattributed bio, cause exec, 2026-12-07) is read here instead.
// In the VMs name is BusyBox's applet (no --version): its binary is read.
func warmBinary(t *testing.T, name string) {
	t.Helper()
	if exec.Command(name, "--version").Run() == nil {
		return
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
}

// lossCounts names, for a failure message, the summary's counts of what
// iopath saw incompletely: dirty pages not seen on disk, completions no
// program saw, truncated walks, full maps, skipped program runs.
func (tr *traced) lossCounts() string {
	s := tr.summary
	nonzero := func(m map[string]uint64) map[string]uint64 {
		out := map[string]uint64{}
		for k, v := range m {
			if v != 0 {
				out[k] = v
			}
		}
		return out
	}
	return fmt.Sprintf("dirty_pages_pending %d, dirty_pages_unseen %d, completions_unseen %d, incomplete %v, truncations %v, map_evictions %v, missed_runs %v, diagnostics %v",
		s.DirtyPending, s.DirtyUnseen, s.CompletionsUnseen, s.IncompleteCauses, nonzero(s.Truncations), nonzero(s.MapEvictions),
		s.MissedRuns, s.Diagnostics)
}

func (tr *traced) forIno(ino uint64) []record.Syscall {
	var out []record.Syscall
	for _, c := range tr.calls {
		if c.Ino == ino {
			out = append(out, c)
		}
	}
	return out
}

func parseRecords(t *testing.T, out []byte) *traced {
	t.Helper()
	tr := &traced{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // the traced command's own output
		}
		var head struct{ Type string }
		if err := json.Unmarshal(line, &head); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		var err error
		switch head.Type {
		case "syscall":
			var c record.Syscall
			err = json.Unmarshal(line, &c)
			tr.calls = append(tr.calls, c)
		case "writeback":
			var w record.Writeback
			err = json.Unmarshal(line, &w)
			tr.wbs = append(tr.wbs, w)
		case "persisted":
			var p record.Persisted
			err = json.Unmarshal(line, &p)
			tr.persisted = append(tr.persisted, p)
		case "fault":
			var f record.Fault
			err = json.Unmarshal(line, &f)
			tr.faults = append(tr.faults, f)
		case "request":
			var q record.Request
			err = json.Unmarshal(line, &q)
			tr.requests = append(tr.requests, q)
		case "async_call":
			var c record.AsyncCall
			err = json.Unmarshal(line, &c)
			tr.async = append(tr.async, c)
		case "summary":
			tr.summary = &record.Summary{}
			err = json.Unmarshal(line, tr.summary)
		}
		if err != nil {
			t.Fatalf("decoding %s: %v", line, err)
		}
	}
	return tr
}

// traceCmd runs `iopath trace --json ARGS` and parses what it printed.
func traceCmd(t *testing.T, args ...string) *traced {
	t.Helper()
	cmd := iopathCmd(os.TempDir(), append([]string{"trace", "--json"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if d := os.Getenv("IOPATH_TEST_DUMP"); d != "" {
		os.WriteFile(filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_")+".jsonl"), out.Bytes(), 0o644)
	}
	tr := parseRecords(t, out.Bytes())
	tr.stderr = errb.String()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		tr.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if tr.summary == nil {
		t.Fatalf("no summary record; stderr:\n%s", tr.stderr)
	}
	if tr.summary.LostEvents != 0 {
		t.Errorf("lost %d events", tr.summary.LostEvents)
	}
	return tr
}

func inoOf(t *testing.T, p string) uint64 {
	t.Helper()
	_, ino, err := inode(p)
	if err != nil {
		t.Fatal(err)
	}
	return ino
}

func sumBioBytes(calls []record.Syscall) (total uint64) {
	for _, c := range calls {
		for _, b := range c.Bios {
			total += uint64(b.Bytes)
		}
	}
	return total
}

// Must-be-true 1: a 1-byte read of a cold 1 MiB file, then the same warm.
func TestTraceColdOneByteRead(t *testing.T) {
	needRoot(t)
	f := coldFile(t, diskDir(t), 1<<20)
	ino := inoOf(t, f)
	tr := traceCmd(t, "--", "dd", "if="+f, "of=/dev/null", "bs=1", "count=1")
	calls := tr.forIno(ino)
	if len(calls) != 1 {
		t.Fatalf("want 1 read record for %s, got %d: %+v", f, len(calls), calls)
	}
	c := calls[0]
	if c.Syscall != "read" || c.RequestedBytes != 1 || c.ReturnedBytes != 1 || c.Cache.PagesMissed < 1 {
		t.Errorf("cold read record: %+v", c)
	}
	if got, want := sumBioBytes(calls), c.Cache.PagesAdded*4096; got != want || got == 0 {
		t.Errorf("bio bytes %d, pages_added*4096 = %d", got, want)
	}
	for _, b := range c.Bios {
		if !strings.Contains(b.Rwbs, "R") || !completed(b) || b.IssueNs < b.QueueNs {
			t.Errorf("bio %+v", b)
		}
	}
	// Measured here (6.18, read_ahead_kb=8192): 4 pages added, one 16 KiB RA request.
	t.Logf("cold 1-byte read: %d pages added, bios %+v, readahead %+v", c.Cache.PagesAdded, c.Bios, c.Cache.Readahead)

	warm := traceCmd(t, "--all", "--", "dd", "if="+f, "of=/dev/null", "bs=1", "count=1")
	wc := warm.forIno(ino)
	if len(wc) != 1 || wc[0].Cache.PagesMissed != 0 || len(wc[0].Bios) != 0 || wc[0].Cache.PagesHit != 1 {
		t.Errorf("warm read: %+v", wc)
	}
	// Default mode does not stream hits: they are counted in the summary.
	quiet := traceCmd(t, "--", "dd", "if="+f, "of=/dev/null", "bs=1", "count=1")
	if len(quiet.forIno(ino)) != 0 {
		t.Errorf("a cache hit was streamed without --all")
	}
	found := false
	for _, fs := range quiet.summary.Files {
		if fs.Ino == ino {
			found = true
			if fs.Calls != 1 || fs.PagesHit != 1 || fs.PagesMissed != 0 || fs.DiskBytesRead != 0 {
				t.Errorf("summary for the warm file: %+v", fs)
			}
		}
	}
	if !found {
		t.Errorf("warm read missing from the summary: %+v", quiet.summary.Files)
	}
}

// Must-be-true 2: a 1-byte pread in the middle of a cold 64 MiB file.
func TestTraceColdPreadMiddle(t *testing.T) {
	needRoot(t)
	f := coldFile(t, diskDir(t), 64<<20)
	ino := inoOf(t, f)
	off := int64(9876) * 4096 // page-aligned, mid-file (38.6 MiB)
	tr := traceCmd(t, "--", "dd", "if="+f, "of=/dev/null", "bs=1", "count=1", fmt.Sprintf("skip=%d", off), "iflag=skip_bytes")
	calls := tr.forIno(ino)
	if len(calls) != 1 {
		t.Fatalf("want 1 record, got %+v", calls)
	}
	c := calls[0]
	if c.Offset != uint64(off) || c.Cache.PagesMissed != 1 {
		t.Errorf("record %+v", c)
	}
	// Consistency, not a fixed size: every bio byte is a page the call added.
	if got, want := sumBioBytes(calls), c.Cache.PagesAdded*4096; got != want {
		t.Errorf("bio bytes %d != pages_added*4096 %d", got, want)
	}
	for _, r := range c.Cache.AddedRanges {
		if r.Index > uint64(off)/4096+uint64(r.Pages) || r.Index+uint64(r.Pages) <= uint64(off)/4096 {
			t.Errorf("added range %+v does not cover the read page %d", r, off/4096)
		}
	}
	// Measured here (6.18, read_ahead_kb=8192): at a mid-file offset with no
	// previous read the kernel's sync readahead reads only the requested page
	// (1 page added, one 4 KiB bio): no 16 KiB start-of-file window.
	t.Logf("mid-file 1-byte read: pages added %d, ranges %+v, readahead %+v", c.Cache.PagesAdded, c.Cache.AddedRanges, c.Cache.Readahead)
}

// Must-be-true 3: 4 KiB sequential reads of a cold 8 MiB file.
func TestTraceSequentialRead(t *testing.T) {
	needRoot(t)
	f := coldFile(t, diskDir(t), 8<<20)
	ino := inoOf(t, f)
	warmBinary(t, "dd") // dd's own bios must all be the file's: none of exec
	tr := traceCmd(t, "--all", "--", "dd", "if="+f, "of=/dev/null", "bs=4k")
	calls := tr.forIno(ino)
	var requested, hit, missed, added uint64
	for _, c := range calls {
		requested += c.Cache.PagesRequested
		hit += c.Cache.PagesHit
		missed += c.Cache.PagesMissed
		added += c.Cache.PagesAdded
		if c.Cache.PagesHit+c.Cache.PagesMissed != c.Cache.PagesRequested {
			t.Errorf("hits+misses != requested in %+v", c.Cache)
		}
	}
	if requested != 2048 {
		t.Errorf("pages requested %d, want 2048", requested)
	}
	if hit+missed != requested {
		t.Errorf("hit %d + missed %d != requested %d", hit, missed, requested)
	}
	// Cold file: every hit is on a page this trace's readahead brought in.
	for _, fs := range tr.summary.Files {
		if fs.Ino == ino && (fs.PagesHitCached > 1 || fs.PagesHitPrefetched+fs.PagesHitCached != fs.PagesHit) {
			t.Errorf("cold sequential read: hits from the cache %d, prefetched %d, total %d", fs.PagesHitCached, fs.PagesHitPrefetched, fs.PagesHit)
		}
	}
	bio := sumBioBytes(calls)
	var pidDisk uint64
	for _, p := range tr.summary.Pids {
		if p.Comm == "dd" {
			pidDisk = p.DiskBytesRead
			if p.Unattributed != 0 {
				t.Errorf("dd has %d unattributed bios", p.Unattributed)
			}
		}
	}
	// All the file's disk reads are in its read records; the pid's disk
	// bytes also include reading dd itself and its libraries (small).
	if bio < 8<<20 || bio > 8<<20+8192*1024 {
		t.Errorf("bio bytes for the file %d, want 8 MiB ± one readahead window", bio)
	}
	if pidDisk < bio {
		t.Errorf("pid disk bytes %d < the file's %d", pidDisk, bio)
	}
	// Before 5.11 (generic_file_buffered_read, seen on 5.10) the read at EOF
	// inserts one page past the end, zero-filled without IO: added, no bio.
	var pastEOF uint64
	for _, c := range calls {
		for _, r := range c.Cache.AddedRanges {
			if r.Index >= 2048 {
				pastEOF += uint64(r.Pages)
			}
		}
	}
	if (added-pastEOF)*4096 != bio || pastEOF > 1 {
		t.Errorf("pages added %d (%d past EOF) × 4096 != bio bytes %d", added, pastEOF, bio)
	}
	if pastEOF > 0 {
		t.Logf("the read at EOF added %d page past the end (no IO)", pastEOF)
	}
	t.Logf("8 MiB sequential: %d calls, %d hits, %d misses, bio bytes %d", len(calls), hit, missed, bio)
}

// Must-be-true 4: O_DIRECT 8 KiB reads.
func TestTraceDirectRead(t *testing.T) {
	needRoot(t)
	f := coldFile(t, diskDir(t), 1<<20)
	ino := inoOf(t, f)
	tr := traceCmd(t, "--", "dd", "if="+f, "of=/dev/null", "bs=8k", "count=4", "iflag=direct")
	calls := tr.forIno(ino)
	if len(calls) != 4 {
		t.Fatalf("want 4 records, got %d", len(calls))
	}
	for _, c := range calls {
		if !c.Direct || c.Cache.PagesAdded != 0 || c.Cache.PagesRequested != 0 || sumBioBytes([]record.Syscall{c}) != 8192 {
			t.Errorf("O_DIRECT record %+v", c)
		}
		if c.Comm != "dd" {
			t.Errorf("charged to %q", c.Comm)
		}
	}
}

// progNames lists iopath's BPF programs loaded in the kernel (by walking
// program ids, so it needs no bpftool: the VM tests have none).
func progNames(t *testing.T) []string {
	t.Helper()
	var ours []string
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			break
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		info, err := p.Info()
		p.Close()
		if err != nil {
			continue
		}
		for _, pre := range []string{"raw_sys_", "tp_block_", "btf_page_cache", "tp_sched_", "tp_writeback_", "btf_writeback_", "fentry_vfs_", "fexit_vfs_"} {
			if strings.HasPrefix(info.Name, pre) {
				ours = append(ours, fmt.Sprintf("%d %s", id, info.Name))
			}
		}
	}
	return ours
}

// leftBehind returns the iopath BPF programs (progNames) that are not in
// before and outlive the processes that loaded them: still loaded after a
// settle of up to 3 s (a closed program is freed after an RCU grace period),
// and held by no running iopath or test binary. Other iopath runs on the
// machine (other tests, benchmarks) hold their own programs: those are not
// leaks of the run under test, which has exited. A program the traced
// command inherited would be held by that command: still a leak.
func leftBehind(t *testing.T, before []string) []string {
	t.Helper()
	old := map[string]bool{}
	for _, p := range before {
		old[p] = true
	}
	var left []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		held := heldProgIDs()
		for _, p := range progNames(t) {
			id, _, _ := strings.Cut(p, " ")
			if !old[p] && !held[id] {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// heldProgIDs lists the BPF program IDs that running iopath processes (any
// binary whose name contains "iopath") and test binaries hold open (prog_id in /proc/PID/fdinfo of their program and
// link descriptors).
func heldProgIDs() map[string]bool {
	held := map[string]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, pe := range procs {
		comm, err := os.ReadFile(filepath.Join("/proc", pe.Name(), "comm"))
		if err != nil {
			continue
		}
		// Any build of iopath (a copy named e.g. brk-iopath too) or test binary.
		if c := strings.TrimSpace(string(comm)); !strings.Contains(c, "iopath") && !strings.HasSuffix(c, ".test") {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", pe.Name(), "fdinfo"))
		for _, fe := range fds {
			b, err := os.ReadFile(filepath.Join("/proc", pe.Name(), "fdinfo", fe.Name()))
			if err != nil {
				continue
			}
			for line := range strings.Lines(string(b)) {
				if v, ok := strings.CutPrefix(line, "prog_id:"); ok {
					held[strings.TrimSpace(v)] = true
				}
			}
		}
	}
	return held
}

// Must-be-true 6: bad input gives one line, a non-zero exit, and leaves nothing.
func TestTraceBadInput(t *testing.T) {
	needRoot(t)
	before := progNames(t)
	tmp := t.TempDir()
	checkRefused(t, tmp, "no process with pid 999999", "trace", "-p", "999999")
	checkRefused(t, tmp, `command "no-such-command-xyz" not found`, "trace", "--", "no-such-command-xyz")
	checkRefused(t, tmp, "nothing to trace", "trace")
	checkRefused(t, tmp, "tmpfs, which has no block device", "demo", "read-1byte", "--dir", "/dev/shm")
	checkRefused(t, tmp, "--wait-writeback needs a command", "trace", "-p", fmt.Sprint(os.Getpid()), "--wait-writeback", "5s")
	// A --comm no task can have is a flag error, refused before anything
	// loads, and leaves the probe cache alone (the new user's run: it was
	// refused while loading, as a BPF load failure, and the cache dropped).
	cache, _ := filepath.Glob("/run/iopath/probe-*.json")
	for _, cmd := range []string{"trace", "top", "serve"} {
		args := []string{cmd, "--comm", "abcdefghijklmnopq"}
		if cmd == "trace" {
			args = append(args, "--", "true")
		}
		checkRefused(t, tmp, `longer than the kernel's 15-byte task name, which cuts longer names: give its first 15 bytes, --comm "abcdefghijklmno"`, args...)
	}
	for _, f := range cache {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the probe cache %s is gone after a refused --comm: %v", f, err)
		}
	}
	if left := leftBehind(t, before); len(left) != 0 {
		t.Errorf("BPF programs left behind:\n%s", strings.Join(left, "\n"))
	}
}

func TestTraceNotRoot(t *testing.T) {
	needRoot(t) // we drop to nobody below
	var data []byte
	tmp, err := os.MkdirTemp("", "iopath-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o777)
	// The test binary sits in a root-only build dir: give nobody a copy.
	bin := filepath.Join(tmp, "iopath.test")
	data, err = os.ReadFile(os.Args[0])
	if err != nil || os.WriteFile(bin, data, 0o755) != nil {
		t.Fatal("copying the test binary", err)
	}
	cmd := exec.Command(bin, "-test.run=^TestWorkloadHelperProcess$", "--", "trace", "--", "true")
	cmd.Env = append(os.Environ(), "IOPATH_TEST_HELPER=1", "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err == nil || !strings.Contains(errb.String(), "needs root") || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("as nobody: err %v, stderr %q", err, errb.String())
	}
}

// No BTF: hide /sys/kernel/btf in a private mount namespace.
func TestTraceNoBTF(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	self, argv, _ := selfCommandForTest()
	script := `mount -t tmpfs none /sys/kernel/btf && exec "$@"`
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", self}, append(argv, "trace", "--", "true")...)...)
	cmd.Env = append(os.Environ(), "IOPATH_TEST_HELPER=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if err == nil || !strings.Contains(errb.String(), "no BTF") || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("without BTF: err %v, stderr %q", err, errb.String())
	}
}

func selfCommandForTest() (string, []string, error) {
	self, err := os.Executable()
	return self, []string{"-test.run=^TestWorkloadHelperProcess$", "--"}, err
}

// SIGINT while tracing a process: summary printed, exit 130 (issue 10 item
// 6: it was 0), no program left.
func TestTraceSIGINTCleansUp(t *testing.T) {
	needRoot(t)
	loaded := progNames(t)
	before := map[string]bool{}
	for _, p := range loaded {
		before[p] = true
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := iopathCmd(os.TempDir(), "trace", "--json", "-p", fmt.Sprint(sleeper.Process.Pid), "--ready-file", ready)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(readyWait())
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("tracer never became ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Programs that appeared while our tracer ran (ids are never reused).
	var ours []string
	for _, p := range progNames(t) {
		if !before[p] {
			ours = append(ours, p)
		}
	}
	if len(ours) == 0 {
		t.Errorf("no iopath programs loaded while tracing")
	}
	cmd.Process.Signal(unix.SIGINT)
	if err := cmd.Wait(); exitStatus(err) != 130 {
		t.Errorf("after SIGINT: %v, want exit status 130", err)
	}
	if !strings.Contains(out.String(), `"type":"summary"`) {
		t.Errorf("no summary after SIGINT: %q", out.String())
	}
	if _, err := os.Stat(ready); err == nil {
		t.Errorf("ready file left behind")
	}
	// Other iopath runs on the machine load programs too, some while this
	// one traced: a leak is a program of this run (new since before) that
	// outlives it, held by no running iopath (leftBehind).
	for _, p := range leftBehind(t, loaded) {
		t.Errorf("BPF program left behind after SIGINT: %s", p)
	}
}

// cp uses copy_file_range (GNU coreutils 9) or read/write (busybox): either
// way the source's pages are read once from disk and attributed to cp's calls,
// and the destination's dirtied pages are followed.
func TestTraceCopy(t *testing.T) {
	needRoot(t)
	dir := diskDir(t)
	f := coldFile(t, dir, 1<<20)
	g := filepath.Join(dir, "copy")
	tr := traceCmd(t, "--", "cp", f, g)
	calls := tr.forIno(inoOf(t, f))
	var missed, dirtied uint64
	for _, c := range calls {
		missed += c.Cache.PagesMissed
		dirtied += uint64(c.DirtiedPages)
	}
	for _, c := range tr.forIno(inoOf(t, g)) {
		dirtied += uint64(c.DirtiedPages)
	}
	if len(calls) == 0 || missed != 256 || sumBioBytes(calls) != 1<<20 || dirtied < 256 {
		t.Errorf("copy: %d calls on the source, %d pages missed, %d bio bytes, %d pages dirtied", len(calls), missed, sumBioBytes(calls), dirtied)
	}
	t.Logf("cp: %s calls on the source", calls[0].Syscall)
}
