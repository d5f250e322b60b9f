package render_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// Golden tests of every story kind: synthetic event streams fed to the
// engine, its records printed by a Printer as text and as JSON Lines, and
// compared with testdata/NAME.txt and testdata/NAME.jsonl. After an
// intended change of the output: go test ./render -update, and review the
// diff of testdata/.

// Times: a stream starts at t0 (ns); µs and ms are ns.
const (
	t0 = 1_000_000_000_000
	µs = 1_000
	ms = 1_000_000
)

const (
	ext4  = 0xef53     // superblock magics (include/uapi/linux/magic.h)
	tmpfs = 0x01021994 //
	tid   = 100        // the traced thread (pid 100)
	flush = 35         // a flusher worker's tid
	// Linux 6.18 request flag bits beyond enginetest's (include/linux/blk_types.h).
	flMeta     = 1 << 12
	flFUA      = 1 << 17
	flPreflush = 1 << 18
	opFlush    = 2 // REQ_OP_FLUSH
	// enum wb_reason on 6.18.
	wbBackground = 0
	wbSync       = 2
	wbPeriodic   = 3
)

// id is the op_id of the traced thread's seq-th call.
func id(seq uint64) uint64 { return tid<<32 | seq }

// call is a call of "app" on /var/tmp/data/file (ext4), started at start
// and lasting d ns.
func call(seq uint64, sys bpf.IopathOpSys, off, count uint64, ret int64, start, d uint64) *bpf.IopathOp {
	o := enginetest.Op(id(seq), sys, off, count, ret, start, start+d)
	o.FsMagic = ext4
	return enginetest.Named(o, "app", "/var/tmp/data/file")
}

// write is a write(2) of n bytes at off starting at start (2 µs) that
// dirtied pages [index, index+pages).
func write(seq, off uint64, n int64, start, index uint64, pages uint32) *bpf.IopathOp {
	o := call(seq, bpf.IopathOpSysSYS_WRITE, off, uint64(n), n, start, 2*µs)
	enginetest.AddRange(o, index, pages, engine.RangeDirtied)
	return o
}

// fault is a page fault of "app" at addr on page index of
// /var/tmp/data/file (ext4), started at start and lasting d ns.
func fault(seq, index, addr uint64, flags uint32, start, d uint64) *bpf.IopathOp {
	o := enginetest.Fault(id(seq), index, addr, flags, start, start+d)
	o.FsMagic = ext4
	return enginetest.Named(o, "app", "/var/tmp/data/file")
}

// worker names the task that submitted a writeback bio.
func worker(ev *bpf.IopathWbBioEv, comm string) *bpf.IopathWbBioEv {
	ev.Comm = [16]int8{}
	for i := range len(comm) {
		ev.Comm[i] = int8(comm[i])
	}
	return ev
}

// readahead records one readahead decision of the call.
func readahead(o *bpf.IopathOp, kind uint32, start uint64, size, async uint32) {
	r := &o.Ra[o.NrRa]
	r.Kind, r.Index, r.Start, r.Size, r.AsyncSize, r.ReqCount = kind, start, start, size, async, 1
	o.NrRa++
}

// bio issues request rq at issue, carrying one bio of call op queued 5 µs
// before, and completes it d ns later.
func bio(s *enginetest.Stream, rq uint64, issue, d uint64, flags uint32, own enginetest.Own) {
	own.Queue = issue - 5*µs
	s.E.HandleIssue(enginetest.Issue(rq, issue, flags, own))
	s.E.HandleComplete(enginetest.Done(rq, issue+d, 0))
}

// story is a golden test: a stream and the name of its outputs.
type story struct {
	name string
	feed func(s *enginetest.Stream)
	// losses, if set, fills the summary's losses, which the tracer (not the
	// engine) counts.
	losses func(sum *record.Summary)
	// files, if set, caps the text summary's file tables (trace --files).
	files int
}

var stories = []story{
	{name: "read-hit", feed: func(s *enginetest.Stream) {
		// --all streams pure hits: 1 page requested, cached, no IO.
		s.E.HandleOp(call(1, bpf.IopathOpSysSYS_READ, 8192, 4096, 4096, t0, 1200))
		// A hit that slept: the page was still being read by an earlier
		// call's readahead.
		o := call(2, bpf.IopathOpSysSYS_PREAD64, 16384, 4096, 4096, t0+10*µs, 95*µs)
		o.BlockedNs = 80 * µs
		s.E.HandleOp(o)
		// End of file: nothing returned.
		s.E.HandleOp(call(3, bpf.IopathOpSysSYS_READ, 1<<20, 4096, 0, t0+200*µs, 900))
	}},
	{name: "read-miss", feed: func(s *enginetest.Stream) {
		// A cold 1-byte read: sync readahead of 4 pages, one bio, the
		// caller asleep until it completes.
		bio(s, 0xa, t0+110*µs, 153*µs, enginetest.FlRead|enginetest.FlRahead,
			enginetest.Own{Op: id(1), Bio: 0xb1, Sector: 800, Bytes: 16384})
		o := call(1, bpf.IopathOpSysSYS_READ, 0, 1, 1, t0, 270*µs)
		o.BlockedNs = 205 * µs
		o.BiosQueued = 1
		enginetest.AddRange(o, 0, 4, engine.RangeAdded)
		readahead(o, engine.RASync, 0, 4, 3)
		s.E.HandleOp(o)
		// A read that failed: errno name, no page, no IO.
		s.E.HandleOp(call(2, bpf.IopathOpSysSYS_READ, 0, 4096, -int64(unix.EISDIR), t0+300*µs, 800))
	}},
	{name: "readahead", feed: func(s *enginetest.Stream) {
		// A hit on the page marked PG_readahead: async readahead of the
		// next 8 pages; the call does not wait, its record waits for the bio.
		o := call(1, bpf.IopathOpSysSYS_PREAD64, 12288, 4096, 4096, t0, 30*µs)
		o.BiosQueued = 1
		enginetest.AddRange(o, 4, 8, engine.RangeAdded)
		readahead(o, engine.RAAsync, 4, 8, 8)
		s.E.HandleIssue(enginetest.Issue(0xa, t0+20*µs, enginetest.FlRead|enginetest.FlRahead,
			enginetest.Own{Op: id(1), Bio: 0xb1, Sector: 32, Bytes: 32768, Queue: t0 + 15*µs}))
		s.E.HandleOp(o)
		s.E.HandleComplete(enginetest.Done(0xa, t0+420*µs, 0))
		// A random miss where the kernel sized no window (6.18 reads just
		// the requested page): the window is the pages added.
		bio(s, 0xb, t0+510*µs, 120*µs, enginetest.FlRead, enginetest.Own{Op: id(2), Bio: 0xb2, Sector: 80000, Bytes: 4096})
		o = call(2, bpf.IopathOpSysSYS_PREAD64, 10000*4096, 4096, 4096, t0+500*µs, 140*µs)
		o.BiosQueued, o.BlockedNs = 1, 125*µs
		enginetest.AddRange(o, 10000, 1, engine.RangeAdded)
		readahead(o, engine.RASync, 10000, 0, 0)
		s.E.HandleOp(o)
		// No readahead hook on this kernel: the window is derived from the
		// pages the call inserted beyond its request.
		bio(s, 0xc, t0+1010*µs, 400*µs, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id(3), Bio: 0xb3, Sector: 160000, Bytes: 131072})
		o = call(3, bpf.IopathOpSysSYS_READ, 20000*4096, 4096, 4096, t0+1000*µs, 420*µs)
		o.BiosQueued, o.BlockedNs = 1, 405*µs
		enginetest.AddRange(o, 20000, 32, engine.RangeAdded)
		s.E.HandleOp(o)
	}},
	{name: "direct", feed: func(s *enginetest.Stream) {
		// O_DIRECT: no page cache, one bio per call.
		bio(s, 0xa, t0+10*µs, 60*µs, enginetest.FlRead, enginetest.Own{Op: id(1), Bio: 0xb1, Sector: 2048, Bytes: 4096})
		o := call(1, bpf.IopathOpSysSYS_PREAD64, 0, 4096, 4096, t0, 75*µs)
		o.F_flags, o.BiosQueued, o.BlockedNs = unix.O_DIRECT, 1, 65*µs
		s.E.HandleOp(o)
		bio(s, 0xb, t0+110*µs, 90*µs, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: id(2), Bio: 0xb2, Sector: 2056, Bytes: 4096})
		o = call(2, bpf.IopathOpSysSYS_PWRITE64, 4096, 4096, 4096, t0+100*µs, 105*µs)
		o.F_flags, o.BiosQueued, o.BlockedNs = unix.O_DIRECT, 1, 95*µs
		s.E.HandleOp(o)
	}},
	{name: "completion-unseen", feed: func(s *enginetest.Stream) {
		// An O_DIRECT read whose request's completion no BPF program saw:
		// the kernel issued the request's address again for the next read,
		// so the first had completed (docs/kernel-notes.md).
		s.E.HandleIssue(enginetest.Issue(0xc, t0+10*µs, enginetest.FlRead, enginetest.Own{Op: id(1), Bio: 0xb1, Sector: 2048, Bytes: 4096, Queue: t0 + 5*µs}))
		s.E.HandleIssue(enginetest.Issue(0xc, t0+150*µs, enginetest.FlRead, enginetest.Own{Op: id(2), Bio: 0xb2, Sector: 2056, Bytes: 4096, Queue: t0 + 145*µs}))
		s.E.HandleComplete(enginetest.Done(0xc, t0+210*µs, 0))
		o := call(1, bpf.IopathOpSysSYS_PREAD64, 0, 4096, 4096, t0, 100*µs)
		o.F_flags, o.BiosQueued, o.BlockedNs = unix.O_DIRECT, 1, 90*µs
		s.E.HandleOp(o)
		o = call(2, bpf.IopathOpSysSYS_PREAD64, 4096, 4096, 4096, t0+140*µs, 75*µs)
		o.F_flags, o.BiosQueued, o.BlockedNs = unix.O_DIRECT, 1, 65*µs
		s.E.HandleOp(o)
	}},
	{name: "end-unseen", feed: func(s *enginetest.Stream) {
		// Two requests still held at the end of the trace, their addresses
		// never issued again: an O_DIRECT read's (the call returned, so it
		// had completed, unseen by BPF) and a later readahead's. The disk
		// counted one request in flight then: the older is completed
		// unseen (tracer/engine/endunseen.go), bounded by its call's
		// return; the readahead is released without a completion.
		s.E.HandleIssue(enginetest.Issue(0xc, t0+10*µs, enginetest.FlRead, enginetest.Own{Op: id(1), Bio: 0xb1, Sector: 2048, Bytes: 4096, Queue: t0 + 5*µs}))
		o := call(1, bpf.IopathOpSysSYS_PREAD64, 0, 4096, 4096, t0, 100*µs)
		o.F_flags, o.BiosQueued, o.BlockedNs = unix.O_DIRECT, 1, 90*µs
		s.E.HandleOp(o)
		s.E.HandleIssue(enginetest.Issue(0xd, t0+130*µs, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id(2), Bio: 0xb2, Sector: 4096, Bytes: 16384, Queue: t0 + 125*µs}))
		o = call(2, bpf.IopathOpSysSYS_PREAD64, 4096, 4096, 4096, t0+120*µs, 20*µs)
		o.BiosQueued = 1
		s.E.HandleOp(o)
		s.E.EndUnseen(enginetest.Dev, 1, t0+2*ms, t0+2*ms+10*µs)
	}, losses: func(sum *record.Summary) {
		sum.Diagnostics = map[string]uint64{"requests_unseen_at_end": 1, "requests_in_flight_at_end": 1} // the tracer's (tracer.Summary)
	}},
	{name: "write-throttle", feed: func(s *enginetest.Stream) {
		// 1 MiB dirtying 256 pages, throttled in balance_dirty_pages.
		o := call(1, bpf.IopathOpSysSYS_WRITE, 0, 1<<20, 1<<20, t0, 13*ms)
		enginetest.AddRange(o, 0, 256, engine.RangeDirtied)
		o.ThrottleNs, o.ThrottlePauses, o.MaxPauseNs, o.BlockedNs = 12500*µs, 3, 6*ms, 12400*µs
		o.OtherDirtied = 1
		s.E.HandleOp(o)
		// A partial write to an uncached page: read from disk first.
		bio(s, 0xa, t0+20*ms+10*µs, 150*µs, enginetest.FlRead, enginetest.Own{Op: id(2), Bio: 0xb1, Sector: 4096, Bytes: 4096})
		o = call(2, bpf.IopathOpSysSYS_PWRITE64, 1<<20+10, 100, 100, t0+20*ms, 170*µs)
		o.BiosQueued, o.BlockedNs = 1, 155*µs
		enginetest.AddRange(o, 256, 1, engine.RangeAdded)
		enginetest.AddRange(o, 256, 1, engine.RangeDirtied)
		s.E.HandleOp(o)
		// Bytes into pages already dirty: nothing newly dirtied.
		s.E.HandleOp(call(3, bpf.IopathOpSysSYS_WRITE, 0, 10, 10, t0+21*ms, 2*µs))
		// tmpfs: never written back.
		o = call(4, bpf.IopathOpSysSYS_WRITE, 0, 4096, 4096, t0+22*ms, 3*µs)
		o.FsMagic, o.Ino, o.Dev = tmpfs, 77, 45 // 0:45
		enginetest.Named(o, "app", "/dev/shm/buf")
		s.E.HandleOp(o)
	}},
	{name: "fsync", feed: func(s *enginetest.Stream) {
		s.E.HandleOp(write(1, 0, 1, t0, 0, 1))
		// fsync writes the page itself (data), then the inode (metadata);
		// jbd2 commits the journal while it waits, then a cache flush.
		f := id(2)
		s.E.HandleWBBio(worker(enginetest.WBBio(0xb1, 42, tid, f, t0+100*µs, enginetest.Match{Op: id(1), Index: 0, Nr: 1, Dirtied: t0 + µs, BioPages: 1}), "app"))
		bio(s, 0xa, t0+110*µs, 200*µs, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: f, Bio: 0xb1, Sector: 4096, Bytes: 4096, Flags: engine.OwnWriteback})
		bio(s, 0xb, t0+320*µs, 150*µs, enginetest.FlWrite|enginetest.FlSync|flMeta, enginetest.Own{Op: f, Bio: 0xb2, Sector: 9000, Bytes: 4096})
		bio(s, 0xc, t0+480*µs, 300*µs, enginetest.FlWrite|enginetest.FlSync|flPreflush|flFUA, enginetest.Own{Op: f, Bio: 0xb3, Sector: 70000, Bytes: 8192, Flags: engine.OwnJournal})
		bio(s, 0xd, t0+790*µs, 50*µs, opFlush, enginetest.Own{Op: f, Bio: 0xb4})
		o := call(2, bpf.IopathOpSysSYS_FSYNC, 0, 0, 0, t0+90*µs, 770*µs)
		o.Count, o.Offset = 0, 0
		o.BiosQueued, o.BlockedNs = 4, 740*µs
		s.E.HandleOp(o)
		// sync(2) names no file; a flusher writes 8 KiB more of the file
		// for it (reason sync) while it waits.
		s.E.HandleWBStart(enginetest.WBStart(flush+2, wbSync, t0+2*ms+5*µs))
		s.E.HandleWBBio(enginetest.WBBio(0xb5, 42, flush+2, 0, t0+2*ms+10*µs))
		bio(s, 0xe, t0+2*ms+12*µs, 20*µs, enginetest.FlWrite, enginetest.Own{Bio: 0xb5, Sector: 5000, Bytes: 8192, Flags: engine.OwnWriteback})
		o = enginetest.Op(id(3), bpf.IopathOpSysSYS_SYNC, 0, 0, 0, t0+2*ms, t0+2*ms+40*µs)
		o.Fd, o.Ino, o.Dev = -1, 0, 0
		s.E.HandleOp(enginetest.Named(o, "app", ""))
	}},
	{name: "dsync", feed: func(s *enginetest.Stream) {
		// A pwrite64 on a file opened O_DSYNC (PostgreSQL's open_datasync):
		// generic_write_sync writes the page inside the call, then jbd2
		// commits the journal while it waits, then a cache flush.
		w := id(1)
		s.E.HandleWBBio(worker(enginetest.WBBio(0xb1, 42, tid, w, t0+20*µs, enginetest.Match{Op: w, Index: 2, Nr: 1, Dirtied: t0 + 5*µs, BioPages: 1}), "app"))
		bio(s, 0xa, t0+30*µs, 200*µs, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: w, Bio: 0xb1, Sector: 4112, Bytes: 4096, Flags: engine.OwnWriteback})
		bio(s, 0xc, t0+240*µs, 300*µs, enginetest.FlWrite|enginetest.FlSync|flPreflush|flFUA, enginetest.Own{Op: w, Bio: 0xb3, Sector: 70000, Bytes: 8192, Flags: engine.OwnJournal})
		bio(s, 0xd, t0+550*µs, 50*µs, opFlush, enginetest.Own{Op: w, Bio: 0xb4})
		o := call(1, bpf.IopathOpSysSYS_PWRITE64, 8192, 4096, 4096, t0, 620*µs)
		o.F_flags = unix.O_DSYNC
		enginetest.AddRange(o, 2, 1, engine.RangeDirtied)
		o.BiosQueued, o.BlockedNs = 3, 580*µs
		s.E.HandleOp(o)
	}},
	{name: "writeback", feed: func(s *enginetest.Stream) {
		// Periodic writeback of a page dirtied 30 s before.
		s.E.HandleOp(write(1, 0, 1, t0, 0, 1))
		s.E.HandleWBStart(enginetest.WBStart(flush, wbPeriodic, t0+30e9))
		s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, flush, 0, t0+30e9+10*µs, enginetest.Match{Op: id(1), Index: 0, Nr: 1, Dirtied: t0 + µs, BioPages: 1}))
		bio(s, 0xa, t0+30e9+20*µs, 350*µs, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Sector: 123456, Bytes: 4096, Flags: engine.OwnWriteback})
		// Background writeback of two calls' pages in one merged request.
		s.E.HandleOp(write(2, 4096, 4096, t0+1e9, 1, 1))
		s.E.HandleOp(write(3, 8192, 8192, t0+2e9, 2, 2))
		s.E.HandleWBStart(enginetest.WBStart(flush+1, wbBackground, t0+3e9))
		s.E.HandleWBBio(enginetest.WBBio(0xb2, 42, flush+1, 0, t0+3e9+10*µs, enginetest.Match{Op: id(2), Index: 1, Nr: 1, Dirtied: t0 + 1e9 + µs, BioPages: 1},
			enginetest.Match{Op: id(3), Index: 2, Nr: 2, Dirtied: t0 + 2e9 + µs, BioPages: 2}))
		s.E.HandleIssue(enginetest.Issue(0xb, t0+3e9+30*µs, enginetest.FlWrite,
			enginetest.Own{Bio: 0xb2, Sector: 123464, Bytes: 12288, Queue: t0 + 3e9 + 20*µs, Flags: engine.OwnWriteback},
			enginetest.Own{Bio: 0xb9, Sector: 123488, Bytes: 4096, Queue: t0 + 3e9 + 21*µs, Flags: engine.OwnWriteback}))
		s.E.HandleComplete(enginetest.Done(0xb, t0+3e9+500*µs, 0))
	}},
	{name: "writeback-unseen", feed: func(s *enginetest.Stream) {
		// Periodic writeback of a page whose request's completion no BPF
		// program saw: the kernel issued the request's address again 2 ms
		// later, so the page reached the disk before that (a bound).
		s.E.HandleOp(write(1, 0, 1, t0, 0, 1))
		s.E.HandleWBStart(enginetest.WBStart(flush, wbPeriodic, t0+30e9))
		s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, flush, 0, t0+30e9+10*µs, enginetest.Match{Op: id(1), Index: 0, Nr: 1, Dirtied: t0 + µs, BioPages: 1}))
		s.E.HandleIssue(enginetest.Issue(0xa, t0+30e9+20*µs, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Sector: 123456, Bytes: 4096, Queue: t0 + 30e9 + 10*µs, Flags: engine.OwnWriteback}))
		s.E.HandleIssue(enginetest.Issue(0xa, t0+30e9+2*ms, enginetest.FlRead))
	}},
	{name: "persisted", feed: func(s *enginetest.Stream) {
		// Truncated before writeback: never persisted.
		s.E.HandleOp(write(1, 0, 8192, t0, 0, 2))
		s.E.HandleDirtyGone(enginetest.Gone(id(1), 0, 1, t0+ms))
		s.E.HandleDirtyGone(enginetest.Gone(id(1), 1, 1, t0+ms))
		// The write request failed.
		s.E.HandleOp(write(2, 0, 1, t0+2*ms, 0, 1))
		s.E.HandleWBStart(enginetest.WBStart(flush, wbPeriodic, t0+30e9))
		s.E.HandleWBBio(enginetest.WBBio(0xb1, 42, flush, 0, t0+30e9+10*µs, enginetest.Match{Op: id(2), Index: 0, Nr: 1, Dirtied: t0 + 2*ms, BioPages: 1}))
		s.E.HandleIssue(enginetest.Issue(0xa, t0+30e9+20*µs, enginetest.FlWrite, enginetest.Own{Bio: 0xb1, Sector: 800, Bytes: 4096, Queue: t0 + 30e9 + 15*µs, Flags: engine.OwnWriteback}))
		s.E.HandleComplete(enginetest.Done(0xa, t0+30e9+9*ms, 10))
		// A large folio: a 4 KiB write dirtied its 256 pages; the bio
		// writes 64 of them.
		s.E.HandleOp(write(3, 512*4096, 4096, t0+3*ms, 512, 256))
		s.E.HandleWBBio(enginetest.WBBio(0xb2, 42, flush, 0, t0+31e9, enginetest.Match{Op: id(3), Index: 512, Nr: 256, Dirtied: t0 + 3*ms, BioPages: 64}))
		bio(s, 0xb, t0+31e9+20*µs, 2*ms, enginetest.FlWrite, enginetest.Own{Bio: 0xb2, Sector: 4096, Bytes: 262144, Flags: engine.OwnWriteback})
	}},
	{name: "fault", feed: func(s *enginetest.Stream) {
		// A cold read fault on a mapping: read-around of 2048 pages in
		// two bios, the task asleep on the page, the fault redone.
		o := fault(1, 0, 0x7f3a00000000, engine.FaultMajor|engine.FaultFilemap|engine.FaultRetried, t0, 2*ms)
		o.BlockedNs, o.BiosQueued = 1900*µs, 2
		enginetest.AddRange(o, 0, 2048, engine.RangeAdded)
		readahead(o, engine.RAOrder, 0, 2048, 512)
		o.AroundIndex, o.AroundPages = 0, 16
		s.E.HandleIssue(enginetest.Issue(0xa, t0+20*µs, enginetest.FlRead|enginetest.FlRahead,
			enginetest.Own{Op: id(1), Bio: 0xb1, Sector: 73711616, Bytes: 1 << 20, Queue: t0 + 15*µs},
			enginetest.Own{Op: id(1), Bio: 0xb2, Sector: 73713664, Bytes: 1 << 20, Queue: t0 + 16*µs}))
		s.E.HandleOp(o)
		s.E.HandleComplete(enginetest.Done(0xa, t0+1900*µs, 0))
		// A fault on a page of that window still being read: no IO of its own.
		o = fault(2, 256, 0x7f3a00100000, engine.FaultFilemap|engine.FaultRetried, t0+3*ms, 500*µs)
		o.BlockedNs = 450 * µs
		o.AroundIndex, o.AroundPages = 256, 16
		s.E.HandleOp(o)
		// A store to a clean cached page: dirtied through the mapping.
		o = fault(3, 5, 0x7f3a00005000, engine.FaultWrite|engine.FaultFilemap, t0+4*ms, 6*µs)
		enginetest.AddRange(o, 5, 1, engine.RangeDirtied)
		s.E.HandleOp(o)
		// MADV_RANDOM: only the faulting page is read.
		bio(s, 0xb, t0+5*ms+10*µs, 120*µs, enginetest.FlRead, enginetest.Own{Op: id(4), Bio: 0xb3, Sector: 80000, Bytes: 4096})
		o = fault(4, 10000, 0x7f3a02710000, engine.FaultMajor|engine.FaultFilemap|engine.FaultRetried, t0+5*ms, 140*µs)
		o.BiosQueued, o.BlockedNs = 1, 125*µs
		enginetest.AddRange(o, 10000, 1, engine.RangeAdded)
		s.E.HandleOp(o)
		// A mapping of a tmpfs file: a fault that never reads a disk (--all).
		o = fault(5, 0, 0x7f3b00000000, engine.FaultFilemap, t0+6*ms, 3*µs)
		o.FsMagic, o.Ino, o.Dev = tmpfs, 77, 45
		enginetest.Named(o, "app", "/dev/shm/buf")
		s.E.HandleOp(o)
		// madvise(MADV_WILLNEED) reads the range ahead itself; msync
		// (MS_SYNC) writes the page the store dirtied.
		bio(s, 0xc, t0+7*ms+10*µs, 900*µs, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id(6), Bio: 0xb4, Sector: 16384, Bytes: 1 << 20})
		o = call(6, bpf.IopathOpSysSYS_MADVISE, 0, 1<<20, 0, t0+7*ms, 30*µs)
		o.Fd, o.Advice, o.BiosQueued = -1, 3, 1
		enginetest.AddRange(o, 0, 256, engine.RangeAdded)
		s.E.HandleOp(o)
		s.E.HandleWBBio(worker(enginetest.WBBio(0xb5, 42, tid, id(7), t0+9*ms, enginetest.Match{Op: id(3), Index: 5, Nr: 1, Dirtied: t0 + 4*ms, BioPages: 1}), "app"))
		bio(s, 0xd, t0+9*ms+10*µs, 200*µs, enginetest.FlWrite|enginetest.FlSync, enginetest.Own{Op: id(7), Bio: 0xb5, Sector: 4136, Bytes: 4096, Flags: engine.OwnWriteback})
		o = call(7, bpf.IopathOpSysSYS_MSYNC, 0, 1<<20, 0, t0+9*ms, 250*µs)
		o.Fd, o.Advice, o.BiosQueued, o.BlockedNs = -1, 4, 1, 210*µs
		s.E.HandleOp(o)
		var st bpf.IopathFaultStat
		st.Faults = 40
		s.E.AddFaults(bpf.IopathFaultKey{File: bpf.IopathAggFileKey{Ino: 42, Dev: enginetest.Dev}, Pid: 100}, st)
	}},
	{name: "fault_signal", feed: func(s *enginetest.Stream) {
		// A store to a shared mapping on 5.10: page_mkwrite dirtied the
		// page, the pass returned VM_FAULT_RETRY with SIGURG pending, and
		// the thread took the signal instead of redoing the fault.
		o := fault(1, 5, 0x7f3a00005000, engine.FaultWrite|engine.FaultFilemap|engine.FaultEnded|engine.FaultSignal, t0, 40*µs)
		o.Ret = int64(unix.SIGURG)
		enginetest.AddRange(o, 5, 1, engine.RangeDirtied)
		s.E.HandleOp(o)
		// A load past the end of the file: the fault failed (SIGBUS).
		o = fault(2, 300, 0x7f3a0012c000, engine.FaultFilemap|engine.FaultEnded|engine.FaultSignal, t0+ms, 8*µs)
		o.Ret = int64(unix.SIGBUS)
		s.E.HandleOp(o)
		// A load whose pass read its page and went back to user mode
		// unaccounted (another thread took the signal pending then): no
		// end seen; closed at the thread's next fault, 2 ms later.
		bio(s, 0xe, t0+3*ms+10*µs, 150*µs, enginetest.FlRead, enginetest.Own{Op: id(3), Bio: 0xb3, Sector: 880, Bytes: 16384})
		o = fault(3, 40, 0x7f3a00028000, engine.FaultFilemap|engine.FaultUnended, t0+3*ms, 2*ms)
		enginetest.AddRange(o, 40, 4, engine.RangeAdded)
		o.PagesInRange, o.BiosQueued, o.BlockedNs = 1, 1, 160*µs
		s.E.HandleOp(o)
	}},
	{name: "libaio", feed: func(s *enginetest.Stream) {
		// One io_submit of two O_DIRECT 4 KiB reads (user data 1 and 2),
		// completed out of order; a second io_submit of a buffered read
		// that missed and read ahead; a cached one that touched no disk
		// (JSON only); all reaped by one io_getevents.
		const ring = 0x7f0000001000
		bio(s, 0xa, t0+10*µs, 180*µs, enginetest.FlRead|enginetest.FlSync, enginetest.Own{Op: id(11), Bio: 0xb1, Sector: 2048, Bytes: 4096, Queue: t0 + 8*µs})
		o := call(11, bpf.IopathOpSysSYS_AIO_READ, 0, 4096, 4096, t0, 12*µs)
		o.F_flags, o.BiosQueued = unix.O_DIRECT, 1
		s.E.HandleOp(o)
		bio(s, 0xb, t0+20*µs, 90*µs, enginetest.FlRead|enginetest.FlSync, enginetest.Own{Op: id(12), Bio: 0xb2, Sector: 4096, Bytes: 4096, Queue: t0 + 18*µs})
		o = call(12, bpf.IopathOpSysSYS_AIO_READ, 1<<20, 4096, 4096, t0+12*µs, 10*µs)
		o.F_flags, o.BiosQueued = unix.O_DIRECT, 1
		s.E.HandleOp(o)
		s.E.HandleAioSubmit(enginetest.AioSubmit(id(10), ring, 2, t0-2*µs, t0+25*µs,
			enginetest.Iocb{Addr: 0xa0, UserData: 1, Off: 0, Bytes: 4096}, enginetest.Iocb{Addr: 0xb0, UserData: 2, Off: 1 << 20, Bytes: 4096}))
		bio(s, 0xc, t0+310*µs, 100*µs, enginetest.FlRead|enginetest.FlRahead, enginetest.Own{Op: id(21), Bio: 0xb3, Sector: 9000, Bytes: 16384, Queue: t0 + 305*µs})
		o = call(21, bpf.IopathOpSysSYS_AIO_READ, 8192, 4096, 4096, t0+300*µs, 120*µs)
		o.BiosQueued, o.BlockedNs = 1, 105*µs
		enginetest.AddRange(o, 2, 4, engine.RangeAdded)
		readahead(o, engine.RASync, 2, 4, 0)
		s.E.HandleOp(o)
		o = call(22, bpf.IopathOpSysSYS_AIO_READ, 12288, 4096, 4096, t0+420*µs, 2*µs)
		s.E.HandleOp(o)
		s.E.HandleAioSubmit(enginetest.AioSubmit(id(20), ring, 2, t0+298*µs, t0+423*µs,
			enginetest.Iocb{Addr: 0xa0, UserData: 3, Off: 8192, Bytes: 4096}, enginetest.Iocb{Addr: 0xb0, UserData: 4, Off: 12288, Bytes: 4096}))
		s.E.HandleAioReap(enginetest.AioReap(ring, t0+500*µs, enginetest.Reaped{Addr: 0xb0, UserData: 2, Res: 4096},
			enginetest.Reaped{Addr: 0xa0, UserData: 1, Res: 4096}, enginetest.Reaped{Addr: 0xa0, UserData: 3, Res: 4096},
			enginetest.Reaped{Addr: 0xb0, UserData: 4, Res: 4096}))
	}},
	{name: "io_uring", feed: func(s *enginetest.Stream) {
		// An O_DIRECT read issued inline by io_uring_enter (op 30, to_submit
		// 2, min_complete 1, GETEVENTS), and a buffered write it punted to
		// an io-wq worker (thread 200), which dirtied its page; their CQEs.
		sub := func(seq uint64, opcode uint32, off int64, ts uint64) *bpf.IopathUringSubmitEv {
			ev := &bpf.IopathUringSubmitEv{Type: uint32(bpf.IopathEvTypeEV_URING_SUBMIT), Pid: 100, Tid: tid, OwnerTid: tid, Opcode: opcode,
				Req: 0xf000 + seq, UserData: seq, OpId: id(seq), SubmitOpId: id(30), Ts: ts, Offset: off, Len: 4096, Fd: 3}
			copy(ev.Comm[:], []int8{'a', 'p', 'p'})
			return ev
		}
		done := func(seq uint64, segs uint32, ts uint64) *bpf.IopathUringCompleteEv {
			return &bpf.IopathUringCompleteEv{Type: uint32(bpf.IopathEvTypeEV_URING_COMPLETE), Pid: 100, Tid: tid, Segs: segs,
				Req: 0xf000 + seq, OpId: id(seq), UserData: seq, Ts: ts, Res: 4096}
		}
		s.E.HandleUringSubmit(sub(31, 22, 0, t0))
		bio(s, 0xa, t0+10*µs, 80*µs, enginetest.FlRead|enginetest.FlSync, enginetest.Own{Op: id(31), Bio: 0xb1, Sector: 2048, Bytes: 4096})
		o := call(31, bpf.IopathOpSysSYS_URING_READ, 0, 4096, 4096, t0, 12*µs)
		o.F_flags, o.BiosQueued, o.ReqId = unix.O_DIRECT, 1, id(31)
		s.E.HandleOp(o)
		s.E.HandleUringComplete(done(31, 1, t0+95*µs))
		s.E.HandleUringSubmit(sub(32, 23, 4096, t0+100*µs))
		o = call(32, bpf.IopathOpSysSYS_URING_WRITE, 4096, 4096, 4096, t0+100*µs, 3*µs)
		o.ReqId = id(32)
		s.E.HandleOp(o)
		s.E.HandleUringPunt(&bpf.IopathUringPuntEv{Type: uint32(bpf.IopathEvTypeEV_URING_PUNT), Pid: 100, Req: 0xf020, OpId: id(32), Ts: t0 + 103*µs, Hashed: 1})
		// The call's exit, after the read's CQE (posted while it waited):
		// the read's story waits for it, under its line.
		s.E.HandleUringEnter(enginetest.UringEnter(id(30), 2, 2, 1, 1, t0-1*µs, t0+104*µs))
		w := call(1, bpf.IopathOpSysSYS_URING_WRITE, 4096, 4096, 4096, t0+110*µs, 20*µs)
		w.OpId, w.Tid, w.ReqId = 200<<32|1, 200, id(32)
		enginetest.AddRange(w, 1, 1, engine.RangeDirtied)
		s.E.HandleOp(w)
		s.E.HandleUringComplete(done(32, 2, t0+131*µs))
	}},
	{name: "summary", feed: func(s *enginetest.Stream) {
		// A miss, a write, a bio outside any call, the kernel's count of
		// pure hits.
		bio(s, 0xa, t0+10*µs, 100*µs, enginetest.FlRead, enginetest.Own{Op: id(1), Bio: 0xb1, Sector: 8, Bytes: 4096})
		o := call(1, bpf.IopathOpSysSYS_PREAD64, 4096, 4096, 4096, t0, 120*µs)
		o.BiosQueued, o.BlockedNs = 1, 105*µs
		enginetest.AddRange(o, 1, 1, engine.RangeAdded)
		s.E.HandleOp(o)
		o = call(2, bpf.IopathOpSysSYS_WRITE, 0, 8192, 8192, t0+200*µs, 6*µs)
		enginetest.AddRange(o, 0, 2, engine.RangeDirtied)
		s.E.HandleOp(o)
		bio(s, 0xb, t0+300*µs, 80*µs, enginetest.FlRead, enginetest.Own{Bio: 0xb2, Sector: 64, Bytes: 8192, Pid: 300})
		var hits bpf.IopathStatVal
		hits.Calls, hits.BytesRequested, hits.BytesReturned, hits.Pages = 1000, 4096000, 4096000, 1000
		copy(hits.Comm[:], []int8{'a', 'p', 'p'})
		copy(hits.Name[:], []int8{'c', 'a', 'c', 'h', 'e', 'd'})
		s.E.AddHits(bpf.IopathStatKey{Ino: 43, Pid: 100, Dev: enginetest.Dev}, hits)
		// Hits of files hit_stats had no room for (in pid 100's totals),
		// and of a process hit_other had no room for (in none).
		hits.Calls, hits.BytesRequested, hits.BytesReturned, hits.Pages = 5, 20480, 20480, 5
		s.E.AddHitsNotItemized(100, false, hits)
		hits.Calls, hits.BytesRequested, hits.BytesReturned, hits.Pages = 2, 8192, 8192, 2
		s.E.AddHitsNotItemized(0, false, hits)
	}, losses: func(sum *record.Summary) {
		sum.LostEvents = 3
		sum.MarkPartialLost()
		sum.MapEvictions["hit_stats"] = 3
		sum.MapEvictions["hit_other"] = 1
		sum.MapEvictions["dirty_pages"] = 2
		sum.MarkPartialWriteback()
		sum.Truncations["page_ranges"] = 1
		sum.MissedRuns = map[string]uint64{"tp_btf_block_rq_complete": 2}
		sum.DirtyUnseen = 4
		sum.Attach = map[string]string{"vfs_read": "tp_btf", "readahead": "tracepoint"}
	}},
}

// on is call seq of "app" on file ino at path (ext4).
func on(o *bpf.IopathOp, ino uint64, path string) *bpf.IopathOp {
	o.Ino = ino
	return enginetest.Named(o, "app", path)
}

func init() {
	stories = append(stories, story{name: "files-capped", files: 2, feed: func(s *enginetest.Stream) {
		// Five files, --files 2: the two with the most disk bytes are
		// listed, the other three summed in one row (calls break the tie
		// of their 0 bytes); of three mapped files, the one whose faults
		// read most, then the one with most faults.
		read := func(seq, ino uint64, path string, start uint64, diskBytes uint32) {
			o := on(call(seq, bpf.IopathOpSysSYS_READ, 0, 4096, 4096, start, 50*µs), ino, path)
			if diskBytes > 0 {
				bio(s, 0x10+seq, start+5*µs, 40*µs, enginetest.FlRead, enginetest.Own{Op: id(seq), Bio: 0xb0 + seq, Sector: 1000 * seq, Bytes: diskBytes})
				o.BiosQueued, o.BlockedNs = 1, 40*µs
				enginetest.AddRange(o, 0, diskBytes/4096, engine.RangeAdded)
			}
			s.E.HandleOp(o)
		}
		read(1, 50, "/var/tmp/data/a", t0, 0)
		read(2, 51, "/var/tmp/data/b", t0+ms, 16384)
		read(3, 52, "/var/tmp/data/c", t0+2*ms, 0)
		read(4, 52, "/var/tmp/data/c", t0+3*ms, 0)
		read(5, 53, "/var/tmp/data/d", t0+4*ms, 65536)
		s.E.HandleOp(on(write(6, 0, 8192, t0+5*ms, 0, 2), 54, "/var/tmp/data/e"))
		for i, f := range []struct {
			ino    uint64
			path   string
			faults int
		}{{60, "/usr/lib/libx.so", 3}, {61, "/usr/lib/liby.so", 1}, {62, "/usr/bin/app", 2}} {
			for j := range f.faults {
				seq := uint64(10 + 10*i + j)
				s.E.HandleOp(on(fault(seq, uint64(j), 0x7f0000000000+uint64(i)<<24+uint64(j)<<12, engine.FaultFilemap, t0+6*ms+seq*µs, 2*µs), f.ino, f.path))
			}
		}
	}})
}

func TestStoriesGolden(t *testing.T) {
	for _, st := range stories {
		t.Run(st.name, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				s := enginetest.NewStream()
				st.feed(s)
				s.E.Flush()
				sum := s.E.Summary()
				if st.losses != nil {
					st.losses(sum)
				}
				var out bytes.Buffer
				p := render.NewPrinter(&out, asJSON, false)
				if st.files != 0 {
					p.SetFileRows(st.files)
				}
				for _, r := range s.Recs {
					p.Record(r)
				}
				p.Summary(sum)
				ext := ".txt"
				if asJSON {
					ext = ".jsonl"
				}
				golden(t, filepath.Join("testdata", st.name+ext), out.Bytes())
			}
		})
	}
}

// golden compares got with the file, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./render -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./render -update rewrites it; review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func init() {
	stories = append(stories, story{name: "execve", feed: func(s *enginetest.Stream) {
		// A program started from a cold binary (TestTraceExecRecords on
		// 6.18): its header's 4-page sync readahead, then a kernel-mode
		// fault's 2048-page window (no event names its kind), two bios;
		// a failed execve: no file, no IO.
		bio(s, 0xa, t0+110*µs, 136*µs, enginetest.FlRead|enginetest.FlRahead,
			enginetest.Own{Op: id(1), Bio: 0xb1, Sector: 800, Bytes: 16384})
		bio(s, 0xb, t0+400*µs, 202*µs, enginetest.FlRead|enginetest.FlRahead,
			enginetest.Own{Op: id(1), Bio: 0xb2, Sector: 832, Bytes: 73728})
		o := enginetest.Named(enginetest.Op(id(1), bpf.IopathOpSysSYS_EXECVE, 0, 0, 0, t0, t0+822*µs), "app", "/usr/local/bin/app")
		o.Fd, o.FsMagic, o.Ino = -1, ext4, 77
		o.BlockedNs = 303 * µs
		o.BiosQueued = 2
		enginetest.AddRange(o, 0, 22, engine.RangeAdded)
		readahead(o, engine.RASync, 0, 4, 3)
		readahead(o, engine.RAOrder, 0, 2048, 512)
		s.E.HandleOp(o)
		failed := enginetest.Op(id(2), bpf.IopathOpSysSYS_EXECVE, 0, 0, -int64(unix.ENOENT), t0+900*µs, t0+928*µs)
		failed.Fd, failed.Ino, failed.Dev = -1, 0, 0 // no file: its lookup failed
		failed.Comm = o.Comm
		s.E.HandleOp(failed)
	}})
}
