package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
)

// sync and syncfs say what the flusher threads wrote for them (reason sync)
// while they waited: the bios queued between the call's start and end,
// for syncfs only on its device. Their story once said only "write back,
// but no flush request served this call", as if sync had done nothing.
func TestSyncWriteback(t *testing.T) {
	s := enginetest.NewStream()
	const flusher, other = 35, 36
	s.E.HandleWBStart(enginetest.WBStart(flusher, 2, 1000)) // WB_REASON_SYNC on 6.18
	s.E.HandleWBStart(enginetest.WBStart(other, 3, 1000))   // periodic: not the sync's
	wb := func(bio, rq uint64, tid uint32, dev uint32, queue uint64, bytes uint32) {
		ev := enginetest.WBBio(bio, 42, tid, 0, queue)
		ev.Dev = dev
		s.E.HandleWBBio(ev)
		is := enginetest.Issue(rq, queue+5, enginetest.FlWrite, enginetest.Own{Bio: bio, Bytes: bytes, Queue: queue, Flags: engine.OwnWriteback})
		is.Dev = dev
		s.E.HandleIssue(is)
		s.E.HandleComplete(enginetest.Done(rq, queue+50, 0))
	}
	wb(1, 0xa, flusher, enginetest.Dev, 500, 4096)       // before the calls
	wb(2, 0xb, flusher, enginetest.Dev, 10_010, 8192)    // during both
	wb(3, 0xc, flusher, enginetest.Dev+1, 10_020, 16384) // another device: sync's only
	wb(4, 0xd, other, enginetest.Dev, 10_030, 4096)      // periodic
	sync := enginetest.Op(7<<32|1, bpf.IopathOpSysSYS_SYNC, 0, 0, 0, 10_000, 20_000)
	sync.Fd, sync.Ino, sync.Dev = -1, 0, 0
	s.E.HandleOp(sync)
	s.E.HandleOp(enginetest.Op(7<<32|2, bpf.IopathOpSysSYS_SYNCFS, 0, 0, 0, 10_000, 20_000))
	calls := s.Syscalls()
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	for i, want := range []struct{ bios, bytes uint64 }{{2, 8192 + 16384}, {1, 8192}} {
		w := calls[i].SyncWriteback
		if w == nil || w.Bios != want.bios || w.Bytes != want.bytes || w.AtLeast {
			t.Errorf("%s: sync_writeback %+v, want %d bios, %d bytes", calls[i].Syscall, w, want.bios, want.bytes)
		}
	}
}
