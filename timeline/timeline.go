// Package timeline draws iopath's records as a timeline: a Chrome JSON trace
// (opened by ui.perfetto.dev and chrome://tracing) and a self-contained HTML
// report.
//
// The records (record.Syscall, Fault, Writeback, Persisted, Summary) go through a
// Writer. Timeline, the Writer this package provides, lays them out once into
// tracks, slices and flow arrows and hands those to its Outputs (Chrome,
// Report); a Perfetto protobuf Output can replace Chrome without touching
// the layout.
//
// The layout (what a Perfetto user expects):
//   - one process per traced pid, a thread track per tid, each call a slice
//     from entry to exit (args: bytes, cache hits/misses, readahead, bios),
//     and each page fault on a file mapping a slice the same way (args:
//     page, address, major, read-around, bios);
//   - a process per block device ("disk 254:0"), each bio a slice from queue
//     to completion with its issue→complete (D2C) part nested inside; bios
//     that overlap in time go on separate lanes (thread tracks) of the
//     device, since slices on one track must nest;
//   - a "writeback" process with a track per flusher worker (kworker), each
//     writeback bio it submitted a slice from queue to completion;
//   - in each traced process, "dirty pages → disk" lanes: a slice from when a
//     call dirtied pages to when they reached the disk;
//   - flow arrows: call or fault → each bio it queued; write (or write
//     fault) → flusher's writeback
//     slice → the writeback bio → the end of its dirty-pages slice
//     (persisted).
//
// Times are CLOCK_MONOTONIC nanoseconds in the records; outputs convert to
// their units (Chrome JSON: µs).
package timeline

import "github.com/iopath/iopath/record"

// Writer receives records in the order the tracer emits them.
type Writer interface {
	Syscall(*record.Syscall)
	Fault(*record.Fault)
	Writeback(*record.Writeback)
	Persisted(*record.Persisted)
	// Summary may come more than once (a demo traces several runs).
	Summary(*record.Summary)
	// Close finishes the outputs; nothing is complete before it.
	Close() error
}

// Feed hands one record of any kind the tracer emits to w.
func Feed(w Writer, rec any) {
	switch r := rec.(type) {
	case *record.Syscall:
		w.Syscall(r)
	case *record.Fault:
		w.Fault(r)
	case *record.Writeback:
		w.Writeback(r)
	case *record.Persisted:
		w.Persisted(r)
	case *record.Summary:
		w.Summary(r)
	}
}

// Output draws what a Timeline lays out. Calls come in record order, not in
// time order; a Track is announced (Track) before its first slice.
type Output interface {
	Track(*Track)
	Slice(*Slice)
	Flow(*Flow)
	Summary(*record.Summary)
	// Close finishes the output; stats are the layout's counts.
	Close(stats Stats) error
}

// Track kinds.
const (
	KindThread    = "thread"    // a traced thread's calls
	KindDevice    = "device"    // one lane of a block device's bios
	KindWorker    = "worker"    // one lane of a writeback worker's bios
	KindDirty     = "dirty"     // one lane of a process's dirty-pages spans
	MaxLanes      = 64          // lanes per device, worker or process (see Timeline.place)
	syntheticBase = 1 << 23     // ids of synthetic processes/threads: above PID_MAX_LIMIT (1<<22)
	groupStride   = 1 << 12     // synthetic ids per group (lanes and workers)
	maxRemembered = 1 << 12     // bios remembered for a later record naming them (FIFO)
	flowName      = "io"        // name and category of every flow (Chrome matches flows by both)
	catSyscall    = "syscall"   // category of call slices
	catFault      = "fault"     // category of page-fault slices
	catBio        = "bio"       // category of bio slices (queue → completion)
	catD2C        = "bio.d2c"   // category of the nested issue → completion slices
	catWriteback  = "writeback" // category of writeback workers' slices
	catDirty      = "dirty"     // category of dirty-pages spans
)

// Track is a row of slices. Pid/Tid are the Chrome trace ids: real ones for
// traced threads, synthetic ones (≥ syntheticBase) for devices, workers and
// dirty-pages lanes.
type Track struct {
	Index   int    // 0, 1, … in order of first use
	Kind    string // KindThread, KindDevice, KindWorker, KindDirty
	Pid     uint32
	Tid     uint32
	Process string // name of the process (group) the track belongs to
	Thread  string // name of the track
	Sort    int    // process sort order: traced processes, then devices, then writeback
	NewProc bool   // first track of its process
}

// Slice is a span on a track: [StartNs, StartNs+DurNs], CLOCK_MONOTONIC ns.
// A slice inside another on the same track is nested (drawn below it).
type Slice struct {
	Track   *Track
	StartNs uint64
	DurNs   uint64
	Name    string
	Cat     string
	Args    map[string]any
}

// FlowPoint is where an arrow touches a slice: a time inside it, on its track.
type FlowPoint struct {
	Track *Track
	TsNs  uint64
}

// Flow is an arrow through two or more slices, in time order.
type Flow struct {
	ID     uint64
	Points []FlowPoint
}

// Stats count what the layout drew and what it could not.
type Stats struct {
	Calls           uint64 `json:"calls"`
	Faults          uint64 `json:"faults"`
	Bios            uint64 `json:"bios"`
	WritebackSlices uint64 `json:"writeback_slices"`
	DirtySpans      uint64 `json:"dirty_spans"`
	Flows           uint64 `json:"flows"`
	// Overlaps: slices put on a lane they overlap (all MaxLanes lanes
	// busy); a viewer may draw them misnested.
	Overlaps uint64 `json:"overlaps"`
	// Unplaced: persisted records with no time (pages removed before
	// writeback, or still pending) or whose bio was not seen: no span drawn.
	Unplaced uint64 `json:"unplaced"`
	// Forgotten: bios of a traced call's writeback whose call record did
	// not come (lost, evicted from the bounded memory of waiting bios, or
	// after the end): drawn from the writeback record, without the call's
	// arrow, or twice if the record came after all.
	Forgotten uint64 `json:"forgotten"`
}
