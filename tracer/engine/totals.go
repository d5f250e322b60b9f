package engine

import (
	"sort"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

func (e *Engine) pid(pid uint32, comm string) *record.PidSummary {
	ps := e.pids[pid]
	if ps == nil {
		ps = &record.PidSummary{Pid: pid}
		e.pids[pid] = ps
	}
	if comm != "" {
		ps.Comm = comm
	}
	return ps
}

func (e *Engine) file(k fileKey) *record.FileSummary {
	fs := e.files[k]
	if fs == nil {
		fs = &record.FileSummary{Dev: kernel.Dev(uint32(k.dev)), Ino: k.ino, Generation: e.renames.gens[k]}
		e.files[k] = fs
	}
	if fs.Path == "" {
		fs.Path = e.paths[k]
	}
	return fs
}

func (e *Engine) account(rec *record.Syscall, kdev uint32, readBytes uint64) {
	var writeBytes uint64
	for _, b := range rec.Bios {
		if b.Rwbs != "" && b.Rwbs[0] != 'R' && b.Rwbs[0] != 'D' { // a discard (D, DE) moves no data
			writeBytes += uint64(b.Bytes)
		}
	}
	add := func(t *record.Totals) {
		t.Calls++
		t.StreamedCalls++
		t.BytesRequested += requestedBytes(rec)
		if rec.ReturnedBytes > 0 {
			t.BytesReturned += uint64(rec.ReturnedBytes)
		}
		class := record.ClassOf(rec.Syscall)
		if splicedInto(rec) {
			class = record.ClassWrite
		}
		if class == record.ClassRead {
			// Cache hits and misses are the read side's; a write's
			// inserted pages are new pages to be dirtied.
			t.PagesHit += rec.Cache.PagesHit
			t.PagesMissed += rec.Cache.PagesMissed
			t.PagesAdded += rec.Cache.PagesAdded
			t.PagesPrefetched += rec.Cache.PagesAdded - min(rec.Cache.PagesMissed, rec.Cache.PagesAdded)
		}
		t.DiskBytesRead += readBytes
		t.DiskBytesWrite += writeBytes
		if rec.OutIno == 0 {
			t.DirtiedPages += uint64(rec.DirtiedPages) // else the output's (accountCopy)
		}
		t.ThrottleNs += rec.ThrottleNs
		t.BlockedNs += rec.BlockedNs
		switch class {
		case record.ClassRead:
			t.ReadCalls++
			t.ReadBytesReq += requestedBytes(rec)
		case record.ClassWrite:
			t.WriteCalls++
		}
	}
	add(&e.pid(rec.Pid, rec.Comm).Totals)
	if rec.Ino != 0 {
		add(&e.file(fkey(kdev, rec.Ino)).Totals)
	}
}

// splicedInto says whether a splice's traced file is its output: from a
// pipe into a file, bpf/syscalls.c traces the file side, fd_out, and the
// pages the call dirtied are that file's own. Such a call wrote the file:
// counted as a write, its inserted pages no read misses (measured: 16
// splices of 64 KiB into a new file were 16 reads of it, 1 MiB asked, 256
// pages missed). One that dirtied no page (it overwrote dirty pages) cannot
// be told from a read of the file into a pipe and stays one.
func splicedInto(rec *record.Syscall) bool {
	return rec.Syscall == "splice" && rec.OutIno != 0 && rec.OutIno == rec.Ino && rec.OutDev == rec.Dev
}

// requestedBytes is what a call asked for, as the totals sum it: an
// in-kernel copy's length is a bound (cp asks copy_file_range for up to
// SSIZE_MAX bytes), so its bytes copied count instead.
func requestedBytes(rec *record.Syscall) uint64 {
	if record.IsCopy(rec.Syscall) && rec.ReturnedBytes >= 0 {
		return uint64(rec.ReturnedBytes)
	}
	return rec.RequestedBytes
}

// accountCopy charges the pages an in-kernel copy dirtied to its output
// file's row (outKdev: its kernel dev_t), and to the process: they are its
// dirtied pages.
func (e *Engine) accountCopy(rec *record.Syscall, outKdev uint32) {
	if rec.OutIno == 0 {
		return
	}
	e.pid(rec.Pid, rec.Comm).DirtiedPages += uint64(rec.DirtiedPages)
	fs := e.file(fkey(outKdev, rec.OutIno))
	fs.DirtiedPages += uint64(rec.DirtiedPages)
	if rec.OutPath != "" {
		fs.Path = rec.OutPath
	}
}

// Summary builds the end-of-trace totals (losses and attach filled by the caller).
func (e *Engine) Summary() *record.Summary {
	s := &record.Summary{Type: record.TypeSummary, MapEvictions: map[string]uint64{}, Truncations: map[string]uint64{},
		Attach: map[string]string{}}
	e.resolveRenamed() // names.go
	if e.lastTs > e.firstTs {
		s.DurationNs = e.lastTs - e.firstTs
	}
	for _, p := range e.pids {
		t := *p
		finish(&t.Totals)
		s.Pids = append(s.Pids, t)
	}
	sort.Slice(s.Pids, func(i, j int) bool { return s.Pids[i].Pid < s.Pids[j].Pid })
	for k, f := range e.files {
		t := *f
		if t.Path == "" {
			t.Path = e.paths[k]
		}
		finish(&t.Totals)
		s.Files = append(s.Files, t)
	}
	s.Files = append(s.Files, e.retiredFiles()...)
	sort.Slice(s.Files, func(i, j int) bool {
		if s.Files[i].Dev != s.Files[j].Dev {
			return s.Files[i].Dev < s.Files[j].Dev
		}
		return s.Files[i].Ino < s.Files[j].Ino
	})
	s.MapEvictions["pending_calls"] = e.counters.EvictedCalls
	s.MapEvictions["flush_requests"] = e.counters.FlushesForgotten
	s.MapEvictions["journal_commits"] = e.counters.CommitsForgotten
	s.UnattributedBios = e.counters.UnattributedBios
	s.UnattributedBytes = e.counters.UnattributedBytes
	s.UnattributedCauses = e.unattributedCauses()
	s.IncompleteBios = e.counters.IncompleteBios
	c := e.counters
	s.IncompleteCauses = map[string]uint64{"never_issued": c.NeverIssued,
		"no_completion": c.IncompleteBios - min(c.IncompleteBios, c.NeverIssued)}
	s.CompletionsUnseen = c.CompletionsUnseen
	s.DirtyPending = e.DirtyPending()
	s.HitsNotItemized = e.hitsNotItemized()
	return s
}

func finish(t *record.Totals) {
	t.PagesHitPrefetched = min(t.PagesHit, t.PagesPrefetched)
	t.PagesHitCached = t.PagesHit - t.PagesHitPrefetched
	if t.ReadBytesReq > 0 {
		t.Amplification = float64(t.DiskBytesRead) / float64(t.ReadBytesReq)
	}
}
