package main

// -p of a thread id (issue 10, breaker's item 3): the thread's process is
// traced and named.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// -p TID of a thread whose calls are all cache hits, still alive at the
// end: its hits are in the kernel's per-thread state, which held no comm
// (it is set only when a call is streamed), so the summary's COMM was
// empty. Now it is the thread's, from /proc.
func TestTracePidOfThreadNamed(t *testing.T) {
	needRoot(t)
	needPython(t)
	f := filepath.Join(t.TempDir(), "cached")
	if err := os.WriteFile(f, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second thread warms the file, prints its tid, then on a line of
	// stdin makes 200 1-byte preads (hits), prints "done" and waits for
	// stdin to close; the main thread only joins it.
	prog := fmt.Sprintf(`import os, sys, threading
fd = os.open(%q, os.O_RDONLY)
def work():
    os.pread(fd, 4096, 0)
    print(threading.get_native_id(), flush=True)
    sys.stdin.readline()
    for i in range(200):
        os.pread(fd, 1, i)
    print("done", flush=True)
    sys.stdin.readline()
t = threading.Thread(target=work); t.start(); t.join()
`, f)
	py := exec.Command("python3", "-c", prog)
	in, err := py.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := py.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); py.Process.Kill(); py.Wait() })
	lines := bufio.NewScanner(outp)
	if !lines.Scan() {
		t.Fatal("python3 printed no thread id")
	}
	tid, err := strconv.Atoi(strings.TrimSpace(lines.Text()))
	if err != nil || tid == py.Process.Pid {
		t.Fatalf("thread id %q (pid %d): %v", lines.Text(), py.Process.Pid, err)
	}
	cmd, out, errb := startTrace(t, os.TempDir(), "trace", "--json", "-p", strconv.Itoa(tid))
	fmt.Fprintln(in)
	if !lines.Scan() || lines.Text() != "done" {
		t.Fatalf("python3: %q", lines.Text())
	}
	tr := stopTrace(t, cmd, out, errb)
	found := false
	for _, p := range tr.summary.Pids {
		if p.Pid != uint32(py.Process.Pid) {
			continue
		}
		found = true
		if p.Comm != "python3" || p.ReadCalls != 200 {
			t.Errorf("pid %d (-p %d): comm %q, %d read calls; want python3, 200", p.Pid, tid, p.Comm, p.ReadCalls)
		}
	}
	if !found {
		t.Errorf("-p %d: no summary row for its process %d: %+v", tid, py.Process.Pid, tr.summary.Pids)
	}
}
