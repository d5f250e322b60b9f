package workloads

import (
	"context"
	"strings"
	"testing"
)

// io_uring O_DIRECT reads run by io threads (IOSQE_ASYNC: io-wq workers;
// SQPOLL: the iou-sqp thread): the job's own thread reads nothing from
// storage, so kernel_io must be the process's for the kernel cross-check
// to see the run's 100 reads; the note names the threads that did them.
func TestUringKernelIOThreads(t *testing.T) {
	dir := t.TempDir()
	if n := fsName(dir); n == "tmpfs" || n == "ramfs" {
		t.Skipf("%s is on %s; set TMPDIR to a disk filesystem to test O_DIRECT", dir, n)
	}
	for _, c := range []struct {
		name          string
		async, sqpoll bool
		who           string
	}{{"async", true, false, "io-wq worker threads (iou-wrk-*)"}, {"sqpoll", false, true, "the SQPOLL thread (iou-sqp-*)"}} {
		t.Run(c.name, func(t *testing.T) {
			s := Spec{Kind: KindRandRead, Direct: true, FileSize: 1 << 20, Count: 100, Dir: dir, Engine: EngineIOUring, IODepth: 8,
				UringAsync: c.async, SQPoll: c.sqpoll}
			p, err := Prepare(s)
			if err != nil {
				t.Skipf("io_uring refused here: %v", err)
			}
			defer p.Cleanup()
			r, err := p.Run(context.Background())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if r.Kernel == nil || r.Kernel.ReadBytes < 100*4096 || r.KernelScope != processIO {
				t.Errorf("kernel_io %+v from %q, want read_bytes ≥ %d from %s", r.Kernel, r.KernelScope, 100*4096, processIO)
			}
			note := strings.Join(r.Notes, "\n")
			if !strings.Contains(note, c.who) || !strings.Contains(note, "are in them") {
				t.Errorf("notes %q lack %q", note, c.who)
			}
		})
	}
	// Thread jobs share the process: each keeps its thread's count.
	if p := procIOPath(&Spec{Engine: EngineIOUring, Thread: true, NumJobs: 2}); p != threadIO {
		t.Errorf("thread jobs: %s", p)
	}
	if p := procIOPath(&Spec{Engine: EnginePsync}); p != threadIO {
		t.Errorf("psync: %s", p)
	}
}
