package tracer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// Two threads with the same tid (two dd processes, the second given the
// first's pid through ns_last_pid) never share an op_id: each thread's
// sequence starts at a base of its own (bpf/op.h op_slot). With every
// sequence starting at 1, the second dd's calls repeated the first's ids
// (the engine keys pending calls by op_id).
func TestOpIDsAfterTidReuse(t *testing.T) {
	testutil.NeedRoot(t)
	const lastPid = "/proc/sys/kernel/ns_last_pid"
	if _, err := os.Stat(lastPid); err != nil {
		t.Skipf("%s: %v (a kernel without CONFIG_CHECKPOINT_RESTORE)", lastPid, err)
	}
	file := filepath.Join(testutil.DiskDir(t), "opid")
	if err := os.WriteFile(file, make([]byte, 8<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	// The condition is both dd processes traced: where the kernel skipped
	// a run that decides it (7.2: sched_process_exec, whose run puts a
	// --comm process in the traced set, has no spare), missed_runs says so
	// and the pair is run again.
	for attempt := 1; ; attempt++ {
		ids, pid, missed := opIDsOfReusedPid(t, file, lastPid)
		records, repeated := 0, 0
		for _, n := range ids {
			records += n
			if n > 1 {
				repeated++
			}
		}
		t.Logf("attempt %d: pid %d: %d read records of %s, %d op_ids, %d of them repeated; missed runs %v", attempt, pid, records, file, len(ids), repeated, missed)
		if repeated != 0 {
			t.Fatalf("%d op_ids repeated by the thread that reused tid %d, want 0", repeated, pid)
		}
		if records == 16 {
			return
		}
		if len(missed) == 0 || attempt == 3 {
			t.Fatalf("%d read records of pid %d, want 16 (8 per dd); missed runs %v", records, pid, missed)
		}
	}
}

// opIDsOfReusedPid traces two dd processes with the same pid (the second
// given the first's through ns_last_pid) reading file, and returns how many
// read records of file have each op_id, the pid, and the runs the kernel
// skipped.
func opIDsOfReusedPid(t *testing.T, file, lastPid string) (map[uint64]int, int, map[string]uint64) {
	t.Helper()
	var mu sync.Mutex
	ids := map[uint64]int{}
	var pid int
	tr, err := New(Options{Comm: "dd", All: true}, func(r any) {
		if c, ok := r.(*record.Syscall); ok && c.Path == file && c.Syscall == "read" {
			mu.Lock()
			if int(c.Pid) == pid {
				ids[c.OpID]++
			}
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- tr.Run(ctx, 2*time.Second) }()
	dd := func() *exec.Cmd { return exec.Command("dd", "if="+file, "of=/dev/null", "bs=1k", "count=8") }
	first := dd()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	pid = first.Process.Pid
	mu.Unlock()
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	// Other processes fork too: retried until the second dd gets the pid.
	reused := false
	for try := 0; try < 100 && !reused; try++ {
		if err := os.WriteFile(lastPid, []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
			t.Fatal(err)
		}
		second := dd()
		if err := second.Start(); err != nil {
			t.Fatal(err)
		}
		reused = second.Process.Pid == pid
		if err := second.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if !reused {
		t.Fatalf("no second dd got pid %d in 100 forks (others took it)", pid)
	}
	mu.Lock()
	defer mu.Unlock()
	return ids, pid, tr.MissedRuns()
}
