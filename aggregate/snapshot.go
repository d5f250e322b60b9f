// Package aggregate reads the in-kernel aggregates of `iopath top`, `iopath
// serve` and `iopath trace --interval` (bpf/agg.h) into typed snapshots:
// cumulative counters and log2 histograms per process, per file, per disk
// and for the whole run; Delta turns two snapshots into an interval, and
// Hist.Quantile estimates percentiles from the log2 buckets.
package aggregate

import (
	"time"

	"github.com/iopath/iopath/bpf"
)

// Call classes (bpf/agg.h enum agg_op): the index of the per-op arrays.
const (
	Read  = int(bpf.IopathAggOpAGG_READ)
	Write = int(bpf.IopathAggOpAGG_WRITE)
	Sync  = int(bpf.IopathAggOpAGG_SYNC)
	Ops   = int(bpf.IopathAggOpAGG_OPS)
)

// OpNames name the call classes, as the metrics' op label does.
var OpNames = [Ops]string{Read: "read", Write: "write", Sync: "sync"}

// RqOp is a block request's class (bpf/agg.h enum agg_rq_op).
type RqOp uint32

// Request classes.
const (
	RqRead    = RqOp(bpf.IopathAggRqOpAGG_RQ_READ)
	RqWrite   = RqOp(bpf.IopathAggRqOpAGG_RQ_WRITE)
	RqFlush   = RqOp(bpf.IopathAggRqOpAGG_RQ_FLUSH)
	RqDiscard = RqOp(bpf.IopathAggRqOpAGG_RQ_DISCARD)
)

func (o RqOp) String() string {
	switch o {
	case RqRead:
		return "read"
	case RqWrite:
		return "write"
	case RqFlush:
		return "flush"
	}
	return "discard"
}

// Overflow indexes (bpf/agg.h enum agg_overflow).
const (
	OverflowProcs = int(bpf.IopathAggOverflowAGG_OV_PROCS)
	OverflowFiles = int(bpf.IopathAggOverflowAGG_OV_FILES)
	OverflowRqs   = int(bpf.IopathAggOverflowAGG_OV_RQS)
	OverflowDevs  = int(bpf.IopathAggOverflowAGG_OV_DEVS)
	// OverflowNoDisk: requests completed without a disk to name them by
	// (counted here, not per disk).
	OverflowNoDisk = int(bpf.IopathAggOverflowAGG_OV_NODISK)
	overflows      = int(bpf.IopathAggOverflowAGG_OV_MAX)
)

// PageSize is the unit of the page counters (4 KiB).
const PageSize = 4096

// IO is what the calls of one process, one file or of everything did.
// Bytes of reads are the bytes returned, of writes the bytes written.
type IO struct {
	Calls, Errors, Bytes, LatencyNs [Ops]uint64
	HitPages                        uint64 // read pages found in the page cache
	MissPages                       uint64 // read pages the call had to insert (inside its range)
	ReadaheadPages                  uint64 // pages inserted beyond the calls' ranges
	DiskReadBytes                   uint64 // bios queued by read calls
	DiskWriteBytes                  uint64 // bios queued by write and sync calls (O_SYNC, O_DIRECT, fsync)
	WritebackBytes                  uint64 // pages the calls dirtied, written back by the flusher
	DirtiedPages                    uint64 // pages the calls turned dirty
	CleanedPages                    uint64 // of tracked dirty pages, written back or dropped since
	ThrottleNs                      uint64 // time in balance_dirty_pages
	// NoBdevPages: read pages of files without a block device (proc,
	// sysfs, cgroup, tmpfs), counted apart: neither hits nor misses.
	NoBdevPages uint64
	// DirectReadBytes: bytes returned by O_DIRECT reads, which bypass the
	// page cache (no pages: not in the hit ratio).
	DirectReadBytes uint64
	Lat             [Ops]Hist
}

// Proc is one process's IO (key: tgid), or an ended part of it (key
// EndedKey): a process's counts are split where it exec'ed and where its
// main thread was renamed, so that each part counts under its own comm.
type Proc struct {
	Pid uint32
	// Comm is the comm of the process's main thread (/proc/PID/comm, as ps
	// shows it): read at its first traced call, then followed at the
	// task_rename tracepoint (prctl(PR_SET_NAME), a write to
	// /proc/PID/comm) and at exec (bpf/agg.h agg_renamed, agg_exec). A
	// thread naming itself does not rename the process.
	Comm string
	// Exited: gone (exited), or a part that ended (an exec, a rename):
	// its entry was folded into Snapshot.Retired after this read.
	Exited bool
	// Part numbers the parts of the process: the live entry's is the
	// part it counts now (the parts ended before it: 0 to Part-1).
	Part uint32
	IO
}

// FileKey names a file: its filesystem's kernel dev_t, inode number and
// i_generation (an inode number reused after a delete is another file).
type FileKey struct {
	Dev uint32
	Ino uint64
	Gen uint32
}

// File is one file's IO.
type File struct {
	FileKey
	// Name is the last path component at its latest call after a rename
	// (at its first call without one): a file's own, never a deleted
	// file's whose inode number it reuses.
	Name string
	IO
}

// DevKey names a disk (kernel dev_t) and request class.
type DevKey struct {
	Dev uint32
	Op  RqOp
}

// Device is every request completed on one disk in one class, whoever
// queued it (like iostat).
type Device struct {
	DevKey
	Requests, Bytes, Errors uint64
	D2CNs, Q2CNs            uint64 // sums
	Q2CUnknown              uint64 // requests without a start time (queue without io accounting)
	// Unseen: requests issued whose completion no BPF program saw (the
	// kernel issued their address again); counted in Requests and Bytes,
	// not in D2C/Q2C (docs/kernel-notes.md, "Completions BPF never sees").
	Unseen   uint64
	D2C, Q2C Hist // issue→complete, request start→complete
}

// Global is the run's histograms and loss counters.
type Global struct {
	// SyscallLat by op and cache (0 hit, 1 miss: the call inserted pages
	// in its range or queued bios).
	SyscallLat    [Ops][2]Hist
	SyscallLatNs  [Ops][2]uint64
	DirtyToDisk   Hist // pages: dirtied → their writeback bio queued
	DirtyToDiskNs uint64
	Overflow      [overflows]uint64
}

// Snapshot is the aggregates at one moment (cumulative since the tracer
// loaded), or, from Delta, over an interval.
type Snapshot struct {
	At      time.Time
	Elapsed time.Duration // Delta: the interval's length
	Procs   map[uint32]*Proc
	Files   map[FileKey]*File
	Devices map[DevKey]*Device
	// OtherProcs and OtherFiles hold the calls agg_procs / agg_files had no
	// room for (counted in Global.Overflow): totals stay exact.
	OtherProcs, OtherFiles IO
	// GoneProcs holds the cleaned pages and writeback bytes of dirty pages
	// whose process had no entry any more when the kernel wrote them or
	// dropped them (it exited and was retired: bpf/agg.h AGG_OTHER_GONE):
	// in the totals, so that a writer that exits before the flusher runs
	// leaves no page pending there, and its writeback is counted.
	GoneProcs IO
	// Retired holds processes that exited (their entries were removed from
	// the kernel's map to make room), all and by comm.
	// An interval (Delta) has neither: its exited processes are rows of
	// Procs, counted from the previous read.
	Retired       IO
	RetiredByComm map[string]*IO
	Global        Global
	interval      bool
}

// Total is every traced call's IO: the processes, the ones without room
// and the exited ones, with the writeback of pages whose writer had exited.
func (s *Snapshot) Total() IO {
	var t IO
	for _, p := range s.Procs {
		if !p.Exited || s.interval {
			t.Add(&p.IO)
		}
	}
	t.Add(&s.OtherProcs)
	t.Add(&s.GoneProcs)
	t.Add(&s.Retired)
	return t
}

// Add adds b to a.
func (a *IO) Add(b *IO) { a.fields().add(b.fields()) }

// Sub returns a - b, counter by counter, 0 where b is larger (a key reused
// by a new process or file starts again from 0).
func (a IO) Sub(b *IO) IO {
	d := a
	d.fields().sub(b.fields())
	return d
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// AllCalls is the number of calls of every class.
func (a *IO) AllCalls() uint64 { return a.Calls[Read] + a.Calls[Write] + a.Calls[Sync] }

// MaxP99 is the highest p99 latency of the call classes, in ns (0
// without calls): the slowest class's, never a mix of reads and fsyncs.
func (a *IO) MaxP99() float64 {
	var m float64
	for i := range Ops {
		if v, ok := a.Lat[i].Quantile(0.99); ok && v > m {
			m = v
		}
	}
	return m
}

// DiskBytes is every byte this IO put on or read from the disk: its calls'
// bios and the writeback of the pages they dirtied.
func (a *IO) DiskBytes() uint64 { return a.DiskReadBytes + a.DiskWriteBytes + a.WritebackBytes }

// HitRatio is the read pages found in the cache over all read pages of
// block-backed files (NoBdevPages are not in it); ok is false without such
// pages: O_DIRECT reads, which bypass the cache, count none.
func (a *IO) HitRatio() (float64, bool) {
	n := a.HitPages + a.MissPages
	if n == 0 {
		return 0, false
	}
	return float64(a.HitPages) / float64(n), true
}

// DirtyPending is the pages dirtied and not yet written back or dropped,
// as far as iopath followed them (0 when more were cleaned: pages dirtied
// before the tracer loaded, or outside a traced call).
func (a *IO) DirtyPending() uint64 { return sub(a.DirtiedPages, a.CleanedPages) }

// Amplification is disk bytes per byte the calls moved; ok is false when
// they moved none.
func (a *IO) Amplification() (float64, bool) {
	b := a.Bytes[Read] + a.Bytes[Write]
	if b == 0 {
		return 0, false
	}
	return float64(a.DiskBytes()) / float64(b), true
}

// Delta returns cur - prev: per key, the counters of the interval between
// the two reads. Keys absent from prev count from 0; keys absent from cur
// (removed, exited earlier) are not in the result. A process that ended a
// part in between (Proc.Part moved on) counts its live entry from 0 and
// the part from what the live entry had at prev.
func Delta(prev, cur *Snapshot) *Snapshot {
	d := &Snapshot{
		At: cur.At, Elapsed: cur.At.Sub(prev.At), Procs: map[uint32]*Proc{}, Files: map[FileKey]*File{},
		Devices: map[DevKey]*Device{}, RetiredByComm: map[string]*IO{}, interval: true,
	}
	for k, p := range cur.Procs {
		q := *p
		if o := prev.Procs[k]; o != nil && !o.Exited && o.Part == p.Part && o.Comm == p.Comm {
			q.IO = p.Sub(&o.IO) // the same part of the same process
		} else if o := prev.Procs[p.Pid]; k&ended != 0 && o != nil && !o.Exited && o.Part == p.Part {
			// A part that ended since: it holds what its live entry
			// had at the previous read.
			q.IO = p.Sub(&o.IO)
		}
		d.Procs[k] = &q
	}
	for k, f := range cur.Files {
		g := *f
		if o := prev.Files[k]; o != nil {
			g.IO = f.Sub(&o.IO)
		}
		d.Files[k] = &g
	}
	for k, v := range cur.Devices {
		w := *v
		if o := prev.Devices[k]; o != nil {
			w.fields().sub(o.fields())
		}
		d.Devices[k] = &w
	}
	d.OtherProcs = cur.OtherProcs.Sub(&prev.OtherProcs)
	d.OtherFiles = cur.OtherFiles.Sub(&prev.OtherFiles)
	d.GoneProcs = cur.GoneProcs.Sub(&prev.GoneProcs)
	d.Global = cur.Global
	d.Global.fields().sub(prev.Global.fields())
	return d
}

// NewInterval returns an empty interval starting at at, for Accumulate.
func NewInterval(at time.Time) *Snapshot {
	return &Snapshot{At: at, Procs: map[uint32]*Proc{}, Files: map[FileKey]*File{}, Devices: map[DevKey]*Device{},
		RetiredByComm: map[string]*IO{}, interval: true}
}

// Accumulate adds the interval d to the interval s (made by NewInterval):
// s then spans from its start to d's end, with every row any of the
// intervals had (exited processes and ended parts included, each under its
// own comm; files under their latest name).
func (s *Snapshot) Accumulate(d *Snapshot) {
	s.Elapsed += d.Elapsed
	s.At = d.At
	for k, p := range d.Procs {
		q := s.Procs[k]
		if q != nil && k&ended == 0 && q.Part != p.Part {
			// The live entry ended parts since: what s counted under it is
			// part q.Part's, under q.Comm (d has that part's rest).
			s.proc(EndedKey(p.Pid, q.Part), q).Add(&q.IO)
			q.IO = IO{}
		}
		if q == nil {
			q = &Proc{Pid: p.Pid}
			s.Procs[k] = q
		}
		q.Comm, q.Exited, q.Part = p.Comm, p.Exited, p.Part
		q.Add(&p.IO)
	}
	for k, f := range d.Files {
		g := s.Files[k]
		if g == nil {
			g = &File{FileKey: k}
			s.Files[k] = g
		}
		if f.Name != "" {
			g.Name = f.Name // the latest
		}
		g.Add(&f.IO)
	}
	for k, v := range d.Devices {
		w := s.Devices[k]
		if w == nil {
			w = &Device{DevKey: k}
			s.Devices[k] = w
		}
		w.fields().add(v.fields())
	}
	s.OtherProcs.Add(&d.OtherProcs)
	s.OtherFiles.Add(&d.OtherFiles)
	s.GoneProcs.Add(&d.GoneProcs)
	s.Global.fields().add(d.Global.fields())
}

// proc returns s's row of key k, made ended like live (its pid, comm and
// part) if s has none.
func (s *Snapshot) proc(k uint32, live *Proc) *Proc {
	q := s.Procs[k]
	if q == nil {
		q = &Proc{Pid: live.Pid, Comm: live.Comm, Exited: true, Part: live.Part}
		s.Procs[k] = q
	}
	return q
}
