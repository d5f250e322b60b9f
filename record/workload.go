package record

import "github.com/iopath/iopath/workloads"

// Workload ("type":"workload") is what one traced `iopath workload`
// run cost, from the tracer's summary and records for its process and its
// file, with the workload's own report. Bytes are bytes, pages 4 KiB
// page-cache pages; ratios are plain fractions.
type Workload struct {
	Type string `json:"type"` // "workload"
	Kind string `json:"kind"`
	Pid  uint32 `json:"pid"`  // the traced child
	File string `json:"file"` // the workload's file
	Dev  string `json:"dev"`
	Ino  uint64 `json:"ino"`

	// Ops are the workload's ops (its report), or the calls on its file when
	// it printed no report.
	Ops int64 `json:"ops"`
	// FileReadCalls and FileWriteCalls are the read- and write-family calls
	// the tracer saw on the file; OtherCalls the process's calls on other
	// files (Go runtime start-up, /proc).
	FileReadCalls  uint64 `json:"file_read_calls"`
	FileWriteCalls uint64 `json:"file_write_calls"`
	OtherCalls     uint64 `json:"other_calls"`
	// ReadBytesRequested is what the ops asked to read: the bytes requested
	// by the read calls on the file, or for the mmap engine (no calls) the
	// bytes its reads copied.
	ReadBytesRequested uint64 `json:"read_bytes_requested"`

	// DiskBytesRead: the process's disk reads, its calls' bios and those of
	// its page faults (mmap), but not its execve's (ExecBytesRead).
	DiskBytesRead uint64 `json:"disk_bytes_read"`
	// ExecBytesRead: what the workload processes' execve records read (a
	// cold iopath binary's start, before the run: not per op; the report's
	// kernel_io counts the run only).
	ExecBytesRead uint64 `json:"exec_bytes_read,omitempty"`
	// DiskBytesWritten: written by its calls themselves (O_DIRECT, O_SYNC,
	// fsync family).
	DiskBytesWritten uint64 `json:"disk_bytes_written"`
	// WritebackBytes: pages of its writes that writeback (the flusher)
	// carried to disk during the trace, × 4096.
	WritebackBytes uint64 `json:"writeback_bytes"`
	// DiskBytesPerOp is (read + written + writeback bytes) / ops. Partial:
	// a lower bound when the ops are the report's, 0 (not computed) when
	// they are the calls seen (short too).
	DiskBytesPerOp float64 `json:"disk_bytes_per_op"`
	// Amplification is disk bytes read / read bytes requested (0 when no
	// read was requested, or Partial: a ratio of two lower bounds is no
	// bound).
	Amplification float64 `json:"amplification"`

	// Page cache, for the read calls on the file: requested = hit + missed;
	// added counts readahead too. HitRatio = hit / requested (0 when none,
	// or Partial).
	PagesRequested uint64  `json:"pages_requested"`
	PagesHit       uint64  `json:"pages_hit"`
	PagesMissed    uint64  `json:"pages_missed"`
	PagesAdded     uint64  `json:"pages_added"`
	HitRatio       float64 `json:"hit_ratio"`
	// CachedAfter is the file's page-cache residency when the workload ended.
	CachedAfter *workloads.Residency `json:"cached_after,omitempty"`

	// Writeback: pages the file's calls dirtied; of those seen reaching the
	// disk (persisted), removed before writeback (truncated or evicted) or
	// failed; and pending: tracked dirty pages not yet seen on disk when the
	// trace ended.
	DirtiedPages   uint64 `json:"dirtied_pages"`
	PersistedPages uint64 `json:"persisted_pages"`
	RemovedPages   uint64 `json:"removed_pages"`
	FailedPages    uint64 `json:"failed_pages"`
	PendingPages   uint64 `json:"pending_pages"`

	Report *workloads.Report `json:"report,omitempty"`

	// Partial: LostEvents records of the trace were lost (the ring buffer
	// was full): every count above that the tracer built from records
	// (calls, bytes, pages) is a lower bound (record.Totals.Partial).
	Partial    bool   `json:"partial,omitempty"`
	LostEvents uint64 `json:"lost_events,omitempty"`

	// FS is the file's filesystem type, for the text; Unmatched counts dirty
	// folios written in bios beyond the tracer's matches per bio
	// (truncations wb_matches). Neither is part of the JSON record.
	FS        string `json:"-"`
	Unmatched uint64 `json:"-"`
}
