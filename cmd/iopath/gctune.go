package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// gcHeadroom is the garbage iopath lets its heap gather between two
// collections, at least: with a few MiB of live heap (the usual trace),
// GOGC=100 collected every few MiB of records, several times a second at
// ten thousand records a second, and the collector's marking and sweeping
// took ~15 % of iopath's CPU (perf, 4 KiB cold reads). A large live heap
// (a million pending dirty pages) keeps GOGC=100: its headroom is already
// larger, and no more memory is spent on it.
const gcHeadroom = 32 << 20

// tuneGC sets GOGC, once a second, so that the heap may grow by
// max(gcHeadroom, live heap) before the next collection (GOGC 100 to 800).
// A GOGC set in the environment is left alone.
func tuneGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	cur := 100
	set := func() {
		metrics.Read(sample)
		want := 800
		if live := sample[0].Value.Uint64(); live > 0 {
			want = int(min(uint64(800), max(uint64(100), gcHeadroom*100/live)))
		}
		// Hysteresis: a change of less than a quarter is not worth a call.
		if d := want - cur; d*4 > cur || -d*4 > cur {
			debug.SetGCPercent(want)
			cur = want
		}
	}
	set()
	go func() {
		for range time.Tick(time.Second) {
			set()
		}
	}()
}
