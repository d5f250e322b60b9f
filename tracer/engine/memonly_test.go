package engine_test

import (
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine/enginetest"
	"github.com/iopath/iopath/tracer/kernel"
)

// A write to tmpfs is a memory-only write, not a page-cache hit (issue 10
// item 10); the same write to ext4 keeps its hit.
func TestMemoryOnlyWrite(t *testing.T) {
	for _, c := range []struct {
		magic  uint64
		memory bool
		hit    uint64
	}{{0x01021994, true, 0}, {0x858458f6, true, 0}, {0xef53, false, 2}} {
		s := enginetest.NewStream()
		o := enginetest.Op(1<<32|1, bpf.IopathOpSysSYS_WRITE, 0, 8192, 8192, 1000, 2000)
		o.FsMagic = c.magic
		s.E.HandleOp(o)
		recs := s.Syscalls()
		if len(recs) != 1 {
			t.Fatalf("%s: %d records", kernel.FSName(c.magic), len(recs))
		}
		r := recs[0]
		if r.MemoryOnly != c.memory || r.Cache.PagesHit != c.hit || r.Cache.PagesMissed != 0 || r.Cache.PagesRequested != 2 {
			t.Errorf("%s write: memory_only %v, pages requested %d hit %d missed %d; want memory_only %v, 2 requested, %d hit",
				r.FS, r.MemoryOnly, r.Cache.PagesRequested, r.Cache.PagesHit, r.Cache.PagesMissed, c.memory, c.hit)
		}
	}
	// Reads of tmpfs stay page-cache reads (shmem's pages are its page cache).
	s := enginetest.NewStream()
	o := enginetest.Op(1<<32|2, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, 1000, 2000)
	o.FsMagic = 0x01021994
	s.E.HandleOp(o)
	if r := s.Syscalls()[0]; r.MemoryOnly || r.Cache.PagesHit != 1 {
		t.Errorf("tmpfs read: memory_only %v, pages hit %d; want false, 1", r.MemoryOnly, r.Cache.PagesHit)
	}
}
