// Package record is iopath's output contract: the records the engine
// (tracer/engine) builds and render prints, one JSON object per line with
// --json. It holds data only, and the one classification of syscalls by
// name that engine and render share.
package record

// Records are what iopath prints: one JSON object per line with --json. The
// field names are a documented contract (README.md, "JSON records").
//
// Units: *_ns are nanoseconds; time_ns, queue_ns, issue_ns, complete_ns,
// dirtied_ns and persisted_ns are CLOCK_MONOTONIC timestamps (the kernel's
// bpf_ktime_get_ns); sector is in 512-byte units; index/pages are 4 KiB
// page-cache pages; bytes are bytes.

// Syscall is one traced read/write/fsync-family call ("type":"syscall").
type Syscall struct {
	Type           Type   `json:"type"`
	OpID           uint64 `json:"op_id"`
	TimeNs         uint64 `json:"time_ns"`
	Pid            uint32 `json:"pid"`
	Tid            uint32 `json:"tid"`
	Comm           string `json:"comm"`
	Syscall        string `json:"syscall"`
	Fd             int64  `json:"fd"`
	Path           string `json:"path,omitempty"`
	Dev            string `json:"dev"`
	Ino            uint64 `json:"ino"`
	FS             string `json:"fs"` // filesystem type, from the superblock magic
	Offset         uint64 `json:"offset"`
	RequestedBytes uint64 `json:"requested_bytes"`
	ReturnedBytes  int64  `json:"returned_bytes"`
	Error          string `json:"error,omitempty"`
	DurationNs     uint64 `json:"duration_ns"`
	BlockedNs      uint64 `json:"blocked_ns"`
	Cache          Cache  `json:"cache"`
	Bios           []Bio  `json:"bios"`
	// Write-side fields (zero for reads).
	DirtiedPages         uint32       `json:"dirtied_pages"`
	DirtiedRanges        []PageRange  `json:"dirtied_ranges,omitempty"`
	OtherDirtiedPages    uint32       `json:"other_dirtied_pages"` // pages of other inodes (metadata, atime) dirtied during the call
	ThrottleNs           uint64       `json:"throttle_ns"`
	ThrottlePauses       uint32       `json:"throttle_pauses"`
	ThrottleMaxPauseNs   uint64       `json:"throttle_max_pause_ns"`
	ReadBeforeWritePages uint32       `json:"read_before_write_pages"`
	Unavailable          []string     `json:"unavailable,omitempty"`
	Truncated            *Truncations `json:"truncated,omitempty"`
	Direct               bool         `json:"direct"` // O_DIRECT: no page cache
	// Dsync (writes): the file was opened O_DSYNC or O_SYNC, so the write
	// returned only after its data (O_SYNC: and metadata) was durable, as
	// an fdatasync (fsync) would make it: its journal commit and device
	// flush are in its bios and device_flush, as a sync call's.
	Dsync bool `json:"dsync,omitempty"`
	// MemoryOnly (writes): the file's filesystem keeps its data only in
	// memory (tmpfs, ramfs, proc, ...): the pages written are the data's
	// only copy, not a cache of a disk, so they are neither hits nor misses
	// (cache.pages_hit and pages_missed are 0) and never written back.
	MemoryOnly bool `json:"memory_only,omitempty"`
	// Advice: madvise and fadvise64 calls' advice (willneed, random, ...).
	Advice string `json:"advice,omitempty"`
	// DeviceFlush, for fsync-family calls and Dsync writes: what became of the device's
	// volatile write cache (enum DeviceFlush: flushed, not_needed, none,
	// not_requested, no_block_device).
	DeviceFlush DeviceFlush `json:"device_flush,omitempty"`
	// SyncWriteback, for sync and syncfs: the writeback they started, which
	// the flusher threads do (their bios are in writeback records with
	// reason sync, not in this call's bios).
	SyncWriteback *SyncWriteback `json:"sync_writeback,omitempty"`
	// OutDev, OutIno, OutPath: an in-kernel copy's output file, when the
	// call dirtied its pages (the summary charges them to its row).
	OutDev  string `json:"out_dev,omitempty"`
	OutIno  uint64 `json:"out_ino,omitempty"`
	OutPath string `json:"out_path,omitempty"`
	// SyncFlags, for sync_file_range: what it asked for (WAIT_BEFORE,
	// WRITE, WAIT_AFTER joined by |; "none").
	SyncFlags string `json:"sync_flags,omitempty"`
}

// Cache is what the call did in the page cache.
type Cache struct {
	PagesRequested uint64      `json:"pages_requested"` // pages spanned by the bytes returned
	PagesHit       uint64      `json:"pages_hit"`       // requested pages already in the cache
	PagesMissed    uint64      `json:"pages_missed"`    // requested pages the call inserted
	PagesAdded     uint64      `json:"pages_added"`     // all pages inserted, readahead included
	AddedRanges    []PageRange `json:"added_ranges,omitempty"`
	Readahead      []Readahead `json:"readahead"`
	Lookups        uint32      `json:"lookups,omitempty"` // filemap_get_pages calls
}

// PageRange is a run of page-cache pages (index in 4 KiB pages).
type PageRange struct {
	Index uint64 `json:"index"`
	Pages uint32 `json:"pages"`
}

// Readahead is one readahead decision made during the call.
type Readahead struct {
	Kind       ReadaheadKind   `json:"kind"`        // sync | async | unknown
	StartIndex uint64          `json:"start_index"` // first page of the window
	Pages      uint32          `json:"pages"`       // window size in pages
	AsyncPages uint32          `json:"async_pages"` // pages left when the next async readahead triggers
	Source     ReadaheadSource `json:"source"`      // kernel | kernel (window from pages added) | derived
}

// Bio is one bio of a call or writeback, with its request's timing.
type Bio struct {
	Dev        string `json:"dev"`
	Sector     uint64 `json:"sector"`
	Bytes      uint32 `json:"bytes"`
	Rwbs       string `json:"rwbs"`
	QueueNs    uint64 `json:"queue_ns"`
	IssueNs    uint64 `json:"issue_ns"`
	CompleteNs uint64 `json:"complete_ns"` // 0: completion not seen
	// CompletedBeforeNs, when complete_ns is 0: the bio did complete, before
	// this time, when the kernel issued its request's address again as a new
	// request, but no BPF program saw the completion (docs/kernel-notes.md,
	// "Completions BPF never sees"); its complete_ns, d2c_ns, q2c_ns and
	// error are unavailable.
	CompletedBeforeNs uint64 `json:"completed_before_ns,omitempty"`
	Error             string `json:"error,omitempty"`
	// Derived latencies: D2C = issue→complete, Q2C = queue→complete.
	D2CNs        uint64 `json:"d2c_ns"`
	Q2CNs        uint64 `json:"q2c_ns"`
	Requeues     uint32 `json:"requeues,omitempty"`
	RequestBytes uint32 `json:"request_bytes"` // the whole request (merged bios included)
	RequestBios  uint32 `json:"request_bios"`
	// Kind, for fsync-family calls: data (file pages), metadata (rwbs M),
	// journal (queued by jbd2 while the call waited), flush (cache flush).
	Kind BioKind `json:"kind,omitempty"`
}

// Truncations counts what did not fit in the kernel's fixed-size records.
type Truncations struct {
	RangePages uint32 `json:"range_pages,omitempty"`
}

// Writeback is one bio of a writeback pass carrying tracked dirty pages ("type":"writeback").
type Writeback struct {
	Type         Type   `json:"type"`
	TimeNs       uint64 `json:"time_ns"`
	Worker       string `json:"worker"`
	WorkerTid    uint32 `json:"worker_tid"`
	Reason       Reason `json:"reason"`
	Dev          string `json:"dev"`
	Ino          uint64 `json:"ino"`
	Path         string `json:"path,omitempty"`
	OpID         uint64 `json:"op_id,omitempty"` // the fsync-family call that submitted it, if any
	Bios         []Bio  `json:"bios"`
	Pages        uint32 `json:"pages"`         // pages in the bio
	TrackedPages uint32 `json:"tracked_pages"` // of those, pages dirtied by traced calls or write faults
}

// Persisted says when the pages a write call dirtied reached the disk ("type":"persisted").
type Persisted struct {
	Type          Type    `json:"type"`
	OpID          uint64  `json:"op_id"`
	Pid           uint32  `json:"pid"`
	Dev           string  `json:"dev"`
	Ino           uint64  `json:"ino"`
	Path          string  `json:"path,omitempty"`
	Pages         uint32  `json:"pages"`         // pages of the dirty folios (the kernel's dirty accounting)
	BytesWritten  uint64  `json:"bytes_written"` // bytes of those folios the bio carried (a large folio may be written in part)
	Outcome       Outcome `json:"outcome"`       // written | failed | removed (truncated/evicted before writeback)
	DirtiedNs     uint64  `json:"dirtied_ns"`
	PersistedNs   uint64  `json:"persisted_ns,omitempty"`
	DirtyToDiskNs uint64  `json:"dirty_to_disk_ns,omitempty"`
	// PersistedBeforeNs, instead of persisted_ns: the request that wrote
	// the pages completed, but no BPF program saw its completion (its
	// address issued again, or at the end more requests held than its
	// disk counted in flight: the bios' completed_before_ns); the pages
	// reached the disk at the latest then. No dirty_to_disk_ns.
	PersistedBeforeNs uint64 `json:"persisted_before_ns,omitempty"`
	Reason            Reason `json:"reason,omitempty"`
	Worker            string `json:"worker,omitempty"`
	WorkerTid         uint32 `json:"worker_tid,omitempty"`
	Sector            uint64 `json:"sector,omitempty"`
	RequestBytes      uint32 `json:"request_bytes,omitempty"`
	ByOpID            uint64 `json:"by_op_id,omitempty"` // fsync-family call that wrote it
	Error             string `json:"error,omitempty"`
	// Fault: the pages were dirtied by a store through a shared mapping,
	// the write fault op_id names (a "fault" record), not by a call. Nil
	// for a call's pages (and for a fault's whose record had not arrived
	// yet when its pages were written, which the kernel's order makes rare).
	Fault *FaultRef `json:"fault,omitempty"`
}

// FaultRef says which write fault dirtied a Persisted record's pages.
type FaultRef struct {
	Address uint64 `json:"address"` // user address of the store
	Index   uint64 `json:"index"`   // page of the file it dirtied
}

// Summary closes a trace ("type":"summary").
type Summary struct {
	Type             Type              `json:"type"`
	DurationNs       uint64            `json:"duration_ns"`
	Pids             []PidSummary      `json:"pids"`
	Files            []FileSummary     `json:"files"`
	LostEvents       uint64            `json:"lost_events"`
	MapEvictions     map[string]uint64 `json:"map_evictions"`
	UnattributedBios uint64            `json:"unattributed_bios"`
	// UnattributedBytes: bytes of those bios; UnattributedCauses splits
	// them by why the kernel says they were queued: exec (during execve),
	// metadata (REQ_META), syscall:NAME (a system call iopath does not
	// trace), page_fault (no system call: mmap'ed or executable pages),
	// unknown (the user registers could not be read).
	UnattributedBytes  uint64                 `json:"unattributed_bytes"`
	UnattributedCauses map[string]CauseTotals `json:"unattributed_causes"`
	IncompleteBios     uint64                 `json:"incomplete_bios"`
	// IncompleteCauses splits incomplete_bios by why: never_issued (the call
	// queued it; no issue of its request was seen), no_completion (issued;
	// still without a completion when the call was released, at the end or
	// after 10 s).
	IncompleteCauses map[string]uint64 `json:"incomplete_causes"`
	// CompletionsUnseen counts bios of traced calls that completed without
	// a BPF program seeing the completion: the kernel issued their request's
	// address again as a new request (so it had ended the first), with no
	// requeue in between. They are not incomplete; each has
	// completed_before_ns and no device time.
	CompletionsUnseen uint64            `json:"completions_unseen"`
	Truncations       map[string]uint64 `json:"truncations"`
	Attach            map[string]string `json:"attach"`
	DirtyPending      uint64            `json:"dirty_pages_pending"` // tracked dirty pages not yet seen on disk
	// DirtyUnseen: pages counted as dirtied and not persisted at the end
	// although cachestat(2) says their file has no dirty page left: written
	// in a bio iopath did not see, or (map_evictions.dirty_pages > 0) never
	// followed because the dirty_pages map was full.
	DirtyUnseen uint64 `json:"dirty_pages_unseen"`
	// MissedRuns: per BPF program, runs the kernel skipped because the
	// program was already running on that CPU (preempted or interrupted):
	// events lost, never hidden.
	MissedRuns map[string]uint64 `json:"missed_runs"`
	// Diagnostics: write bios walked for tracked dirty pages, folios looked up, folios matched.
	Diagnostics map[string]uint64 `json:"diagnostics"`
	// HitsNotItemized: cache hits counted in their process's totals but in
	// no file's, because the kernel's per-file map (hit_stats) was full.
	HitsNotItemized []HitsNotItemized `json:"hits_not_itemized"`
}

// CauseTotals counts the unattributed bios of one cause (Summary.UnattributedCauses).
type CauseTotals struct {
	Bios  uint64 `json:"bios"`
	Bytes uint64 `json:"bytes"` // at issue
}

// HitsNotItemized are the not-streamed calls (pure cache hits) of one
// process and direction that the kernel could not count per file: they are
// in the process's totals and in no FileSummary. Pid 0: the per-process
// bucket was full too (map_evictions.hit_other), so they are in no
// process's totals either.
type HitsNotItemized struct {
	Pid            uint32 `json:"pid"`
	Comm           string `json:"comm,omitempty"`
	Write          bool   `json:"write"` // write family (else read family)
	Calls          uint64 `json:"calls"`
	BytesRequested uint64 `json:"bytes_requested"`
	BytesReturned  uint64 `json:"bytes_returned"`
	Pages          uint64 `json:"pages"` // pages covered by the returned bytes (reads: pages hit)
}

// Totals are shared by per-pid and per-file summaries.
type Totals struct {
	Calls          uint64 `json:"calls"`
	StreamedCalls  uint64 `json:"streamed_calls"` // calls printed as records; the rest were pure hits
	BytesRequested uint64 `json:"bytes_requested"`
	BytesReturned  uint64 `json:"bytes_returned"`
	PagesHit       uint64 `json:"pages_hit"`
	PagesMissed    uint64 `json:"pages_missed"`
	PagesAdded     uint64 `json:"pages_added"`
	// PagesPrefetched are pages calls added beyond what they asked for
	// (readahead). Of the hits, PagesHitPrefetched = min(hits, prefetched)
	// were served by that readahead (a cold sequential read is all such
	// hits); PagesHitCached = the rest, pages cached before the trace.
	PagesPrefetched    uint64 `json:"pages_prefetched"`
	PagesHitPrefetched uint64 `json:"pages_hit_prefetched"`
	PagesHitCached     uint64 `json:"pages_hit_cached"`
	DiskBytesRead      uint64 `json:"disk_bytes_read"`
	DiskBytesWrite     uint64 `json:"disk_bytes_written"`
	// DiskBytesWritePartial: this row dirtied pages while the dirty_pages
	// map was full (map_evictions.dirty_pages > 0, --max-dirty-pages): the
	// writeback of pages iopath did not follow is not attributed, so
	// disk_bytes_written is a lower bound (of the flusher's writeback, a
	// file's row and a process's row both count the followed pages' bytes
	// only: a single writer's row and its file's agree).
	DiskBytesWritePartial bool `json:"disk_bytes_written_partial,omitempty"`
	// Partial: records of the trace were lost (lost_events > 0, the ring
	// buffer was full): the counts of this row built from records (calls,
	// bytes, pages, faults, dirtied pages, requests, disk bytes) are lower
	// bounds, and its ratios (amplification) are ratios of lower bounds.
	// The kernel does not say whose records were lost, so every row is
	// marked (Summary.MarkPartialLost).
	Partial       bool    `json:"partial,omitempty"`
	Amplification float64 `json:"amplification"` // disk bytes read / bytes requested by reads
	ReadCalls     uint64  `json:"read_calls"`
	ReadBytesReq  uint64  `json:"read_bytes_requested"`
	WriteCalls    uint64  `json:"write_calls"`
	DirtiedPages  uint64  `json:"dirtied_pages"`
	ThrottleNs    uint64  `json:"throttle_ns"`
	BlockedNs     uint64  `json:"blocked_ns"`
	Unattributed  uint64  `json:"unattributed_bios"`
	// Page faults on file mappings (record.Fault), streamed or not.
	Faults             uint64 `json:"faults"`
	MajorFaults        uint64 `json:"major_faults"`
	FaultDiskBytesRead uint64 `json:"fault_disk_bytes_read"` // bytes of bios of faults (also in disk_bytes_read)
	// Asynchronous requests (record.Request): counted here, not as calls;
	// their bytes, cache pages and disk bytes are in the totals above.
	Requests      uint64 `json:"requests,omitempty"`
	ReadRequests  uint64 `json:"read_requests,omitempty"`
	WriteRequests uint64 `json:"write_requests,omitempty"`
}

// PidSummary totals one process.
type PidSummary struct {
	Pid  uint32 `json:"pid"`
	Comm string `json:"comm"`
	Totals
}

// FileSummary totals one file (all traced processes).
type FileSummary struct {
	Dev string `json:"dev"`
	Ino uint64 `json:"ino"`
	// FS is the file's filesystem type where a fault named it (tmpfs:
	// faults of its mappings never read a disk).
	FS   string `json:"fs,omitempty"`
	Path string `json:"path,omitempty"` // the latest name seen
	// EarlierPaths: other names the inode was seen under, oldest first
	// (renamed, e.g. PostgreSQL's pg_wal/xlogtemp.N; or hard links).
	EarlierPaths []string `json:"earlier_paths,omitempty"`
	// Generation: the inode's i_generation. An inode number reused after a
	// delete gets a new row (the deleted file's stays, with its name).
	Generation uint32 `json:"generation,omitempty"`
	Totals
}

// SyncWriteback is what the flusher threads wrote with reason sync while a
// sync or syncfs call waited (syncfs: on its filesystem's device): the
// writeback bios carrying pages dirtied by traced calls (the only ones
// iopath follows) queued between the call's start and end. Another sync
// running at the same time shares them.
type SyncWriteback struct {
	Bios  uint64 `json:"bios"`
	Bytes uint64 `json:"bytes"`
	// AtLeast: older bios were forgotten (more than 65536 kept): the
	// counts are a lower bound.
	AtLeast bool `json:"at_least,omitempty"`
}

// MarkPartialLost marks every row partial when records were lost
// (LostEvents > 0): any process's or file's records may be among them.
func (s *Summary) MarkPartialLost() {
	if s.LostEvents == 0 {
		return
	}
	for i := range s.Files {
		s.Files[i].Partial = true
	}
	for i := range s.Pids {
		s.Pids[i].Partial = true
	}
}

// MarkPartialWriteback marks the disk bytes written of every row that
// dirtied pages as partial, for a trace whose dirty_pages map overflowed:
// the kernel does not say which file's or process's folios it had no room
// for, so any of them may have writeback iopath did not attribute.
func (s *Summary) MarkPartialWriteback() {
	for i := range s.Files {
		if s.Files[i].DirtiedPages > 0 {
			s.Files[i].DiskBytesWritePartial = true
		}
	}
	for i := range s.Pids {
		if s.Pids[i].DirtiedPages > 0 {
			s.Pids[i].DiskBytesWritePartial = true
		}
	}
}
