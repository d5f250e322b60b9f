package workloads

import (
	"context"
	"testing"
)

// Jobs that end before they are ready while the run is being interrupted
// (SIGINT/SIGTERM came as they started: they got it too) did not fail: the
// run is interrupted, with a report of nothing done. Here the job processes
// are this test binary, which has no TestWorkloadHelperProcess and so exits
// before it is ready, as a job killed by the forwarded signal does.
func TestProcessesInterruptedBeforeStart(t *testing.T) {
	t.Setenv("IOPATH_TEST_HELPER", "1")
	p := prepare(t, Spec{Kind: KindRandRead, FileSize: 1 << 20, NumJobs: 3})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := p.Run(ctx)
	if err != nil {
		t.Fatalf("Run with the context cancelled as the jobs start: %v, want an interrupted report", err)
	}
	if !r.Interrupted || r.Ops != 0 || r.NumJobs != 3 {
		t.Errorf("report interrupted %v, %d ops, %d jobs; want interrupted, 0 ops, 3 jobs", r.Interrupted, r.Ops, r.NumJobs)
	}
	// Not interrupted: the same early exit is a failed job.
	if _, err := p.Run(context.Background()); err == nil {
		t.Error("Run with jobs that exit before they are ready: no error")
	}
}
