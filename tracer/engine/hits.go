package engine

import (
	"cmp"
	"slices"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

// Calls that are pure cache hits are not streamed: the kernel sums them per
// thread and file and folds the sums into hit_stats (bpf/op.h flush_hits).
// When hit_stats refuses a file (full), the sums go to the process's bucket
// in hit_other, or, if that is full too, to hit_unowned: the totals stay
// exact and the summary says what could not be itemized.

// addHitTotals adds a kernel hit aggregate to t.
func addHitTotals(t *record.Totals, write bool, v *bpf.IopathStatVal) {
	t.Calls += v.Calls
	t.BytesRequested += v.BytesRequested
	t.BytesReturned += v.BytesReturned
	if !write {
		t.PagesHit += v.Pages
		t.ReadCalls += v.Calls
		t.ReadBytesReq += v.BytesRequested
	} else {
		t.WriteCalls += v.Calls
	}
}

// AddHits folds the kernel's aggregate of calls that were not streamed
// (pure cache hits: no insertion, no bio, no wait) into the summary.
func (e *Engine) AddHits(k bpf.IopathStatKey, v bpf.IopathStatVal) {
	addHitTotals(&e.pid(k.Pid, "").Totals, k.Write != 0, &v)
	if ps := e.pids[k.Pid]; ps.Comm == "" {
		ps.Comm = cString(v.Comm[:])
	}
	fs := e.fileOfGen(k.Dev, k.Ino, k.Gen)
	addHitTotals(&fs.Totals, k.Write != 0, &v)
	if fs.Path == "" && v.Name[0] != 0 {
		fs.Path = ".../" + cString(v.Name[:]) // only the name: hits are not streamed with their path
	}
}

// AddHitsNotItemized folds hits the kernel could count only per process
// (hit_other; pid 0: hit_unowned, no process) into that process's totals
// and lists them in the summary's hits_not_itemized. Empty aggregates are
// ignored.
func (e *Engine) AddHitsNotItemized(pid uint32, write bool, v bpf.IopathStatVal) {
	if v.Calls == 0 {
		return
	}
	comm := cString(v.Comm[:])
	if pid != 0 {
		ps := e.pid(pid, "")
		addHitTotals(&ps.Totals, write, &v)
		if ps.Comm == "" {
			ps.Comm = comm
		}
	}
	for i := range e.notItemized {
		if n := &e.notItemized[i]; n.Pid == pid && n.Write == write {
			n.Calls += v.Calls
			n.BytesRequested += v.BytesRequested
			n.BytesReturned += v.BytesReturned
			n.Pages += v.Pages
			return
		}
	}
	e.notItemized = append(e.notItemized, record.HitsNotItemized{Pid: pid, Comm: comm, Write: write, Calls: v.Calls,
		BytesRequested: v.BytesRequested, BytesReturned: v.BytesReturned, Pages: v.Pages})
}

// hitsNotItemized lists the summary's hits_not_itemized, by pid and
// direction (never nil: the JSON shows an empty list).
func (e *Engine) hitsNotItemized() []record.HitsNotItemized {
	out := append([]record.HitsNotItemized{}, e.notItemized...)
	slices.SortFunc(out, func(a, b record.HitsNotItemized) int {
		if c := cmp.Compare(a.Pid, b.Pid); c != 0 {
			return c
		}
		return cmp.Compare(b2i(a.Write), b2i(b.Write))
	})
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fileOfGen is the summary row of file (dev, ino) of generation gen, for
// the kernel's aggregates keyed by i_generation (hit_stats, fault_stats):
// the current row of its inode number, unless gen is another file's (a
// deleted file whose inode number was reused), whose row is kept apart
// (names.go), or made apart here when no record named it.
func (e *Engine) fileOfGen(kdev uint32, ino uint64, gen uint32) *record.FileSummary {
	key := fkey(kdev, ino)
	if e.sameInode(key, gen) {
		return e.file(key)
	}
	dev := kernel.Dev(kdev)
	for i := range e.renames.retired {
		if f := &e.renames.retired[i]; f.Dev == dev && f.Ino == ino && f.Generation == gen {
			return f
		}
	}
	e.renames.retired = append(e.renames.retired, record.FileSummary{Dev: dev, Ino: ino, Generation: gen})
	return &e.renames.retired[len(e.renames.retired)-1]
}
