package record

// The values of the records' enumerated fields. They are strings in the
// JSON (README.md, "JSON records"); the types let the compiler check that
// engine and render use the same spellings.

// Type says which record a JSON line is (its "type" field).
type Type string

// Record types.
const (
	TypeSyscall   Type = "syscall"
	TypeWriteback Type = "writeback"
	TypePersisted Type = "persisted"
	TypeSummary   Type = "summary"
)

// ReadaheadKind is the kind of a readahead decision (readahead.kind).
type ReadaheadKind string

// Readahead kinds: page_cache_sync_ra (the call missed), page_cache_async_ra
// (the call reached a page marked PG_readahead), or unknown when only
// page_cache_ra_order saw the window (the readahead:page_cache_ra_order
// tracepoint, 6.18+, does not say which path called it).
const (
	ReadaheadSync    ReadaheadKind = "sync"
	ReadaheadAsync   ReadaheadKind = "async"
	ReadaheadUnknown ReadaheadKind = "unknown"
)

// ReadaheadSource says how iopath knows a readahead window (readahead.source).
type ReadaheadSource string

// Readahead sources.
const (
	// SourceKernel: a readahead hook recorded the window the kernel sized.
	SourceKernel ReadaheadSource = "kernel"
	// SourceKernelAdded: a readahead hook saw the decision but the kernel
	// sized no window (6.18's random-access path reads just the requested
	// pages); the window is the pages added from its start index on.
	SourceKernelAdded ReadaheadSource = "kernel (window from pages added)"
	// SourceDerived: no readahead hook on this kernel; the window is derived
	// from the pages the call inserted beyond its request.
	SourceDerived ReadaheadSource = "derived"
)

// BioKind classifies a bio of an fsync-family call (bio.kind; empty for
// other calls).
type BioKind string

// Bio kinds.
const (
	BioData     BioKind = "data"     // the file's pages
	BioMetadata BioKind = "metadata" // rwbs M: filesystem metadata
	BioJournal  BioKind = "journal"  // queued by jbd2 while the call waited on its device
	BioFlush    BioKind = "flush"    // a cache flush (rwbs F, or no data)
)

// DeviceFlush says what an fsync-family call did to its device's volatile
// write cache (syscall.device_flush; empty for other calls).
type DeviceFlush string

// Device flush outcomes.
const (
	FlushDone         DeviceFlush = "flushed"         // a flush request served the call (a bio of kind flush)
	FlushNotNeeded    DeviceFlush = "not_needed"      // the device has no volatile write cache ("write through")
	FlushNone         DeviceFlush = "none"            // the device has a volatile cache, but no flush served this call (it failed; sync, syncfs: none attributed)
	FlushUnavailable  DeviceFlush = "unavailable"     // the device has a volatile cache and no flush was seen serving the call: whether one did is not known
	FlushNotRequested DeviceFlush = "not_requested"   // sync_file_range: never flushes the device cache
	FlushNoDevice     DeviceFlush = "no_block_device" // tmpfs, proc...: nothing to flush
)

// DiscardCause prefixes an unattributed cause (summary.unattributed_causes)
// whose bios are discards (rwbs D, DE): their bytes are ranges discarded,
// not data read or written.
const DiscardCause = "discard:"

// Outcome is what became of the pages a write call dirtied (persisted.outcome).
type Outcome string

// Outcomes.
const (
	OutcomeWritten Outcome = "written" // a bio carried them and completed without error
	OutcomeFailed  Outcome = "failed"  // the bio completed with an error (persisted.error)
	OutcomeRemoved Outcome = "removed" // they left the page cache (truncate, hole punch, eviction) before writeback
)

// Reason is why pages were written back (writeback.reason, persisted.reason).
// Flusher reasons are the running kernel's enum wb_reason names in lower
// case, read from BTF (include/linux/backing-dev-defs.h: background,
// vmscan, sync, periodic, laptop_timer, fs_free_space, forker_thread,
// foreign_flush on 6.18), so the set is open: the constants below are the
// ones iopath itself assigns or tests for.
type Reason string

// Writeback reasons.
const (
	ReasonBackground Reason = "background" // WB_REASON_BACKGROUND, or writeback_control.for_background
	ReasonSync       Reason = "sync"       // WB_REASON_SYNC, or writeback_control.for_sync
	ReasonPeriodic   Reason = "periodic"   // WB_REASON_PERIODIC, or writeback_control.for_kupdate
	ReasonFsync      Reason = "fsync"      // written by a traced fsync-family call
	ReasonOSync      Reason = "o_sync"     // written by the call that dirtied the pages (O_SYNC, O_DSYNC)
	// ReasonSyncFileRange: written by a traced sync_file_range (it starts
	// writeback of a range; it is no fsync: no metadata, no device flush).
	ReasonSyncFileRange Reason = "sync_file_range"
	// ReasonUnknown: the worker's writeback_start was not seen, or the
	// writer is an untraced process's call (Writeback.Worker names it).
	ReasonUnknown Reason = "unknown"
)
