package main

// A page fault that ends at a signal's delivery, not at its perf event
// (bpf/fault.c, fault_signaled; docs/hooks.md "Page faults").

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// signalledStore is the fault helper's "signal" mode: on one locked thread
// it writes "PID TID" to result.ready, waits for SIGUSR2, stores one byte
// at off of the shared mapping m, waits until its SIGUSR1 handler has run,
// and msyncs. The test freezes the filesystem before the SIGUSR2, so the
// store's fault sleeps in page_mkwrite, and sends the SIGUSR1 to the
// thread while it sleeps.
func signalledStore(m []byte, off int64, result string) error {
	runtime.LockOSThread()
	usr1, usr2 := make(chan os.Signal, 1), make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	signal.Notify(usr2, syscall.SIGUSR2)
	wait := func(c chan os.Signal, what string) error {
		select {
		case <-c:
			return nil
		case <-time.After(5 * time.Minute):
			return fmt.Errorf("no %s", what)
		}
	}
	if err := os.WriteFile(result+".ready", fmt.Appendf(nil, "%d %d", os.Getpid(), unix.Gettid()), 0o644); err != nil {
		return err
	}
	if err := wait(usr2, "SIGUSR2 (the go)"); err != nil {
		return err
	}
	m[off] = 1
	if err := wait(usr1, "SIGUSR1 during the store"); err != nil {
		return err
	}
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		return err
	}
	return os.WriteFile(result, []byte("stored"), 0o644)
}

// Before Linux 5.19 a shared write fault returns VM_FAULT_RETRY after
// page_mkwrite dirtied the page (fault_dirty_shared_page, 5.6-5.18; 5.19+
// returns VM_FAULT_COMPLETED, which is accounted); with a signal pending
// then, the kernel neither redoes nor accounts the fault (no perf
// page-fault event) and the thread takes the signal; the store, run again,
// faults no more. Made to happen: the store's fault sleeps in
// ext4_page_mkwrite on a frozen filesystem (state D), the test sends
// SIGUSR1 to the thread and thaws. The fault must be a record with its
// dirtied pages, ended by SIGUSR1 (5.10: the signal's delivery is its only
// end) or at its perf event (5.19+), and msync's write of the pages must
// name it. Before signal_deliver was a fault hook the 5.10 fault had no
// end, so no record (seen once with Go's SIGURG: TestFaultMappedWriteMsync,
// faults_unended 1).
func TestFaultSignalDuringWrite(t *testing.T) {
	needFaults(t, "fault_signal")
	dir := signalFS(t)
	f := filepath.Join(dir, "signal.dat")
	if err := os.WriteFile(f, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	ino := inoOf(t, f)
	result := filepath.Join(t.TempDir(), "result")
	const off = 8192 + 5
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := signalDuringFault(dir, result+".ready"); err != nil {
			t.Error(err)
		}
	}()
	tr := traceCmd(t, "--", "env", "IOPATH_FAULT_HELPER=1", os.Args[0], "-test.run=^TestFaultHelperProcess$", "--",
		"signal", f, strconv.Itoa(off), result)
	<-done
	if tr.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", tr.code, tr.stderr)
	}
	var wf *record.Fault
	for i, fr := range tr.faultsOn(ino) {
		if fr.Write && fr.Index == off/4096 {
			wf = &tr.faultsOn(ino)[i]
		}
	}
	if wf == nil {
		t.Fatalf("no write fault on page %d: faults %+v; diagnostics %v", off/4096, tr.faultsOn(ino), tr.summary.Diagnostics)
	}
	if _, err := os.Stat(result); err != nil {
		t.Fatalf("the helper did not store: %v; stderr:\n%s", err, tr.stderr)
	}
	if (wf.Signal != "" && wf.Signal != "SIGUSR1") || wf.DirtiedPages == 0 || wf.Major {
		t.Errorf("fault %+v: want ended at its perf event or by SIGUSR1, pages dirtied, not major", *wf)
	}
	if n := tr.summary.Diagnostics["faults_unended"]; n != 0 {
		t.Errorf("faults_unended %d", n)
	}
	var msync *record.Syscall
	for i, c := range tr.forIno(ino) {
		if c.Syscall == "msync" {
			msync = &tr.forIno(ino)[i]
		}
	}
	var persisted uint32
	for _, p := range tr.persisted {
		if p.OpID == wf.OpID && msync != nil && p.ByOpID == msync.OpID {
			persisted += p.Pages
		}
	}
	if persisted != wf.DirtiedPages {
		t.Errorf("msync %+v persisted %d pages of the fault, want its %d (persisted %+v)", msync, persisted, wf.DirtiedPages, tr.persisted)
	}
	end := "at its perf event"
	if wf.Signal != "" {
		end = "by " + wf.Signal
	}
	t.Logf("the fault ended %s, dirtied %d pages, persisted by msync", end, wf.DirtiedPages)
}

// loaded keeps loadPastEOF's load from being optimized away.
var loaded byte

// loadPastEOF is the fault helper's "sigbus" mode: it maps the file (size
// bytes, fd) with off+1 bytes, loads the byte at off, past the file's last
// page, and recovers from the SIGBUS the kernel raises (a Go panic with
// debug.SetPanicOnFault). result gets "sigbus" when it did.
func loadPastEOF(fd int, size, off int64, result string) (err error) {
	m, err := unix.Mmap(fd, 0, int(off+1), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			err = os.WriteFile(result, []byte("sigbus"), 0o644)
		}
	}()
	if off < (size+4095)&^4095 {
		return fmt.Errorf("offset %d is within the file's pages (size %d)", off, size)
	}
	loaded = m[off]
	return fmt.Errorf("no SIGBUS at offset %d of a %d-byte file", off, size)
}

// A load from a mapping past the end of its file fails: filemap_fault
// returns VM_FAULT_SIGBUS, the kernel accounts nothing (no perf event) and
// raises SIGBUS. The fault must be a record ended by SIGBUS, with no page
// hit, on every kernel.
func TestFaultSigbusPastEOF(t *testing.T) {
	needFaults(t, "fault_signal")
	f := filepath.Join(diskDir(t), "short.dat")
	if err := os.WriteFile(f, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	ino := inoOf(t, f)
	result := filepath.Join(t.TempDir(), "result")
	const off = 3*4096 + 7
	tr := traceCmd(t, "--", "env", "IOPATH_FAULT_HELPER=1", os.Args[0], "-test.run=^TestFaultHelperProcess$", "--",
		"sigbus", f, strconv.Itoa(off), result)
	if b, err := os.ReadFile(result); err != nil || string(b) != "sigbus" {
		t.Fatalf("the helper saw no SIGBUS (%q, %v); exit %d, stderr:\n%s", b, err, tr.code, tr.stderr)
	}
	var got []record.Fault
	for _, fr := range tr.faultsOn(ino) {
		if fr.Index == off/4096 {
			got = append(got, fr)
		}
	}
	if len(got) != 1 || got[0].Signal != "SIGBUS" || !got[0].Failed() || got[0].Cache.PagesHit != 0 || got[0].Write || got[0].Major {
		t.Fatalf("want one failed read fault on page %d ended by SIGBUS, got %+v; diagnostics %v", off/4096, got, tr.summary.Diagnostics)
	}
	if n := tr.summary.Diagnostics["faults_unended"]; n != 0 {
		t.Errorf("faults_unended %d", n)
	}
}

// signalFS returns a directory on a filesystem the test may freeze: its
// own loop ext4, or in a VM without mkfs.ext4 the VM's test disk (nothing
// else writes there while the test runs; TMPDIR, where the helper's result
// goes, is on it too, so the helper writes only before the freeze and
// after the thaw).
func signalFS(t *testing.T) string {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil && os.Getenv("IOPATH_VM") != "" {
		return diskDir(t)
	}
	return testutil.LoopExt4(t, 64<<20).Dir
}

// signalDuringFault waits for the helper's ready file ("PID TID"),
// freezes the filesystem at dir, tells the helper to store (SIGUSR2),
// waits until its thread sleeps uninterruptibly (the fault in
// page_mkwrite), sends SIGUSR1 to that thread and thaws. Conditions, not
// times: each wait has only a bound for a broken run.
func signalDuringFault(dir, ready string) error {
	deadline := time.Now().Add(readyWait())
	var pid, tid int
	for {
		b, err := os.ReadFile(ready)
		if err == nil {
			if _, err := fmt.Sscan(string(b), &pid, &tid); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s never written", ready)
		}
		time.Sleep(10 * time.Millisecond)
	}
	thaw, err := testutil.FreezeFS(dir)
	if err != nil {
		unix.Kill(pid, unix.SIGUSR2)
		unix.Tgkill(pid, tid, unix.SIGUSR1)
		return err
	}
	defer thaw()
	if err := unix.Kill(pid, unix.SIGUSR2); err != nil {
		return err
	}
	stat := fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)
	for state := ""; state != "D"; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return err
		}
		// "TID (COMM) STATE ...": the state follows the last ')'.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 0 {
				state = f[0]
			}
		}
		if time.Now().After(deadline) {
			unix.Tgkill(pid, tid, unix.SIGUSR1)
			return fmt.Errorf("the helper's thread %d never slept in the fault (state %s)", tid, state)
		}
	}
	if err := unix.Tgkill(pid, tid, unix.SIGUSR1); err != nil {
		return err
	}
	return thaw()
}
