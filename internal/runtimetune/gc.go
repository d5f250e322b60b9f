// Package runtimetune holds iopath's Go runtime settings: the GC headroom
// that keeps the collector off the per-record path, and the development
// CPU profile (docs/benchmarks.md).
package runtimetune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// gcHeadroom is the garbage iopath lets its heap gather between two
// collections, at least: with a few MiB of live heap (the usual trace),
// GOGC=100 collected every few MiB of records, several times a second at
// ten thousand records a second, and the collector's marking and sweeping
// took ~15 % of iopath's CPU (perf, 4 KiB cold reads). From 32 MiB of live
// heap on (a million pending dirty pages) GOGC stays 100: its headroom is
// larger already, and the peak RSS is what it was.
const gcHeadroom = 32 << 20

// GC sets GOGC after every collection from the live heap it left, so
// that the heap may grow by max(gcHeadroom, live heap) before the next one
// (GOGC 100 to 800). A GOGC set in the environment is left alone.
func GC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	t := &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, cur: 100}
	t.retune()
	t.arm()
}

type gcTuner struct {
	sample []metrics.Sample
	cur    int
}

// gcSentinel is garbage from its creation: its finalizer runs after the
// next collection (and creates the next sentinel).
type gcSentinel struct {
	t *gcTuner
	_ [32]byte // not a tiny allocation (those may never be finalized)
}

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{t: t}, func(s *gcSentinel) {
		s.t.retune()
		s.t.arm()
	})
}

func (t *gcTuner) retune() {
	metrics.Read(t.sample)
	want := 800
	if live := t.sample[0].Value.Uint64(); live > 0 {
		want = int(min(uint64(800), max(uint64(100), gcHeadroom*100/live)))
	}
	if want != t.cur {
		debug.SetGCPercent(want)
		t.cur = want
	}
}
