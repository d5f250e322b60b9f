package aggregate

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/iopath/iopath/bpf"
	"golang.org/x/sys/unix"
)

// Maps are the BPF maps of bpf/agg.h.
type Maps struct {
	Procs, Files, Other, Devs, Global *ebpf.Map
	Rqs                               *ebpf.Map // requests in flight: issue time (CLOCK_MONOTONIC ns)
}

// agg_procs keys (bpf/agg.h): bits 0-21 the tgid; with bit 31 (AGG_ENDED)
// an ended part of the process (before an exec or a rename of its main
// thread), numbered modulo 512 in bits 22-30.
const (
	ended    = 1 << 31
	partBits = 22
	pidMask  = 1<<partBits - 1
	parts    = 512
)

// EndedKey is the Snapshot.Procs key of part n of process pid once ended.
func EndedKey(pid, n uint32) uint32 { return pid&pidMask | ended | (n%parts)<<partBits }

// Reader reads snapshots from the maps. It removes the entries of exited
// processes from agg_procs (keeping their counts in Retired), so that a
// long run's map holds only live processes. Not safe for concurrent use.
type Reader struct {
	M             Maps
	retired       IO
	retiredByComm map[string]*IO
	// alive says whether a process still exists (tests replace it).
	alive func(pid uint32) bool
}

// NewReader returns a Reader of m.
func NewReader(m Maps) *Reader {
	return &Reader{M: m, retiredByComm: map[string]*IO{}, alive: pidAlive}
}

func pidAlive(pid uint32) bool {
	err := unix.Kill(int(pid), 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// Read returns the cumulative aggregates now.
func (r *Reader) Read() (*Snapshot, error) {
	s := &Snapshot{At: time.Now(), Procs: map[uint32]*Proc{}, Files: map[FileKey]*File{}, Devices: map[DevKey]*Device{}}
	var pid uint32
	var v bpf.IopathAggIo
	var gone []uint32
	it := r.M.Procs.Iterate()
	for it.Next(&pid, &v) {
		// A key with bit 31 holds an ended part (bpf/agg.h AGG_ENDED):
		// ended, like an exited process. A live key found gone is read
		// again: the value the iteration read may be older than the
		// process's end (between the two, on a busy CPU, a process can
		// exec, run a short program and exit: 5.10 VM, TestTopExec), and
		// the entry is deleted below; read after the end, it is final.
		exited := pid&ended != 0
		if !exited && !r.alive(pid) {
			exited = true
			if err := r.M.Procs.Lookup(pid, &v); errors.Is(err, ebpf.ErrKeyNotExist) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("reading agg_procs: %w", err)
			}
		}
		p := &Proc{Pid: pid & pidMask, Comm: cString(v.Name[:]), Part: v.Segments, IO: ioOf(&v), Exited: exited}
		if exited {
			gone = append(gone, pid)
		}
		s.Procs[pid] = p
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading agg_procs: %w", err)
	}
	ended, err := r.missedParts(s.Procs)
	if err != nil {
		return nil, err
	}
	gone = append(gone, ended...)
	for _, pid := range gone {
		// Deleted after the read: calls of a process that is gone
		// cannot come any more (a reused pid's first calls between the
		// read and the delete would be lost; pids are reused last).
		if err := r.M.Procs.Delete(pid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil, fmt.Errorf("removing exited process %d from agg_procs: %w", pid, err)
		}
		p := s.Procs[pid]
		r.retired.Add(&p.IO)
		c := r.retiredByComm[p.Comm]
		if c == nil {
			c = &IO{}
			r.retiredByComm[p.Comm] = c
		}
		c.Add(&p.IO)
	}
	s.Retired = r.retired
	s.RetiredByComm = make(map[string]*IO, len(r.retiredByComm))
	for c, io := range r.retiredByComm {
		x := *io
		s.RetiredByComm[c] = &x
	}
	var fk bpf.IopathAggFileKey
	fit := r.M.Files.Iterate()
	for fit.Next(&fk, &v) {
		k := FileKey{Dev: fk.Dev, Ino: fk.Ino, Gen: fk.Gen}
		s.Files[k] = &File{FileKey: k, Name: cString(v.Name[:]), IO: ioOf(&v)}
	}
	if err := fit.Err(); err != nil {
		return nil, fmt.Errorf("reading agg_files: %w", err)
	}
	for i, dst := range []*IO{&s.OtherProcs, &s.OtherFiles, &s.GoneProcs} {
		if err := r.M.Other.Lookup(uint32(i), &v); err != nil {
			return nil, fmt.Errorf("reading agg_other: %w", err)
		}
		*dst = ioOf(&v)
	}
	var dk bpf.IopathAggDevKey
	var dv bpf.IopathAggDev
	dit := r.M.Devs.Iterate()
	for dit.Next(&dk, &dv) {
		k := DevKey{Dev: dk.Dev, Op: RqOp(dk.Op)}
		s.Devices[k] = &Device{DevKey: k, Requests: dv.Requests, Bytes: dv.Bytes, Errors: dv.Errors, D2CNs: dv.D2cNs,
			Q2CNs: dv.Q2cNs, Q2CUnknown: dv.Q2cUnknown, Unseen: dv.Unseen, D2C: dv.D2c, Q2C: dv.Q2c}
	}
	if err := dit.Err(); err != nil {
		return nil, fmt.Errorf("reading agg_devs: %w", err)
	}
	var g bpf.IopathAggGlobal
	if err := r.M.Global.Lookup(uint32(0), &g); err != nil {
		return nil, fmt.Errorf("reading agg_g: %w", err)
	}
	s.Global = Global{DirtyToDisk: g.DirtyToDisk, DirtyToDiskNs: g.DirtyToDiskNs, Overflow: g.Overflow}
	for i := range Ops {
		for c := range 2 {
			s.Global.SyscallLat[i][c] = g.SyscallLat[i][c]
			s.Global.SyscallLatNs[i][c] = g.SyscallLatNs[i][c]
		}
	}
	return s, nil
}

// missedParts adds to procs the ended parts of its live processes that the
// iteration did not return: an exec or rename inserts the ended part
// (bpf/agg.h agg_split) before it counts it in the live entry's Part, and
// a hash map iteration misses keys inserted behind it. Read in the same
// snapshot as the live entry that no longer holds them, each part's calls
// are counted once (Delta subtracts the live entry's previous value from
// it). Ended parts are never changed once inserted, and the reader deletes
// each one it reads: one still in the map is unread. It returns the keys
// added.
func (r *Reader) missedParts(procs map[uint32]*Proc) ([]uint32, error) {
	var added []uint32
	var v bpf.IopathAggIo
	for key, p := range procs {
		if key&ended != 0 {
			continue
		}
		for n := p.Part; n > 0 && p.Part-n < parts; n-- {
			k := EndedKey(p.Pid, n-1)
			if procs[k] != nil {
				continue
			}
			err := r.M.Procs.Lookup(k, &v)
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				break // read and deleted by an earlier read, like the parts before it
			}
			if err != nil {
				return nil, fmt.Errorf("reading agg_procs: %w", err)
			}
			procs[k] = &Proc{Pid: p.Pid, Comm: cString(v.Name[:]), Part: v.Segments, IO: ioOf(&v), Exited: true}
			added = append(added, k)
		}
	}
	return added, nil
}

// ioOf converts the kernel's value.
func ioOf(v *bpf.IopathAggIo) IO {
	io := IO{
		Calls: v.Calls, Errors: v.Errors, Bytes: v.Bytes, LatencyNs: v.LatencyNs,
		HitPages: v.HitPages, MissPages: v.MissPages, ReadaheadPages: v.RaPages,
		DiskReadBytes: v.DiskReadBytes, DiskWriteBytes: v.DiskWriteBytes, WritebackBytes: v.WbBytes,
		DirtiedPages: v.DirtiedPages, CleanedPages: v.CleanedPages, ThrottleNs: v.ThrottleNs, NoBdevPages: v.NobdevPages,
		DirectReadBytes: v.DirectReadBytes,
	}
	for i := range Ops {
		io.Lat[i] = v.Lat[i]
	}
	return io
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// InflightBefore counts the requests in flight that were issued before
// ns (CLOCK_MONOTONIC).
func (r *Reader) InflightBefore(ns uint64) (int, error) {
	var rq uint64
	var v bpf.IopathAggRq
	n := 0
	it := r.M.Rqs.Iterate()
	for it.Next(&rq, &v) {
		if v.IssueNs < ns {
			n++
		}
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("reading agg_rqs: %w", err)
	}
	return n, nil
}

// Settled reads the aggregates once every request issued before now (ns,
// CLOCK_MONOTONIC) has completed, waiting at most wait: a cold read returns
// when its own folio is read, while the rest of its readahead may still be
// in flight.
func (r *Reader) Settled(now uint64, wait time.Duration) (*Snapshot, error) {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n, err := r.InflightBefore(now)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
	}
	return r.Read()
}
