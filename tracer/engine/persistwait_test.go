package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// writtenBack writes back, before any record names inode ino, the page
// index of call op (dirtied at 15): a periodic flusher bio 0xb0+index on
// request 0xa0+index, completed at ts.
func writtenBack(s *enginetest.Stream, op, ino, index, ts uint64) {
	s.E.HandleWBBio(enginetest.WBBio(0xb0+index, ino, 35, 0, ts-100, enginetest.Match{Op: op, Index: index, Nr: 1, Dirtied: 15}))
	s.E.HandleIssue(enginetest.Issue(0xa0+index, ts-90, enginetest.FlWrite, enginetest.Own{Bio: 0xb0 + index, Sector: index * 8, Bytes: 4096, Queue: ts - 100, Flags: engine.OwnWriteback}))
	s.E.HandleComplete(enginetest.Done(0xa0+index, ts, 0))
}

// The record of a long write (cp's 200 MiB copy_file_range) arrives at its
// end, after background writeback wrote some of the pages it dirtied; the
// file was never named before (cp's open is not traced). Those persisted
// records wait for the call's record, which names the file, and take its
// path. Before, they were printed at once without one (TestTraceCpCopy:
// "persisted record without the destination's path").
func TestPersistedWaitsForPath(t *testing.T) {
	const in, out = 41, 42
	copyOp := uint64(9)<<32 | 1
	t.Run("copy", func(t *testing.T) {
		s := enginetest.NewStream()
		writtenBack(s, copyOp, out, 0, 1000)
		writtenBack(s, copyOp, out, 1, 2000)
		if p := s.Persisted(); len(p) != 0 {
			t.Fatalf("persisted before the copy's record named its output: %+v", p)
		}
		// The copy's end: the output's name (a name-only EV_PATH), then its EV_OP.
		name := enginetest.Named(&bpf.IopathOp{}, "cp", "/data/copy.dat")
		name.PathDev, name.PathIno = enginetest.Dev, out
		s.E.HandleFileName(name)
		o := enginetest.Named(enginetest.Op(copyOp, bpf.IopathOpSysSYS_COPY_FILE_RANGE, 0, 1<<62, 8192, 10, 3000), "cp", "/data/src.dat")
		o.Ino, o.OutDev, o.OutIno = in, enginetest.Dev, out
		enginetest.AddRange(o, 0, 2, engine.RangeDirtied)
		s.E.HandleOp(o)
		p := s.Persisted()
		if len(p) != 2 || p[0].Path != "/data/copy.dat" || p[1].Path != "/data/copy.dat" || p[0].PersistedNs != 1000 || p[1].PersistedNs != 2000 {
			t.Fatalf("persisted %+v: want both, in order, with the output's path", p)
		}
		call, first := -1, -1
		for i, r := range s.Recs {
			switch r.(type) {
			case *record.Syscall:
				call = i
			case *record.Persisted:
				if first < 0 {
					first = i
				}
			}
		}
		if call < 0 || call > first {
			t.Errorf("records %d (the copy) and %d (its first persisted): want the copy's own first", call, first)
		}
		if s.E.DirtyPending() != 0 {
			t.Errorf("%d pages pending", s.E.DirtyPending())
		}
	})
	t.Run("named", func(t *testing.T) {
		// A file already named by an earlier record: no wait.
		s := enginetest.NewStream()
		s.E.HandleOp(enginetest.Named(enginetest.Op(uint64(8)<<32|1, bpf.IopathOpSysSYS_PREAD64, 0, 1, 1, 1, 2), "app", "/data/f"))
		writtenBack(s, copyOp, 42, 0, 1000)
		if p := s.Persisted(); len(p) != 1 || p[0].Path != "/data/f" {
			t.Errorf("persisted %+v: want it at once, with the known path", p)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		// The call's record never comes (lost): released without a path
		// after HoldNs of kernel time, or at the end.
		s := enginetest.NewStream()
		writtenBack(s, copyOp, out, 0, 1000)
		s.E.Tick(1000 + s.E.HoldNs/2)
		if p := s.Persisted(); len(p) != 0 {
			t.Fatalf("released after %d ns: %+v", s.E.HoldNs/2, p)
		}
		s.E.Tick(1000 + s.E.HoldNs + 1)
		if p := s.Persisted(); len(p) != 1 || p[0].Path != "" {
			t.Errorf("after HoldNs: persisted %+v, want it without a path", p)
		}
		s = enginetest.NewStream()
		writtenBack(s, copyOp, out, 0, 1000)
		s.E.Flush()
		if p := s.Persisted(); len(p) != 1 {
			t.Errorf("after the end's Flush: persisted %+v, want it", p)
		}
	})
	t.Run("full", func(t *testing.T) {
		// More records waiting than MaxPending/16 (a call dirtying many
		// pages): the oldest go out without a path.
		s := enginetest.NewStream()
		s.E.MaxPending = 16 * 4
		for i := range uint64(5) {
			writtenBack(s, copyOp, out, i, 1000+i*100)
		}
		if p := s.Persisted(); len(p) != 1 || p[0].PersistedNs != 1000 || p[0].Path != "" {
			t.Errorf("persisted %+v: want the oldest only, without a path", p)
		}
	})
}
