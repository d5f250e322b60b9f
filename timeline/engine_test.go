package timeline

import (
	"slices"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// The same demos as kernel events through the real engine (synthetic
// streams, as the engine's own tests build them): the timeline of what the
// engine emits, in the order it emits it. Times in ns after t0.
const (
	t0 = 7_000_000_000_000
	µs = 1000
)

func engineTimeline(t *testing.T, name string, feed func(s *enginetest.Stream)) (*trace, []any) {
	t.Helper()
	s := enginetest.NewStream()
	feed(s)
	s.E.Flush()
	recs := append(slices.Clip(s.Recs), s.E.Summary())
	out := chromeOf(t, recs)
	golden(t, name, out)
	return checkTrace(t, out), recs
}

func firstOf[T any](recs []any) T {
	var zero T
	for _, r := range recs {
		if x, ok := r.(T); ok {
			return x
		}
	}
	return zero
}

func TestEngineRead1Byte(t *testing.T) {
	cold := uint64(7)<<32 | 1
	tr, recs := engineTimeline(t, "engine-read-1byte.json", func(s *enginetest.Stream) {
		// The sync read waits for its readahead bio: issue and completion
		// come before the call's exit.
		s.E.HandleIssue(enginetest.Issue(0xa, t0+140*µs, enginetest.FlRead|enginetest.FlRahead,
			enginetest.Own{Op: cold, Bio: 0xb1, Sector: 2048, Bytes: 16384, Queue: t0 + 130*µs}))
		s.E.HandleComplete(enginetest.Done(0xa, t0+293*µs, 0))
		o := enginetest.Op(cold, bpf.IopathOpSysSYS_READ, 0, 1, 1, t0+100*µs, t0+370*µs)
		enginetest.AddRange(o, 0, 4, engine.RangeAdded)
		o.BiosQueued, o.NrRa = 1, 1
		o.Ra[0].Size, o.Ra[0].AsyncSize, o.Ra[0].ReqCount, o.Ra[0].Kind = 4, 3, 1, engine.RASync
		s.E.HandleOp(enginetest.Named(o, "iopath", "/var/tmp/read-1byte.dat"))
		// Warm: a hit, no bio.
		s.E.HandleOp(enginetest.Named(enginetest.Op(cold+1, bpf.IopathOpSysSYS_READ, 0, 1, 1, t0+400*µs, t0+401*µs), "iopath", "/var/tmp/read-1byte.dat"))
	})
	checkRead1Byte(t, tr, firstOf[*record.Syscall](recs))
}

func TestEngineWrite1ByteFsync(t *testing.T) {
	w, f := uint64(9)<<32|1, uint64(9)<<32|2
	const flMeta = 1 << 12 // REQ_META on 6.18
	tr, recs := engineTimeline(t, "engine-write-1byte-fsync.json", func(s *enginetest.Stream) {
		wo := enginetest.Op(w, bpf.IopathOpSysSYS_WRITE, 0, 1, 1, t0+50*µs, t0+71*µs)
		enginetest.AddRange(wo, 0, 1, engine.RangeDirtied)
		s.E.HandleOp(enginetest.Named(wo, "iopath", "/var/tmp/write-1byte.dat"))
		// fsync writes the page itself, then the inode; jbd2 commits the
		// journal while it waits.
		s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, 9, f, t0+120*µs, enginetest.Match{Op: w, Index: 0, Nr: 1, Dirtied: t0 + 60*µs, BioPages: 1}))
		s.E.HandleIssue(enginetest.Issue(0xa, t0+125*µs, enginetest.FlWrite|enginetest.FlSync,
			enginetest.Own{Op: f, Bio: 0xb1, Sector: 4096, Bytes: 4096, Queue: t0 + 120*µs, Flags: engine.OwnWriteback}))
		s.E.HandleComplete(enginetest.Done(0xa, t0+410*µs, 0))
		s.E.HandleIssue(enginetest.Issue(0xb, t0+452*µs, enginetest.FlWrite|enginetest.FlSync|flMeta,
			enginetest.Own{Op: f, Bio: 0xb2, Sector: 9000, Bytes: 4096, Queue: t0 + 450*µs}))
		s.E.HandleComplete(enginetest.Done(0xb, t0+600*µs, 0))
		s.E.HandleIssue(enginetest.Issue(0xc, t0+620*µs, enginetest.FlWrite|enginetest.FlSync,
			enginetest.Own{Op: f, Bio: 0xb3, Sector: 70000, Bytes: 8192, Queue: t0 + 615*µs, Flags: engine.OwnJournal}))
		s.E.HandleComplete(enginetest.Done(0xc, t0+880*µs, 0))
		fo := enginetest.Op(f, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, t0+100*µs, t0+920*µs)
		fo.BiosQueued = 3
		s.E.HandleOp(enginetest.Named(fo, "iopath", "/var/tmp/write-1byte.dat"))
	})
	p := firstOf[*record.Persisted](recs)
	if p == nil {
		t.Fatal("the engine emitted no persisted record")
	}
	checkWriteFsync(t, tr, p, 3)
}
