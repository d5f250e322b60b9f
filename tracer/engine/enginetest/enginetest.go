// Package enginetest builds synthetic kernel event streams for the engine:
// package bpf's structs filled as the BPF programs fill them, and a Stream
// that collects the records an engine emits. Engine, decoder and render
// tests use it; no kernel is needed.
package enginetest

import (
	"strings"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/kernel"
)

// Dev is the kernel dev_t of the synthetic events' device, 254:0.
const Dev = 254 << 20

// Request flags (cmd_flags) on Linux 6.18, as kernel.Linux618 decodes them:
// the op in the low 8 bits, REQ_RAHEAD bit 19, REQ_SYNC bit 11.
const (
	FlRead   = 0
	FlWrite  = 1
	FlRahead = 1 << 19
	FlSync   = 1 << 11
)

// Stream is an engine (Linux 6.18's kernel facts) and the records it emitted.
type Stream struct {
	E    *engine.Engine
	Recs []any
}

// NewStream returns an engine that collects its records in Recs.
func NewStream() *Stream {
	s := &Stream{}
	s.E = engine.New(kernel.Linux618(), func(r any) { s.Recs = append(s.Recs, r) })
	return s
}

// Syscalls returns the syscall records emitted so far.
func (s *Stream) Syscalls() []*record.Syscall { return only[*record.Syscall](s.Recs) }

// Persisted returns the persisted records emitted so far.
func (s *Stream) Persisted() []*record.Persisted { return only[*record.Persisted](s.Recs) }

func only[T any](recs []any) []T {
	var out []T
	for _, r := range recs {
		if c, ok := r.(T); ok {
			out = append(out, c)
		}
	}
	return out
}

// Op returns the EV_OP record of a call of thread id>>32 of pid 100 on
// inode 42 of Dev: offset and count are its arguments, ret its result,
// start and end its entry and exit times (ns).
func Op(id uint64, sys bpf.IopathOpSys, off, count uint64, ret int64, start, end uint64) *bpf.IopathOp {
	return &bpf.IopathOp{Type: uint32(bpf.IopathEvTypeEV_OP), Sys: uint32(sys), Pid: 100, Tid: uint32(id >> 32),
		OpId: id, StartNs: start, EndNs: end, Ret: ret, Fd: 3, Offset: off, Count: count, Ino: 42, Dev: Dev}
}

// Named sets a call's comm and the path its record carries (an absolute
// path of at most 8 names of at most 47 bytes, as the kernel walks it).
func Named(o *bpf.IopathOp, comm, path string) *bpf.IopathOp {
	o.Comm = [16]int8{}
	for i := range min(len(comm), 15) {
		o.Comm[i] = int8(comm[i])
	}
	names := strings.Split(strings.TrimPrefix(path, "/"), "/")
	o.PathDepth, o.PathDone, o.Path = uint32(len(names)), 1, [8][48]int8{}
	for i, name := range names {
		for j := range min(len(name), 47) {
			o.Path[len(names)-1-i][j] = int8(name[j])
		}
	}
	return o
}

// AddRange appends a page range (engine.RangeAdded or engine.RangeDirtied)
// to a call's record and updates the kernel's exact counts as the BPF
// programs do: pages added, added pages inside the request, pages dirtied.
func AddRange(o *bpf.IopathOp, index uint64, nr uint32, flags uint32) {
	o.Ranges[o.NrRanges].Index = index
	o.Ranges[o.NrRanges].Nr = nr
	o.Ranges[o.NrRanges].Flags = flags
	o.NrRanges++
	if flags != engine.RangeAdded {
		o.DirtiedPages += nr
		return
	}
	o.PagesAdded += nr
	if o.Count > 0 {
		first, last := o.Offset>>12, (o.Offset+o.Count-1)>>12
		lo, hi := max(index, first), min(index+uint64(nr)-1, last)
		if lo <= hi {
			o.PagesInRange += uint32(hi - lo + 1)
		}
	}
}

// WriteOp returns the record of a write(2) of n bytes at off (times 10-20 ns)
// that dirtied the given ranges.
func WriteOp(id uint64, off uint64, n int64, dirtied ...record.PageRange) *bpf.IopathOp {
	o := Op(id, bpf.IopathOpSysSYS_WRITE, off, uint64(n), n, 10, 20)
	for _, d := range dirtied {
		AddRange(o, d.Index, d.Pages, engine.RangeDirtied)
	}
	return o
}

// Own is one bio of a request, as EV_RQ_ISSUE lists it: the call that
// queued it (0 for none), its bio pointer, place, size, queue time and
// ownership flags (engine.OwnWriteback, engine.OwnJournal). Pid 0 means 100.
type Own struct {
	Op     uint64
	Bio    uint64
	Sector uint64
	Bytes  uint32
	Queue  uint64
	Flags  uint32
	Pid    uint32
}

// Issue returns the EV_RQ_ISSUE record of request rq issued at ts with
// request flags flags, carrying the given bios.
func Issue(rq uint64, ts uint64, flags uint32, owns ...Own) *bpf.IopathRqIssueEv {
	ev := &bpf.IopathRqIssueEv{Type: uint32(bpf.IopathEvTypeEV_RQ_ISSUE), Dev: Dev, Rq: rq, Ts: ts, CmdFlags: flags}
	for i, o := range owns {
		ev.Own[i].OpId = o.Op
		ev.Own[i].Bio = o.Bio
		ev.Own[i].Sector = o.Sector
		ev.Own[i].Bytes = o.Bytes
		ev.Own[i].QueueNs = o.Queue
		ev.Own[i].Flags = o.Flags
		ev.Own[i].Pid = max(o.Pid, 100)
		ev.Bytes += o.Bytes
		if i == 0 {
			ev.Sector = o.Sector
		}
	}
	ev.NrOwn = uint32(len(owns))
	ev.NrBios = uint32(len(owns))
	return ev
}

// Done returns the EV_RQ_COMPLETE record of request rq at ts with a
// blk_status_t (0: success, 10: BLK_STS_IOERR).
func Done(rq, ts uint64, status uint32) *bpf.IopathRqDoneEv {
	return &bpf.IopathRqDoneEv{Type: uint32(bpf.IopathEvTypeEV_RQ_COMPLETE), Rq: rq, Ts: ts, Error: status}
}

// Match is one run of tracked dirty pages a writeback bio carries: the
// write call that dirtied them, where, how many, when, and how many pages
// of their folios the bio writes (BioPages: less than Nr when the bio
// carries part of a large folio).
type Match struct {
	Op       uint64
	Index    uint64
	Nr       uint32
	Dirtied  uint64
	BioPages uint32
}

// WBBio returns the EV_WB_BIO record of writeback bio bio of inode ino,
// queued at ts by worker tid ("kworker") for call opID (an fsync-family
// call, or 0 for the flusher), carrying the given dirty pages of pid 100.
func WBBio(bio uint64, ino uint64, tid uint32, opID uint64, ts uint64, ms ...Match) *bpf.IopathWbBioEv {
	ev := &bpf.IopathWbBioEv{Type: uint32(bpf.IopathEvTypeEV_WB_BIO), Dev: Dev, Bio: bio, Ino: ino, Ts: ts, OpId: opID, Tid: tid}
	copy(ev.Comm[:], []int8{'k', 'w', 'o', 'r', 'k', 'e', 'r'})
	for i, m := range ms {
		ev.Match[i].OpId = m.Op
		ev.Match[i].Index = m.Index
		ev.Match[i].Nr = m.Nr
		ev.Match[i].DirtiedNs = m.Dirtied
		ev.Match[i].BioPages = m.BioPages
		ev.Match[i].Pid = 100
		ev.Pages += m.Nr
	}
	ev.NrMatch = uint32(len(ms))
	return ev
}

// Gone returns the EV_DIRTY_GONE record of nr tracked dirty pages of call
// opID (pid 100, inode 42) that left the page cache at index before any
// writeback (truncate, hole punch, eviction).
func Gone(opID, index uint64, nr uint32, ts uint64) *bpf.IopathDirtyGoneEv {
	return &bpf.IopathDirtyGoneEv{Type: uint32(bpf.IopathEvTypeEV_DIRTY_GONE), Dev: Dev, Ino: 42, Index: index, OpId: opID, Ts: ts, Nr: nr, Pid: 100}
}

// WBStart returns the EV_WB_START record of a flusher work item of worker
// tid with an enum wb_reason value (Linux 6.18: 3 = periodic).
func WBStart(tid uint32, reason uint32, ts uint64) *bpf.IopathWbStartEv {
	return &bpf.IopathWbStartEv{Type: uint32(bpf.IopathEvTypeEV_WB_START), Tid: tid, Reason: reason, Ts: ts}
}

// Faults returns the fault records emitted so far.
func (s *Stream) Faults() []*record.Fault { return only[*record.Fault](s.Recs) }

// Fault returns the EV_OP record of a page fault (bpf/fault.c) of thread
// id>>32 of pid 100 at user address addr, mapping page index of inode 42
// of Dev, with fault flags (engine.Fault*), from start to end (ns). Its
// request is the faulting page, as fault_begin sets it.
func Fault(id uint64, index, addr uint64, flags uint32, start, end uint64) *bpf.IopathOp {
	o := Op(id, bpf.IopathOpSysSYS_FAULT, index<<12, 4096, 0, start, end)
	o.Fd, o.FaultAddr, o.FaultFlags = -1, addr, flags|engine.FaultEnded|engine.FaultFilemapSeen
	return o
}

// Requests returns the asynchronous request records emitted so far.
func (s *Stream) Requests() []*record.Request { return only[*record.Request](s.Recs) }

// Iocb is one iocb of a synthetic io_submit: its user address, user data,
// offset and length (a read: IOCB_CMD_PREAD, on fd 3).
type Iocb struct {
	Addr, UserData uint64
	Off, Bytes     uint64
}

// AioSubmit returns the EV_AIO_SUBMIT record of an io_submit of "app", pid 100,
// thread call>>32, on ring ctx, that submitted ret of the iocbs (the first
// AIO_PER_EV of them) between start and end.
func AioSubmit(call, ctx uint64, ret int64, start, end uint64, cbs ...Iocb) *bpf.IopathAioSubmitEv {
	ev := &bpf.IopathAioSubmitEv{Type: uint32(bpf.IopathEvTypeEV_AIO_SUBMIT), Pid: 100, Tid: uint32(call >> 32), Nr: uint32(len(cbs)),
		OpId: call, Ctx: ctx, StartNs: start, EndNs: end, Ret: ret, N: uint32(len(cbs))}
	copy(ev.Comm[:], []int8{'a', 'p', 'p'})
	for i, c := range cbs {
		ev.Iocb[i] = bpf.IopathAioIocb{Iocb: c.Addr, UserData: c.UserData, Offset: int64(c.Off), Nbytes: c.Bytes, Fd: 3}
	}
	return ev
}

// UringEnter returns the EV_URING_ENTER record of an io_uring_enter call
// (op_id call) of pid 100's thread call>>32 that ran from start to end.
func UringEnter(call uint64, toSubmit uint32, ret int64, minComplete, flags uint32, start, end uint64) *bpf.IopathUringEnterEv {
	ev := &bpf.IopathUringEnterEv{Type: uint32(bpf.IopathEvTypeEV_URING_ENTER), Pid: 100, Tid: uint32(call >> 32), ToSubmit: toSubmit,
		OpId: call, StartNs: start, EndNs: end, Ret: ret, MinComplete: minComplete, Flags: flags}
	copy(ev.Comm[:], []int8{'a', 'p', 'p'})
	return ev
}

// Reaped is one io_event an io_getevents returned.
type Reaped struct {
	Addr, UserData uint64
	Res            int64
}

// AioReap returns the EV_AIO_REAP record of an io_getevents of pid 100 on
// ring ctx that returned evs at ts.
func AioReap(ctx, ts uint64, evs ...Reaped) *bpf.IopathAioReapEv {
	ev := &bpf.IopathAioReapEv{Type: uint32(bpf.IopathEvTypeEV_AIO_REAP), Pid: 100, Tid: 100, Ctx: ctx, Ts: ts,
		Ret: int64(len(evs)), N: uint32(len(evs)), MinNr: 1}
	for i, e := range evs {
		ev.Ev[i] = bpf.IopathAioEvent{UserData: e.UserData, Iocb: e.Addr, Res: e.Res}
	}
	return ev
}
