package workloads

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The clock benchmarks justify the loop's clock: time.Since on a monotonic
// start reads the vDSO clock once; unix.ClockGettime is a real system call.

func BenchmarkClockSince(b *testing.B) {
	start := time.Now()
	var d time.Duration
	for b.Loop() {
		d += time.Since(start)
	}
	_ = d
}

func BenchmarkClockGettime(b *testing.B) {
	var ts unix.Timespec
	for b.Loop() {
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	}
}

// benchRun measures one op of a workload per iteration: ns/op is the
// loop's full cost per op, comparable with fio's per-IO latency.
func benchRun(b *testing.B, s Spec) {
	s.Dir = b.TempDir()
	p, err := Prepare(s)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Cleanup()
	p.Spec.Count = int64(b.N)
	b.ResetTimer()
	if _, err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkRead1BytePsync(b *testing.B) { benchRun(b, Spec{Kind: KindRead1Byte}) }
func BenchmarkRead1ByteStdio(b *testing.B) {
	benchRun(b, Spec{Kind: KindRead1Byte, Engine: EngineStdio})
}
func BenchmarkRandRead4kPsync(b *testing.B) {
	benchRun(b, Spec{Kind: KindRandRead, FileSize: 64 << 20})
}
func BenchmarkRandRead4kMmap(b *testing.B) {
	benchRun(b, Spec{Kind: KindRandRead, Engine: EngineMmap, FileSize: 64 << 20})
}
