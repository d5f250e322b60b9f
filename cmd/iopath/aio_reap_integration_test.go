package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// aioReapRequests is how many O_DIRECT reads TestTraceAioReaperBeforeTrace's
// helper submits, one io_submit each, reaped by one io_getevents.
const aioReapRequests = 16

// A libaio reaper that entered io_getevents before the trace began still
// has its reap reported: every request gets its result and reap time. The
// reaping thread has no per-thread state then (its entry was not seen);
// the reap's exit gives it one. With the spare programs on (IOPATH_SPARES=
// now), raw_sys_exit's gate for taking turns wanted that state first and
// dropped the reap: 16 of 16 requests "result":"unavailable" (a reviewer,
// 2026-12-07). Both ways are checked.
func TestTraceAioReaperBeforeTrace(t *testing.T) {
	needRoot(t)
	for _, spares := range []string{"", "now"} {
		t.Run("spares="+spares, func(t *testing.T) {
			dir := diskDir(t)
			file := filepath.Join(dir, "data")
			if err := os.WriteFile(file, make([]byte, aioReapRequests*4096), 0o644); err != nil {
				t.Fatal(err)
			}
			ready := filepath.Join(dir, "ready")
			child := exec.Command(os.Args[0], "-test.run=^TestAioReaperHelper$")
			child.Env = append(os.Environ(), "IOPATH_TEST_AIO_REAPER="+file+" "+ready)
			var childOut strings.Builder
			child.Stdout, child.Stderr = &childOut, &childOut
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer child.Process.Kill()
			// The reaper is inside io_getevents (the kernel says so) before
			// the trace starts.
			waitInSyscall(t, child.Process.Pid, unix.SYS_IO_GETEVENTS)
			env := []string{"IOPATH_SPARES=" + spares}
			stdout, stderr, code, _ := runWith(t, nil, env, dir, "trace", "--json", "-p", strconv.Itoa(child.Process.Pid), "--ready-file", ready)
			child.Wait()
			if code != 0 {
				t.Fatalf("iopath exit %d: %s\nhelper: %s", code, stderr, childOut.String())
			}
			tr := parseRecords(t, []byte(stdout))
			done := 0
			for _, r := range tr.requests {
				if r.Path == file && r.Result.Known && r.Result.Bytes == 4096 && r.ReapNs != 0 {
					done++
				}
			}
			if done != aioReapRequests {
				t.Errorf("%d of %d requests with their result and reap time (%d request records); helper: %s",
					done, aioReapRequests, len(tr.requests), childOut.String())
			}
		})
	}
}

// waitInSyscall waits until a thread of pid is blocked in system call nr
// (/proc/PID/task/TID/syscall).
func waitInSyscall(t *testing.T, pid int, nr uintptr) {
	t.Helper()
	want := strconv.Itoa(int(nr)) + " "
	for deadline := time.Now().Add(readyWait()); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
		for _, p := range tasks {
			if b, err := os.ReadFile(p); err == nil && strings.HasPrefix(string(b), want) {
				return
			}
		}
	}
	t.Fatalf("no thread of %d entered system call %d", pid, nr)
}

// TestAioReaperHelper is TestTraceAioReaperBeforeTrace's traced process
// (IOPATH_TEST_AIO_REAPER="FILE READY"): a thread waits in io_getevents for
// all the requests; once READY exists another submits them, one io_submit
// each, O_DIRECT 4 KiB reads of FILE.
func TestAioReaperHelper(t *testing.T) {
	args := strings.Fields(os.Getenv("IOPATH_TEST_AIO_REAPER"))
	if len(args) != 2 {
		t.Skip("helper process")
	}
	fd, err := unix.Open(args[0], unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ctx uintptr
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, aioReapRequests, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		t.Fatalf("io_setup: %v", e)
	}
	type ioEvent struct {
		data, obj uint64
		res, res2 int64
	}
	reaped := make(chan string, 1)
	go func() {
		runtime.LockOSThread()
		events := make([]ioEvent, aioReapRequests)
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, ctx, aioReapRequests, aioReapRequests, uintptr(unsafe.Pointer(&events[0])), 0, 0)
		reaped <- fmt.Sprintf("reaped %d (%v)", n, e)
	}()
	for {
		if _, err := os.Stat(args[1]); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// struct iocb (64 bytes, amd64/arm64 little-endian layout).
	type iocb struct {
		data         uint64
		key, rwFlags uint32
		opcode       uint16
		reqprio      int16
		fildes       uint32
		buf, nbytes  uint64
		offset       int64
		reserved2    uint64
		flags, resfd uint32
	}
	buf, err := unix.Mmap(-1, 0, aioReapRequests*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	cbs := make([]iocb, aioReapRequests)
	for i := range cbs {
		cbs[i] = iocb{data: uint64(i), fildes: uint32(fd), buf: uint64(uintptr(unsafe.Pointer(&buf[i*4096]))), nbytes: 4096, offset: int64(i) * 4096}
		p := uintptr(unsafe.Pointer(&cbs[i]))
		if n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, ctx, 1, uintptr(unsafe.Pointer(&p))); e != 0 || n != 1 {
			t.Fatalf("io_submit %d: %d %v", i, n, e)
		}
	}
	fmt.Println(<-reaped)
}
