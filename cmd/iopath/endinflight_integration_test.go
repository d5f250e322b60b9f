package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testutil"
)

// Requests truly in flight when a trace ends are not taken for completions
// no BPF program saw (tracer/engine/endunseen.go). 16 O_DIRECT writes to a
// loop device whose backing file is on a frozen filesystem stay in flight:
// the loop worker waits for the thaw. iopath, stopped while they wait,
// still holds the 16 requests after its settle, reads the loop device's
// own count of requests in flight (16, /sys/dev/block/7:N/inflight) and
// completes none of them.
func TestTraceEndInFlightKept(t *testing.T) {
	needRoot(t)
	outer := testutil.LoopExt4(t, 64<<20)
	img := filepath.Join(outer.Dir, "inner.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	dev, major, minor := testutil.LoopDev(t, img)
	if out, err := exec.Command("dd", "--version").CombinedOutput(); err != nil {
		t.Skipf("dd: %v %s", err, out) // and its binary is cached: no disk IO of the traced tree but the writes
	}
	// sh waits for a line, then starts the 16 writes at once.
	sh := exec.Command("sh", "-c", fmt.Sprintf(`read x; for i in $(seq 0 15); do
dd if=/dev/zero of=%s bs=4096 count=1 seek=$i oflag=direct conv=notrunc status=none & done; wait`, dev))
	stdin, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); sh.Wait() }) // after the thaw (cleanups run last-in first-out)
	thaw := testutil.Freeze(t, outer.Dir)

	ready := filepath.Join(t.TempDir(), "ready")
	trace := iopathCmd(os.TempDir(), "trace", "--json", "--settle", "1s", "-p", strconv.Itoa(sh.Process.Pid), "--ready-file", ready)
	var out, errb strings.Builder
	trace.Stdout, trace.Stderr = &out, &errb
	if err := trace.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trace.Process.Kill(); trace.Wait() })
	waitFile(t, ready)
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	inflight := fmt.Sprintf("/sys/dev/block/%d:%d/inflight", major, minor)
	for deadline := time.Now().Add(readyWait()); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(inflight)
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b)); len(f) == 2 && f[0] == "0" && f[1] == "16" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q, never 16 writes in flight", inflight, b)
		}
	}
	trace.Process.Signal(os.Interrupt)
	trace.Wait()
	thaw()
	tr := parseRecords(t, []byte(out.String()))
	if tr.summary == nil {
		t.Fatalf("no summary; stderr:\n%s", errb.String())
	}
	d := tr.summary.Diagnostics
	t.Logf("requests still in flight at the end %d, completed unseen at the end %d; incomplete bios %d %v",
		d["requests_in_flight_at_end"], d["requests_unseen_at_end"], tr.summary.IncompleteBios, tr.summary.IncompleteCauses)
	if d["requests_unseen_at_end"] != 0 || d["requests_in_flight_at_end"] != 16 {
		t.Errorf("diagnostics %v: want the 16 writes held in flight at the end, none completed unseen", d)
	}
	if tr.summary.CompletionsUnseen != 0 {
		t.Errorf("%d bios completed unseen", tr.summary.CompletionsUnseen)
	}
}
