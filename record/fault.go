package record

// Fault is one page fault on a file-backed mapping ("type":"fault"): a
// load or store to a mapped page the task's page tables did not map. By
// default only faults that read from disk, waited, read ahead or dirtied a
// page are records; with --all every one (the rest are counted in the
// summary's faults). Index, cache and readahead are in 4 KiB pages.
type Fault struct {
	Type    Type   `json:"type"`
	OpID    uint64 `json:"op_id"`   // joins bios and persisted records, like a call's
	TimeNs  uint64 `json:"time_ns"` // fault entry (handle_mm_fault or exceptions:page_fault_user)
	Pid     uint32 `json:"pid"`
	Tid     uint32 `json:"tid"`
	Comm    string `json:"comm"`
	Path    string `json:"path,omitempty"`
	Dev     string `json:"dev"`
	Ino     uint64 `json:"ino"`
	FS      string `json:"fs"`
	Index   uint64 `json:"index"`   // page of the file the address maps
	Address uint64 `json:"address"` // user address that faulted
	Write   bool   `json:"write"`   // a store (x86 error code W)
	// Major: the kernel counted it in the task's maj_flt (VM_FAULT_MAJOR,
	// or a retry after a major first pass): the page was not in the cache.
	Major bool `json:"major"`
	// Retried: filemap_fault dropped the mmap (or VMA) lock and the kernel
	// redid the fault (VM_FAULT_RETRY); both passes are this one record.
	Retried    bool   `json:"retried"`
	DurationNs uint64 `json:"duration_ns"` // entry to the end of the fault (perf page-fault event, or Signal's delivery)
	// Signal: the fault ended when the thread went back to user mode to
	// take this signal (SIGBUS, SIGSEGV: the fault failed; any other: a
	// pass that returned VM_FAULT_RETRY with the signal pending is not
	// redone, and what it did stands, such as the page it dirtied). The
	// kernel counts such a fault in neither maj_flt nor min_flt. Empty: the
	// fault ended normally (its perf page-fault event).
	Signal string `json:"signal,omitempty"`
	// EndUnseen: the fault's end was never seen (no perf page-fault event,
	// no signal delivered to the thread: the kernel went back to user mode
	// without accounting it, e.g. a pass that returned VM_FAULT_RETRY with
	// a signal pending that another thread took; or the thread exited
	// during it). It was closed at the thread's next fault or exit:
	// duration_ns runs to then (an upper bound) and major is unknown (false,
	// listed in unavailable). What it did stands: its bios, readahead and
	// dirtied pages are its own. A fault found open by a system call's start
	// has no record (counted in the summary's faults_unended).
	EndUnseen bool   `json:"end_unseen,omitempty"`
	BlockedNs uint64 `json:"blocked_ns"` // off-CPU in iowait (folio lock, IO)
	// Cache: pages_requested is the faulting page; readahead kinds are
	// read-around (do_sync_mmap_readahead's window around the page), sync
	// (MADV_SEQUENTIAL), async (a PG_readahead page reached), none (only
	// the faulting page read: MADV_RANDOM, or too many misses).
	Cache Cache `json:"cache"`
	// FaultAround: cached pages around the fault that filemap_map_pages
	// tried to map in the same fault, without IO (window offered, not all
	// need be mapped). Nil: none.
	FaultAround   *PageRange   `json:"fault_around,omitempty"`
	Bios          []Bio        `json:"bios"`
	DirtiedPages  uint32       `json:"dirtied_pages"` // pages made dirty by the store (page_mkwrite), followed to persisted
	DirtiedRanges []PageRange  `json:"dirtied_ranges,omitempty"`
	Unavailable   []string     `json:"unavailable,omitempty"`
	Truncated     *Truncations `json:"truncated,omitempty"`
}

// Failed reports whether the fault failed: the kernel raised SIGBUS (a
// page past the end of the file, an IO error) or SIGSEGV for it.
func (f *Fault) Failed() bool { return f.Signal == "SIGBUS" || f.Signal == "SIGSEGV" }

// Fault-only readahead kinds (fault.cache.readahead[].kind).
const (
	ReadaheadReadAround ReadaheadKind = "read-around" // do_sync_mmap_readahead around the faulting page
	ReadaheadNone       ReadaheadKind = "none"        // the fault read only its own page
)

// TypeFault is a page fault on a file mapping.
const TypeFault Type = "fault"
