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
	var mu sync.Mutex
	ids := map[uint64]int{} // op_id → records with it, of the reused pid's reads of file
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
	records, repeated := 0, 0
	for _, n := range ids {
		records += n
		if n > 1 {
			repeated++
		}
	}
	t.Logf("pid %d: %d read records of %s, %d op_ids, %d of them repeated", pid, records, file, len(ids), repeated)
	if records != 16 {
		t.Errorf("%d read records of pid %d, want 16 (8 per dd)", records, pid)
	}
	if repeated != 0 {
		t.Errorf("%d op_ids repeated by the thread that reused tid %d, want 0", repeated, pid)
	}
}
