// Package engine joins the kernel's events into records, in plain Go: it is
// fed decoded events (package bpf's structs) in ring-buffer order and needs
// no kernel, so tests drive it with synthetic streams (enginetest).
//
// One file per join:
//   - calls.go: a call's record and its release (call ↔ its bios);
//   - requests.go: block requests, issue to completion (request ↔ bios);
//   - endunseen.go: requests still held at the end beyond their disk's own
//     count of requests in flight (completed unseen);
//   - flush.go: device cache flushes (flush request ↔ the calls it served),
//     and completions that arrive before their issue;
//   - pagecache.go: a call's page-cache hits, misses and insertions;
//   - readahead.go: the call's readahead windows (kernel or derived);
//   - writeback.go: dirty pages ↔ writeback bios ↔ persisted records;
//   - persistwait.go: persisted records waiting for their file's path;
//   - totals.go: per-process and per-file totals, the summary;
//   - unattributed.go: bios queued outside any traced call, by cause;
//   - pools.go: caches of repeated strings and free lists of pending state;
//   - names.go: names of the kernel's numbers, C strings and paths, and
//     the files' names across renames and reused inodes.
package engine

import (
	"sync/atomic"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
)

// Engine joins the kernel's events into per-call stories. It is plain Go,
// fed decoded events in ring-buffer order, and needs no kernel: tests drive
// it with synthetic streams.
//
// The joins:
//   - call ↔ bios: every owned bio names its call (op_id) in EV_RQ_ISSUE; a
//     call's record is released once its EV_OP has arrived and every bio it
//     queued (op.bios_queued) has completed, or when Tick/Flush gives up.
//   - request ↔ completion: keyed by the request pointer (a recycled tag), in
//     stream order; a second issue before completion is a requeue.
//   - dirty page ↔ writeback: the kernel joins pages in BPF (EV_WB_BIO
//     carries the write calls whose folios a bio writes); completion of its
//     request makes them persisted.
type Engine struct {
	K *kernel.Kernel
	// Out receives *record.Syscall, *record.Writeback and *record.Persisted
	// (and *record.Fault, *record.Request, *record.AsyncCall)
	// records in the order they become complete.
	Out func(rec any)
	// compat: the compat BPF build is loaded (SetCompat; asynccalls.go).
	compat bool
	// Unavailable lists record fields this kernel cannot measure (a hook
	// with no mechanism); they are reported as such, not as zeros.
	Unavailable []string
	// AllCalls (--all): every libaio / io_uring system call gets its
	// record (asynccalls.go); otherwise a submission call only when one of
	// its requests touched the disk, or it failed.
	AllCalls bool
	// FaultUnavailable: the same for fault records (record.Fault).
	FaultUnavailable []string
	// InferFaultRetry: the filemap_fault hook is a tracepoint, which has no
	// return value, so a retry shows only as a second filemap event; when
	// the second pass has none (another thread mapped the page meanwhile)
	// the retry is inferred from the first pass (faults.go, retryImplied).
	InferFaultRetry bool
	// HoldNs is how long a call waits for its bios before it is released
	// with the ones seen so far (default 10 s of kernel time: mq-deadline can
	// hold a request for seconds under load).
	HoldNs uint64
	// MaxPending bounds the calls held waiting for their record or their
	// bios (entries; default, and when ≤ 0, 131072: twice the kernel's
	// bio_owners map, so only lost events fill it). When full, the oldest
	// eighth is evicted: calls with a record are released with the bios
	// seen so far, bios whose call never arrived are dropped; both are
	// counted in Counters.EvictedCalls (summary:
	// map_evictions.pending_calls).
	MaxPending int
	// WriteCache, if set, replaces the sysfs lookup of a device's
	// queue/write_cache (tests).
	WriteCache func(kdev uint32) string
	// UnattributedBio, if set, gets each bio a traced process queued outside
	// any traced call (the summary's unattributed_bios, writeback excluded)
	// once its request completed, with the pid that queued it and why it is
	// unattributed (the summary's unattributed_causes: syscall:NAME, exec,
	// ...): the block-level view of IO no record carries, such as libaio's
	// io_submit on a kernel without request hooks (the queue-depth demos).
	// Called on the reader's goroutine.
	UnattributedBio func(pid uint32, cause string, b record.Bio)

	ops      map[uint64]*pendingOp
	rqs      map[uint64]*pendingRq
	wbBios   map[uint64]*wbBio      // by bio pointer, until its request completes
	splitOf  map[uint64]uint64      // split-off writeback bio -> original bio
	workers  map[uint32]workerState // writeback worker tid -> current work
	paths    map[fileKey]string
	pids     map[uint32]*record.PidSummary
	files    map[fileKey]*record.FileSummary
	dirty    map[uint64]int64   // write op_id -> dirtied pages not yet persisted or removed
	dirtyTot atomic.Int64       // sum of the positive values of dirty (read by other goroutines)
	dirtyOf  map[uint64]fileKey // write op_id -> its file
	// faultOf: a write fault's op_id -> where it stored, while its dirty
	// pages are tracked (their persisted records name the fault).
	faultOf map[uint64]record.FaultRef
	// memoryWrites counts writes to memory-only filesystems (tmpfs): never written back.
	memoryWrites atomic.Int64
	lastTs       uint64
	firstTs      uint64
	counters     Counters
	notItemized  []record.HitsNotItemized       // see AddHitsNotItemized (hits.go)
	flush        flushState                     // device cache flushes (flush.go)
	orphans      orphanState                    // completions seen before their issue (flush.go)
	syncWB       syncWBState                    // flusher bios written for sync (syncwb.go)
	renames      renameState                    // earlier names and generations of files (names.go)
	unattr       map[string]*record.CauseTotals // unattributed bios by cause (unattributed.go)
	async        asyncState                     // libaio requests (asyncio.go)
	pathWait     []waitingPersisted             // persisted records waiting for their file's path (persistwait.go)
	pathWaitOps  map[uint64]int                 // how many of them wait for each op

	// Caches of strings every record repeats (see intern). A stream is
	// mostly one process on one filesystem: the last comm and filesystem
	// are checked before any map.
	devNames  map[uint32]string
	rwbsNames map[uint32]string
	names     map[string]string
	lastComm  string
	lastMagic uint64
	lastFS    string // FSName(lastMagic); FSName(0) is "", the zero state
	// Free lists: a stream of calls reuses the same few pending objects
	// instead of allocating three per call (see putOp, putRq, unref).
	freeOps  []*pendingOp
	freeRqs  []*pendingRq
	freeBios []*bioRef
}

// Bounds of the engine's caches and free lists (entries). A full cache is
// cleared, not evicted: a miss costs one allocation, never a wrong string.
const (
	maxCached  = 4096
	maxFree    = 1024
	defPending = 1 << 17
	evictShare = 8 // a full pending map evicts its oldest 1/evictShare
)

// Counters are the engine's own losses and oddities.
type Counters struct {
	UnattributedBios  uint64 // bios of traced processes queued outside any traced call
	UnattributedBytes uint64 // ... their bytes at issue
	IncompleteBios    uint64 // bios released without a completion
	// ... of which no issue of theirs was seen (NeverIssued); the rest
	// waited in vain.
	NeverIssued uint64
	// CompletionsUnseen: bios whose request's address was issued again as
	// a new request before their completion arrived: completed, unseen
	// (not in IncompleteBios).
	CompletionsUnseen uint64
	// RequestsUnseenAtEnd: requests still held at the end beyond their
	// disk's own count of requests in flight, completed unseen
	// (endunseen.go); their bios are in CompletionsUnseen.
	RequestsUnseenAtEnd uint64
	Requeues            uint64
	OrphanCompletes     uint64 // completions of requests never seen issued
	EvictedCalls        uint64 // pending calls evicted because the pending map was full (MaxPending)
	FlushesForgotten    uint64 // flush request runs forgotten while needed (flushreq.go)
	CommitsForgotten    uint64 // journal commits forgotten before a call needed them (flushreq.go)
}

// fileKey names a file. dev is a kernel dev_t widened to 64 bits so the
// struct has no padding: maps then hash it in one pass instead of field by
// field (a per-event cost: three lookups per call).
type fileKey struct {
	dev uint64
	ino uint64
}

func fkey(dev uint32, ino uint64) fileKey { return fileKey{uint64(dev), ino} }

// New returns an engine writing records to out.
func New(k *kernel.Kernel, out func(any)) *Engine {
	return &Engine{
		K: k, Out: out, HoldNs: 10e9, MaxPending: defPending,
		ops: map[uint64]*pendingOp{}, rqs: map[uint64]*pendingRq{}, wbBios: map[uint64]*wbBio{}, splitOf: map[uint64]uint64{},
		workers: map[uint32]workerState{}, paths: map[fileKey]string{}, pids: map[uint32]*record.PidSummary{},
		files: map[fileKey]*record.FileSummary{}, dirty: map[uint64]int64{}, dirtyOf: map[uint64]fileKey{}, faultOf: map[uint64]record.FaultRef{},
		devNames: map[uint32]string{}, rwbsNames: map[uint32]string{}, names: map[string]string{},
	}
}

func (e *Engine) seen(ts uint64) {
	if ts > e.lastTs {
		e.lastTs = ts
	}
	if e.firstTs == 0 || (ts != 0 && ts < e.firstTs) {
		e.firstTs = ts
	}
}

// Counters returns the engine's loss counters.
func (e *Engine) Counters() Counters {
	c := e.counters
	c.OrphanCompletes += uint64(len(e.orphans.rqs) + len(e.orphans.flushes)) // kept, issue not seen (yet)
	return c
}

// Pending returns how many calls wait for their record or their bios, and
// how many issued requests wait for their completion: the reader drains
// the ring buffer until both are 0 (or it gives up).
func (e *Engine) Pending() (calls, requests int) { return len(e.ops), len(e.rqs) }
