package session

import (
	"io"
	"testing"

	"github.com/iopath/iopath/workloads"
)

// The tracer lays out a workload's file with the run's engine options left
// out (workloads.Spec.ForLayout): an mmap spec with --madvise or --msync
// (valid for the run) was refused there once the engine became psync, and
// a libaio spec's queue depth and jobs were set up in the tracer's process.
func TestPrepareWorkFileLayoutOnly(t *testing.T) {
	for _, spec := range []workloads.Spec{
		{Kind: workloads.KindSeqRead, Engine: workloads.EngineMmap, Madvise: workloads.MadviseRandom},
		{Kind: workloads.KindSeqWrite, Engine: workloads.EngineMmap, MsyncEvery: 10, Overwrite: true},
		{Kind: workloads.KindRandRead, Engine: workloads.EngineLibaio, IODepth: 64, NumJobs: 4},
	} {
		spec.FileSize, spec.Dir = 1<<20, t.TempDir()
		if err := spec.Validate(); err != nil {
			t.Fatalf("%+v: not a valid run: %v", spec, err)
		}
		wf, err := PrepareWorkFile(spec, io.Discard)
		if err != nil {
			t.Errorf("%s --engine %s: %v", spec.Kind, spec.Engine, err)
			continue
		}
		wf.Cleanup(io.Discard)
	}
	l := workloads.Spec{Engine: workloads.EngineIOUring, IODepth: 64, NumJobs: 16, Thread: true, SQPoll: true, UringFixed: true, UringLink: 4}.ForLayout()
	if l.IODepth != 0 || l.NumJobs != 0 || l.Thread || l.SQPoll || l.UringFixed || l.UringLink != 0 || l.Engine != workloads.EngineIOUring {
		t.Errorf("ForLayout kept the run's options: %+v", l)
	}
}
