package main

// Privileged integration tests of fault records (issue 14): a helper
// process maps a file and touches it; iopath traces it; the records of the
// helper's faults on that file are checked against the kernel's own count
// of major faults (getrusage ru_majflt around the loop).

import (
	"errors"
	"fmt"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/iopath/iopath/demo"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"golang.org/x/sys/unix"
)

// TestFaultHelperProcess is not a test: started by the fault tests (under
// iopath trace) with IOPATH_FAULT_HELPER=1, it maps the file named after
// "--" and touches it; it writes the task's major faults during the loop
// (ru_majflt after - before) to the result file.
//
//	read FILE STRIDE RESULT   load one byte every STRIDE bytes of a private read-only mapping
//	write FILE OFFSET RESULT  store one byte at OFFSET of a shared mapping, then msync(MS_SYNC)
//	signal FILE OFFSET RESULT  the same store, made when told, while a signal is pending (faultsignal_integration_test.go)
//	sigbus FILE OFFSET RESULT  a load at OFFSET past the end of the file, in a longer mapping: SIGBUS, recovered
//	willneed|fadvise|readahead FILE LEN RESULT  madvise(MADV_WILLNEED) of the mapping's first LEN
//	                          bytes, posix_fadvise(WILLNEED) or readahead(2) of them; no access
//	race FILE THREADS RESULT  THREADS threads load one byte of every page of a MADV_RANDOM
//	                          mapping, all in the same order at once (their faults race on each page)
func TestFaultHelperProcess(t *testing.T) {
	if os.Getenv("IOPATH_FAULT_HELPER") != "1" {
		t.Skip("helper process for the fault tests")
	}
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	if err := faultHelper(args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fault helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func faultHelper(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("want MODE FILE N RESULT, got %q", args)
	}
	mode, path, result := args[0], args[1], args[3]
	n, err := strconv.ParseInt(args[2], 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("bad number %q", args[2])
	}
	flags, prot, mflags := unix.O_RDONLY, unix.PROT_READ, unix.MAP_PRIVATE
	if mode == "write" || mode == "signal" {
		flags, prot, mflags = unix.O_RDWR, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED
	}
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), prot, mflags)
	if err != nil {
		return err
	}
	switch mode {
	case "race":
		return raceFaults(m, int(n), result, false)
	case "churn":
		return raceFaults(m, 1, result, true)
	case "signal":
		return signalledStore(m, n, result)
	case "sigbus":
		return loadPastEOF(fd, st.Size, n, result)
	}
	runtime.LockOSThread() // RUSAGE_THREAD counts this thread's faults
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &before)
	var sum byte
	switch mode {
	case "read":
		for off := int64(0); off < st.Size; off += n {
			sum += m[off]
		}
	case "write":
		m[n] = sum + 1
	case "willneed":
		err = unix.Madvise(m[:n], unix.MADV_WILLNEED)
	case "fadvise":
		err = unix.Fadvise(fd, 0, n, unix.FADV_WILLNEED)
	case "readahead":
		_, _, e := unix.Syscall(unix.SYS_READAHEAD, uintptr(fd), 0, uintptr(n))
		if e != 0 {
			err = e
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	unix.Getrusage(unix.RUSAGE_THREAD, &after)
	runtime.KeepAlive(sum) // the loads must happen
	if err != nil {
		return fmt.Errorf("%s: %w", mode, err)
	}
	if mode == "write" {
		if err := unix.Msync(m, unix.MS_SYNC); err != nil {
			return err
		}
	}
	return os.WriteFile(result, []byte(strconv.FormatInt(after.Majflt-before.Majflt, 10)), 0o644)
}

// raceFaults is the helper's race mode: n threads (each its own OS thread)
// load a byte of every page of m, after MADV_RANDOM (every page its own
// read, no read-around), released together; the result is the process's
// major faults during the loads. With churn, two more threads map and
// unmap anonymous memory until the loads are done: each mmap/munmap takes
// the mmap lock for writing, so faults run while it is held.
func raceFaults(m []byte, n int, result string, churn bool) error {
	if err := unix.Madvise(m, unix.MADV_RANDOM); err != nil {
		return err
	}
	var before, after unix.Rusage
	var t0, t1 unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &t0)
	unix.Getrusage(unix.RUSAGE_SELF, &before)
	start := make(chan struct{})
	var wg sync.WaitGroup
	sums := make([]byte, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			<-start
			for off := 0; off < len(m); off += 4096 {
				sums[i] += m[off]
			}
		}()
	}
	stop := make(chan struct{})
	var churned sync.WaitGroup
	for range 2 {
		if !churn {
			break
		}
		churned.Add(1)
		go func() {
			defer churned.Done()
			runtime.LockOSThread()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if b, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
					unix.Munmap(b)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	churned.Wait()
	unix.Getrusage(unix.RUSAGE_SELF, &after)
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &t1)
	runtime.KeepAlive(sums)
	// The window of the count, CLOCK_MONOTONIC ns (the records' clock): the
	// process's other major faults in it (its own cold text in a VM) are
	// records on other files.
	window := fmt.Sprintf("%d %d %d", os.Getpid(), t0.Nano(), t1.Nano())
	if err := os.WriteFile(result+".window", []byte(window), 0o644); err != nil {
		return err
	}
	return os.WriteFile(result, []byte(strconv.FormatInt(after.Majflt-before.Majflt, 10)), 0o644)
}

// traceFaults traces the helper in mode on file (n: stride or offset) and
// returns the records and the helper's count of major faults in its loop.
func traceFaults(t *testing.T, all bool, mode, file string, n int64) (*traced, int64) {
	t.Helper()
	result := filepath.Join(t.TempDir(), "majflt")
	args := []string{"--"}
	if all {
		args = []string{"--all", "--"}
	}
	args = append(args, "env", "IOPATH_FAULT_HELPER=1", os.Args[0], "-test.run=^TestFaultHelperProcess$", "--",
		mode, file, strconv.FormatInt(n, 10), result)
	tr := traceCmd(t, args...)
	b, err := os.ReadFile(result)
	if err != nil {
		t.Fatalf("the helper wrote no result (%v); stderr:\n%s", err, tr.stderr)
	}
	maj, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if w, err := os.ReadFile(result + ".window"); err == nil {
		fmt.Sscan(string(w), &tr.helperPid, &tr.windowStart, &tr.windowEnd)
	}
	return tr, maj
}

// majorInWindow counts the fault helper's major fault records that ended
// in the window of its ru_majflt count (race and churn modes), on any
// file: ru_majflt counts the whole process, and in a VM that includes its
// own cold text faults (records on the test binary; 6.1 and 5.10 were 1-2
// short when only the data file's records were counted).
func (tr *traced) majorInWindow() int64 {
	var n int64
	for _, fr := range tr.faults {
		end := fr.TimeNs + fr.DurationNs
		if fr.Major && fr.Pid == tr.helperPid && end >= tr.windowStart && end <= tr.windowEnd {
			n++
		}
	}
	return n
}

func (tr *traced) faultsOn(ino uint64) []record.Fault {
	var out []record.Fault
	for _, f := range tr.faults {
		if f.Ino == ino {
			out = append(out, f)
		}
	}
	return out
}

// Must-be-true 1: a cold 64 MiB file mapped and read with a 256 KiB
// stride. Every bio of the loop is a fault's; the number of major fault
// records is the kernel's count.
func TestFaultColdMappingStride(t *testing.T) {
	needFaults(t)
	f := coldFile(t, diskDir(t), 64<<20)
	ino := inoOf(t, f)
	tr, kernelMajor := traceFaults(t, false, "read", f, 256<<10)
	faults := tr.faultsOn(ino)
	var major, bioBytes, added uint64
	for _, fr := range faults {
		if fr.Major {
			major++
		}
		if fr.Path != f {
			t.Errorf("fault path %q, want %q", fr.Path, f)
		}
		if fr.Index >= 64<<20/4096 || fr.Address == 0 || fr.Write {
			t.Errorf("fault %+v", fr)
		}
		for _, b := range fr.Bios {
			bioBytes += uint64(b.Bytes)
			if !completed(b) || !strings.HasPrefix(b.Rwbs, "R") {
				t.Errorf("bio %+v", b)
			}
		}
		added += fr.Cache.PagesAdded
	}
	// Debian 7.2 counts no major fault here (the faults that read ahead end
	// VM_FAULT_RETRY, back to user space, and the redo finds the page): the
	// records must still say what the kernel counted, and carry the bios.
	if major != uint64(kernelMajor) {
		t.Errorf("%d major fault records, the kernel counted %d (ru_majflt)", major, kernelMajor)
	}
	if bioBytes != added*4096 || bioBytes == 0 {
		t.Errorf("fault bios carry %d bytes, faults added %d pages", bioBytes, added)
	}
	// The traced command's own execve (env's, then the helper's) reads its
	// binary when it is cold: the cause exec, not a fault's bios.
	if n := tr.summary.UnattributedBios - tr.summary.UnattributedCauses["exec"].Bios; n != 0 {
		t.Errorf("unattributed bios: %d not of exec (by cause: %+v)", n, tr.summary.UnattributedCauses)
	}
	for _, fs := range tr.summary.Files {
		if fs.Ino == ino && (fs.MajorFaults != major || fs.FaultDiskBytesRead != bioBytes || fs.Faults < uint64(len(faults))) {
			t.Errorf("file summary %+v; records: %d faults, %d major, %d bio bytes", fs.Totals, len(faults), major, bioBytes)
		}
	}
	t.Logf("64 MiB at 256 KiB stride: %d fault records, %d major (kernel %d), %d bio bytes, %d pages added", len(faults), major, kernelMajor, bioBytes, added)
}

// Threads faulting on the same cold pages at once: the one that reads a
// page drops the mmap lock and retries, and its second pass (or a waiting
// thread's) often finds the page already mapped, with no second filemap
// event to show the retry. Every fault that read its page was retried
// (mm/filemap.c since 5.1): where only tracepoints see filemap_fault, the
// engine infers it (engine.retryImplied). Except a fault ended by a signal
// (the helper's threads get Go's preemption SIGURG: 7-16 of the 2048 per
// run on 6.18): its VM_FAULT_RETRY was not redone. The major faults are the
// kernel's count.
func TestFaultRetriesOfRacingThreads(t *testing.T) {
	needFaults(t)
	f := coldFile(t, diskDir(t), 8<<20)
	ino := inoOf(t, f)
	tr, kernelMajor := traceFaults(t, false, "race", f, 4)
	var major, read, blockedMinor, notRetried, signaled int64
	major = tr.majorInWindow()
	for _, fr := range tr.faultsOn(ino) {
		if fr.Cache.PagesAdded > 0 && fr.Signal != "" {
			signaled++ // VM_FAULT_RETRY, not redone: the thread took the signal (Go's SIGURG)
		} else if fr.Cache.PagesAdded > 0 {
			read++
			if !fr.Retried {
				notRetried++
			}
		}
		if !fr.Major && fr.BlockedNs > 0 {
			blockedMinor++
		}
	}
	if read == 0 || notRetried > 0 {
		t.Errorf("%d of %d faults that read their page are not retried", notRetried, read)
	}
	if major != kernelMajor {
		t.Errorf("%d major fault records, the kernel counted %d (ru_majflt); diagnostics %v", major, kernelMajor, tr.summary.Diagnostics)
	}
	t.Logf("4 threads on 2048 cold pages: %d faults read a page (%d major, kernel %d), %d more ended by a signal, %d minor faults waited for another's read",
		read, major, kernelMajor, signaled, blockedMinor)
}

// A thread faulting on cold pages while two others map and unmap memory
// (each holding the mmap lock for writing): bpf_find_vma's trylock fails
// for many of the faults (faults_vma_busy; a breaker's program lost 803 of
// 1024 on 6.18 before). A major fault always reaches filemap_fault, whose
// tracepoint (6.11+) names the page cache's inode: every major fault is a
// record, named like the file's other records.
func TestFaultWhileMmapLockHeld(t *testing.T) {
	needFaults(t)
	f := coldFile(t, diskDir(t), 8<<20)
	ino := inoOf(t, f)
	tr, kernelMajor := traceFaults(t, false, "churn", f, 1)
	major := tr.majorInWindow()
	var onFile int64
	for _, fr := range tr.faultsOn(ino) {
		if fr.Major {
			onFile++
			if fr.Path != f {
				t.Errorf("major fault named %q, want %q: %+v", fr.Path, f, fr)
			}
		}
	}
	if onFile == 0 {
		t.Fatalf("no major fault record on the file in the helper's window (pid %d, %d..%d)", tr.helperPid, tr.windowStart, tr.windowEnd)
	}
	d := tr.summary.Diagnostics
	if major != kernelMajor && tr.summary.Attach["fault_entry"] != "fentry" && tr.summary.Attach["fault_entry"] != "kprobe" &&
		tr.summary.Attach["filemap_fault"] != "tp_btf" {
		t.Skipf("lost, counted: %d major fault records, the kernel counted %d; recovery needs tp_btf/mm_filemap_fault (6.11+), attached: %s (%v)",
			major, kernelMajor, tr.summary.Attach["filemap_fault"], d)
	}
	if major != kernelMajor {
		t.Errorf("%d major fault records, the kernel counted %d (ru_majflt); diagnostics %v", major, kernelMajor, d)
	}
	if d["faults_vma_recovered"] > d["faults_vma_busy"] {
		t.Errorf("more faults recovered than busy: %v", d)
	}
	t.Logf("2048 cold pages with mmap/munmap churn: %d major (kernel %d); %d faults found the mmap lock taken, %d of them recovered at filemap_fault",
		major, kernelMajor, d["faults_vma_busy"], d["faults_vma_recovered"])
}

// Must-be-true 2: a cached mapped page faults minor, without IO, and is
// a record only with --all.
func TestFaultCachedPage(t *testing.T) {
	needFaults(t)
	f := coldFile(t, diskDir(t), 1<<20)
	if _, err := os.ReadFile(f); err != nil { // now cached
		t.Fatal(err)
	}
	ino := inoOf(t, f)
	tr, kernelMajor := traceFaults(t, true, "read", f, 1<<20)
	faults := tr.faultsOn(ino)
	if kernelMajor != 0 || len(faults) == 0 {
		t.Fatalf("kernel major %d, fault records %+v", kernelMajor, faults)
	}
	for _, fr := range faults {
		if fr.Major || len(fr.Bios) != 0 || fr.Cache.PagesMissed != 0 || fr.Cache.PagesHit != 1 {
			t.Errorf("cached fault %+v", fr)
		}
	}
	quiet, _ := traceFaults(t, false, "read", f, 1<<20)
	if n := len(quiet.faultsOn(ino)); n != 0 {
		t.Errorf("%d cached faults streamed without --all", n)
	}
	for _, fs := range quiet.summary.Files {
		if fs.Ino == ino && (fs.Faults == 0 || fs.MajorFaults != 0) {
			t.Errorf("summary of the cached file: %+v", fs.Totals)
		}
	}
}

// coldBinary copies this test binary to name on the disk and evicts the
// copy from the page cache: a program no page of which is cached.
func coldBinary(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(diskDir(t), name)
	copyFile(t, os.Args[0], bin, 0o755)
	if left, err := demo.Evict(bin); err != nil || left != 0 {
		t.Fatalf("evicting %s: %d pages left, %v", bin, left, err)
	}
	return bin
}

// Must-be-true 4: a program run from a cold copy of a binary (this test
// binary: static, megabytes of text) pages its text in through faults
// attributed to that process.
func TestFaultExecColdBinary(t *testing.T) {
	needFaults(t)
	bin := coldBinary(t, "exec-copy")
	ino := inoOf(t, bin)
	tr := traceCmd(t, "--", bin, "-test.run=^$")
	faults := tr.faultsOn(ino)
	var bios, major int
	pids := map[uint32]bool{}
	for _, fr := range faults {
		bios += len(fr.Bios)
		pids[fr.Pid] = true
		if fr.Major {
			major++
		}
		if fr.Comm != "exec-copy" {
			t.Errorf("fault of %q: %+v", fr.Comm, fr)
		}
	}
	if major == 0 || bios == 0 || len(pids) != 1 {
		t.Fatalf("fault records of the cold binary (%d major, %d bios): %+v", major, bios, faults)
	}
	// execve's own reads of the ELF header are its record's
	// (exec_integration_test.go); unattributed bios are allowed when they
	// name a cause other than a page fault (metadata of the fresh copy).
	// The text is paged in by faults: no unattributed bio is a fault's.
	if c := tr.summary.UnattributedCauses["page_fault"]; c.Bios > 0 {
		t.Errorf("%d bios of page faults unattributed (causes %v)", c.Bios, tr.summary.UnattributedCauses)
	}
	t.Logf("cold exec: %d fault records, %d bios; unattributed bios %d, causes %v",
		len(faults), bios, tr.summary.UnattributedBios, tr.summary.UnattributedCauses)
}

// A mapping of a tmpfs file: the fault is said to be memory only.
func TestFaultTmpfsSaysNoBlockIO(t *testing.T) {
	needFaults(t)
	if session.DescribeFS("/dev/shm").Type != "tmpfs" {
		t.Skip("/dev/shm is not tmpfs")
	}
	f := filepath.Join("/dev/shm", fmt.Sprintf("iopath-fault-%d", os.Getpid()))
	if err := os.WriteFile(f, make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f) })
	tr, _ := traceFaults(t, false, "read", f, 4096)
	found := false
	for _, fs := range tr.summary.Files {
		if fs.Ino == inoOf(t, f) {
			found = fs.Faults > 0 && fs.FS == "tmpfs"
		}
	}
	if !found {
		t.Errorf("tmpfs file missing from the summary: %+v", tr.summary.Files)
	}
	text := traceText(t, "--", "env", "IOPATH_FAULT_HELPER=1", os.Args[0], "-test.run=^TestFaultHelperProcess$", "--", "read", f, "4096",
		filepath.Join(t.TempDir(), "r"))
	if !strings.Contains(text, "memory only") {
		t.Errorf("the text summary does not say the tmpfs mapping has no block IO:\n%s", text)
	}
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		t.Fatal(err)
	}
	out.Close()
}

// traceText runs `iopath trace ARGS` (text output) and returns stdout.
func traceText(t *testing.T, args ...string) string {
	t.Helper()
	cmd := iopathCmd(os.TempDir(), append([]string{"trace"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("iopath trace: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return string(out)
}

// Must-be-true 3: a 1-byte store through a shared mapping into a clean
// cached page, then msync(MS_SYNC): the fault dirtied the page's folio,
// and msync wrote it (persisted inside the msync call, reason fsync).
func TestFaultMappedWriteMsync(t *testing.T) {
	needFaults(t, "msync")
	f := coldFile(t, diskDir(t), 1<<20)
	cacheNoReadahead(t, f)
	ino := inoOf(t, f)
	tr, kernelMajor := traceFaults(t, false, "write", f, 8192+5)
	var wf *record.Fault
	for i, fr := range tr.faultsOn(ino) {
		if fr.Write && fr.DirtiedPages > 0 {
			if wf != nil {
				t.Errorf("two faults dirtied pages: %+v, %+v", *wf, fr)
			}
			wf = &tr.faultsOn(ino)[i]
		}
	}
	if wf == nil {
		t.Fatalf("no write fault dirtied a page: faults %+v; calls on the file %+v; pids %+v, files %+v; diagnostics %v, truncations %v, evictions %v",
			tr.faultsOn(ino), tr.forIno(ino), tr.summary.Pids, tr.summary.Files, tr.summary.Diagnostics, tr.summary.Truncations, tr.summary.MapEvictions)
	}
	// No IO; major only as the kernel counted it: 5.10 may redo the fault
	// (VM_FAULT_RETRY, seen there with the page cached and no readahead
	// flag) and counts a redone fault as major (FAULT_FLAG_TRIED).
	if wf.Index != 2 || wf.Major != (kernelMajor == 1) || (wf.Major && !wf.Retried) || len(wf.Bios) != 0 || kernelMajor > 1 {
		t.Errorf("write fault %+v; the kernel counted %d major faults", *wf, kernelMajor)
	}
	var ms *record.Syscall
	for i, c := range tr.forIno(ino) {
		if c.Syscall == "msync" {
			ms = &tr.forIno(ino)[i]
		}
	}
	if ms == nil {
		t.Fatalf("no msync record: %+v", tr.calls)
	}
	var pages uint32
	for _, p := range tr.persisted {
		if p.OpID != wf.OpID {
			continue
		}
		pages += p.Pages
		if p.ByOpID != ms.OpID || p.Reason != record.Reason(ms.Syscall) || p.Outcome != record.OutcomeWritten ||
			p.PersistedNs < ms.TimeNs || p.PersistedNs > ms.TimeNs+ms.DurationNs {
			t.Errorf("persisted %+v, msync %+v", p, *ms)
		}
		if p.Fault == nil || p.Fault.Index != wf.Index || p.Fault.Address != wf.Address {
			t.Errorf("persisted names fault %+v, want the write fault at %#x (page %d)", p.Fault, wf.Address, wf.Index)
		}
	}
	if pages != wf.DirtiedPages {
		t.Errorf("persisted %d pages of the fault's %d dirtied", pages, wf.DirtiedPages)
	}
	t.Logf("mapped 1-byte store: fault dirtied %d pages (index %+v); msync wrote them in %d bios", wf.DirtiedPages, wf.DirtiedRanges, len(ms.Bios))
}

// cacheNoReadahead reads file into the page cache (clean) with
// POSIX_FADV_RANDOM, so no page carries PG_readahead: a fault on such a
// page starts async readahead, which on 5.10 drops the mmap lock and
// retries the fault, and the kernel counts a retried fault as major
// (mm_account_fault: FAULT_FLAG_TRIED).
func cacheNoReadahead(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, f); err != nil {
		t.Fatal(err)
	}
}

// The fault hooks' mechanisms: the start on handle_mm_fault by fentry on
// every VM kernel (5.10 too: the VMA is an argument, no bpf_find_vma
// needed), by page_fault_user's tp_btf here (no kprobes, fentry refused);
// the perf page-fault events everywhere (x86); filemap_fault by fexit on
// the VM kernels, by its tracepoint here. msync and madvise find their
// file with bpf_find_vma (5.17+) or by fexit on find_vma (5.10).
func TestFaultHooksPerKernel(t *testing.T) {
	needRoot(t)
	r := doctorJSON(t)
	m := mechanisms(r)
	wantEntry, wantFilemap := tracer.TPBTF, tracer.TPBTF
	if os.Getenv("IOPATH_VM_KERNEL") != "" {
		wantEntry, wantFilemap = tracer.Fentry, tracer.Fentry
	} else if kprobesHere() {
		wantEntry = tracer.Kprobe
	}
	if preemptsPrograms(r) {
		// page_fault_user's program runs with interrupts off, so no
		// preempted thread holds it: first there (tracer/fault_hooks.go).
		wantEntry = tracer.TPBTF
	}
	if m["fault_entry"] != wantEntry || m["fault_end"] != tracer.PerfEvent {
		t.Errorf("fault_entry %s, fault_end %s; want %s, %s", m["fault_entry"], m["fault_end"], wantEntry, tracer.PerfEvent)
	}
	if m["filemap_fault"] != wantFilemap {
		t.Errorf("filemap_fault uses %s, want %s", m["filemap_fault"], wantFilemap)
	}
	// msync/madvise find their file with bpf_find_vma (raw_syscalls'
	// tp_btf), else at find_vma's return by fexit (5.10).
	findVma := features.HaveProgramHelper(ebpf.Kprobe, asm.FnFindVma) == nil
	wantCalls := tracer.TPBTF
	if !findVma {
		wantCalls = tracer.Fentry
	}
	for _, h := range []string{"msync", "advice"} {
		if m[h] != wantCalls {
			t.Errorf("%s uses %s with bpf_find_vma %v, want %s", h, m[h], findVma, wantCalls)
		}
	}
	t.Logf("fault hooks: entry %s, end %s, filemap_fault %s, fault_around %s, msync %s", m["fault_entry"], m["fault_end"], m["filemap_fault"], m["fault_around"], m["msync"])
}

// Must-be-true (issue 14, madvise/fadvise): MADV_WILLNEED, POSIX_FADV_WILLNEED
// and readahead(2) read ahead themselves: the pages and bios are the call's.
func TestFaultAdviceCallsOwnTheirIO(t *testing.T) {
	needFaults(t, "advice")
	dir := diskDir(t)
	for _, c := range []struct{ mode, syscall, advice string }{
		{"willneed", "madvise", "willneed"}, {"fadvise", "fadvise64", "willneed"}, {"readahead", "readahead", ""},
	} {
		t.Run(c.mode, func(t *testing.T) {
			f := coldFile(t, dir, 1<<20)
			ino := inoOf(t, f)
			tr, _ := traceFaults(t, false, c.mode, f, 1<<20)
			var rec *record.Syscall
			for i, r := range tr.forIno(ino) {
				if r.Syscall == c.syscall {
					rec = &tr.forIno(ino)[i]
				}
			}
			if rec == nil {
				t.Fatalf("no %s record: %+v", c.syscall, tr.forIno(ino))
			}
			if rec.Advice != c.advice || rec.Cache.PagesAdded == 0 || sumBioBytes([]record.Syscall{*rec}) != rec.Cache.PagesAdded*4096 {
				t.Errorf("%s record: advice %q, %d pages added, bios %+v", c.syscall, rec.Advice, rec.Cache.PagesAdded, rec.Bios)
			}
			if n := tr.summary.UnattributedBios - tr.summary.UnattributedCauses["exec"].Bios; n != 0 { // a cold env's or helper's execve: exec
				t.Errorf("unattributed bios: %d not of exec (by cause: %+v)", n, tr.summary.UnattributedCauses)
			}
			t.Logf("%s: %d pages added, %d bios", c.syscall, rec.Cache.PagesAdded, len(rec.Bios))
		})
	}
}

var (
	faultMechsOnce sync.Once
	faultMechs     map[string]tracer.Mechanism // nil: doctor failed
)

// needFaults skips a test of fault records where doctor says the kernel
// cannot give them: fault_entry or fault_end (or another of hooks) none.
func needFaults(t *testing.T, hooks ...string) {
	t.Helper()
	needRoot(t)
	faultMechsOnce.Do(func() { faultMechs = mechanisms(doctorJSON(t)) })
	if faultMechs == nil {
		t.Fatal("doctor failed in an earlier test")
	}
	for _, h := range append([]string{"fault_entry", "fault_end"}, hooks...) {
		switch faultMechs[h] {
		case "":
			t.Fatalf("doctor has no hook %s", h)
		case tracer.None:
			t.Skipf("doctor: %s none on this kernel (see testdata/doctor-*.txt for why)", h)
		}
	}
}
