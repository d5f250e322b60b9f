package workloads

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// Report is what a run did, in fio's terms. JSON field names carry their units.
type Report struct {
	Kind      string `json:"kind"`              // Spec.Kind
	Engine    string `json:"engine"`            // Spec.Engine
	File      string `json:"file"`              // the file the ops went to
	BlockSize int64  `json:"bs_bytes"`          // bytes per op
	FileSize  int64  `json:"file_size_bytes"`   // bytes of the region the ops cover
	Base      int64  `json:"base_offset_bytes"` // file offset where the region starts (appends: the old end of file)
	Random    bool   `json:"random"`            // random offsets
	Seed      uint64 `json:"seed,omitempty"`    // seed of the random offsets, when Random
	Direct    bool   `json:"direct"`            // O_DIRECT
	Cold      bool   `json:"cold"`              // dropped from the page cache before the run
	Fadvise   string `json:"fadvise,omitempty"` // access advice given before the run
	IODepth   int    `json:"iodepth"`           // requests in flight per job (1 for the synchronous engines)
	Batch     int    `json:"iodepth_batch"`     // most requests per submit call (libaio, io_uring)
	// CompleteMin: fewest completions per wait call (libaio, io_uring).
	CompleteMin int  `json:"iodepth_complete_min"`
	NumJobs     int  `json:"numjobs"`          // jobs that ran at once; the numbers here are their aggregate
	Thread      bool `json:"thread,omitempty"` // the jobs were threads, not processes
	Job         int  `json:"job"`              // this job's index, in Jobs; 0 for the aggregate
	// Pid is the job's process (--numjobs without --thread; 0 otherwise):
	// a tracer sums the job processes' disk IO with it.
	Pid int `json:"pid,omitempty"`

	Ops         int64         `json:"ops"`                   // completed reads or writes
	Bytes       int64         `json:"bytes"`                 // bytes they moved
	Runtime     time.Duration `json:"runtime_ns"`            // from the first op's start to the last op's end (and the final flush)
	IOPS        float64       `json:"iops"`                  // ops per second
	Bandwidth   float64       `json:"bw_mib_s"`              // MiB (2^20 bytes) per second
	Interrupted bool          `json:"interrupted,omitempty"` // the context was cancelled before the planned end

	// Latency of each op. Synchronous engines: the time between the clock
	// reads after consecutive ops, so it includes the loop's own few
	// nanoseconds of bookkeeping. libaio and io_uring: fio's total latency,
	// from preparing the request to reaping its completion (slat + clat).
	Latency Latency `json:"lat_ns"`
	// SubmitLatency (libaio, io_uring) is fio's slat: from preparing a
	// request to the return of the io_submit/io_uring_enter that submitted it.
	SubmitLatency *Latency `json:"slat_ns,omitempty"`
	// CompletionLatency (libaio, io_uring) is fio's clat: from that return
	// to the return of the call that reaped its completion.
	CompletionLatency *Latency `json:"clat_ns,omitempty"`
	// MaxInflight (libaio, io_uring) is the most requests a job had in flight.
	MaxInflight int `json:"max_inflight,omitempty"`
	// SyncLatency is of each fsync/fdatasync/msync, when there were any.
	SyncLatency *Latency `json:"sync_lat_ns,omitempty"`

	CPUUser     time.Duration `json:"cpu_user_ns"` // whole process over the run (a job's thread with --thread)
	CPUSys      time.Duration `json:"cpu_sys_ns"`
	MinorFaults int64         `json:"minor_faults"` // page faults served from memory
	MajorFaults int64         `json:"major_faults"` // page faults that waited for storage
	// Faults: the mmap engine's faults, bytes read per major fault and the
	// read-around window (nil for other engines).
	Faults  *Faults `json:"mmap_faults,omitempty"`
	Madvise string  `json:"madvise,omitempty"` // Spec.Madvise

	// Syscalls are the calls the engine issued, counted by iopath.
	Syscalls []SyscallCount `json:"syscalls"`
	// Kernel is the kernel's count for the run: the system-call counters of
	// the run's thread, to check Syscalls against, and the storage counters
	// of the file KernelScope names; nil when a file is missing.
	Kernel *ProcIO `json:"kernel_io,omitempty"`
	// KernelScope is the file Kernel's read_bytes and write_bytes come
	// from: /proc/thread-self/io, or /proc/self/io for io_uring (procIOPath).
	KernelScope string `json:"kernel_io_scope,omitempty"`
	// Cache is the file's page-cache residency after --cold dropped it.
	Cache *Residency `json:"cache_after_cold,omitempty"`
	// Notes are caveats about the numbers, e.g. that --cold did not work.
	Notes []string `json:"notes,omitempty"`
	// Jobs are the reports of each job when NumJobs > 1.
	Jobs []*Report `json:"jobs,omitempty"`

	hists *runState // the job's histograms, for the aggregate
	// JobHists carries the histograms from a job process to its parent.
	JobHists *jobHists `json:"job_histograms,omitempty"`
}

// Latency summarises a latency histogram, in ns. Percentiles are accurate
// to 3 significant digits.
type Latency struct {
	Count int64   `json:"count"` // values recorded (ops, or syncs)
	Min   int64   `json:"min"`   // ns
	Mean  float64 `json:"mean"`  // ns
	P50   int64   `json:"p50"`   // ns; half the values are at most this
	P90   int64   `json:"p90"`   // ns
	P99   int64   `json:"p99"`   // ns
	P999  int64   `json:"p99_9"` // ns; the 99.9th percentile
	Max   int64   `json:"max"`   // ns
}

func summarize(h *hdrhistogram.Histogram) Latency {
	q := h.ValueAtPercentiles([]float64{50, 90, 99, 99.9})
	return Latency{
		Count: h.TotalCount(), Min: h.Min(), Mean: h.Mean(), Max: h.Max(),
		P50: q[50], P90: q[90], P99: q[99], P999: q[99.9],
	}
}

// report assembles the Report of a finished (or failed) loop.
func (p *Prepared) report(j *job, st *runState, ru0, ru1 *unix.Rusage) *Report {
	s := &p.Spec
	r := &Report{
		Kind: s.Kind, Engine: s.Engine, File: p.Path, BlockSize: s.BlockSize,
		FileSize: s.FileSize, Base: p.Base, Random: s.random(), Direct: s.Direct,
		Cold: s.Cold, Fadvise: s.Fadvise, Madvise: s.Madvise, IODepth: s.IODepth, Batch: s.IODepthBatch, CompleteMin: s.IODepthCompleteMin, NumJobs: 1,
		Ops: st.ops, Bytes: st.bytes, Runtime: st.elapsed, Interrupted: st.stopped,
		Latency:     summarize(st.lat),
		CPUUser:     tv(ru1.Utime) - tv(ru0.Utime),
		CPUSys:      tv(ru1.Stime) - tv(ru0.Stime),
		MinorFaults: ru1.Minflt - ru0.Minflt,
		MajorFaults: ru1.Majflt - ru0.Majflt,
		Syscalls:    j.calls(),
		Cache:       p.Cache,
		Notes:       append([]string(nil), p.Notes...),
	}
	if r.Random {
		r.Seed = s.Seed
	}
	if n := kernelIONote(s); n != "" {
		r.Notes = append(r.Notes, n)
	}
	r.finish(st)
	r.MaxInflight = st.maxInflight
	return r
}

// finish fills in what follows from the counts and histograms of st: the
// latency summaries, IOPS and bandwidth over r.Runtime, bytes per call.
func (r *Report) finish(st *runState) {
	r.hists = st
	if st.syncLat.TotalCount() > 0 {
		l := summarize(st.syncLat)
		r.SyncLatency = &l
	}
	if st.slat != nil {
		r.Latency = summary(st.lat, st.sums[2])
		sl, cl := summary(st.slat, st.sums[0]), summary(st.clat, st.sums[1])
		r.SubmitLatency, r.CompletionLatency = &sl, &cl
	}
	if sec := r.Runtime.Seconds(); sec > 0 {
		r.IOPS = float64(r.Ops) / sec
		r.Bandwidth = float64(r.Bytes) / sec / (1 << 20)
	}
	if r.Syscalls == nil {
		r.Syscalls = []SyscallCount{}
	}
	for i := range r.Syscalls {
		if c := &r.Syscalls[i]; c.Calls > 0 {
			c.BytesPerCall = float64(c.Bytes) / float64(c.Calls)
		}
	}
}

// calls lists the system calls the job's engine made.
func (j *job) calls() []SyscallCount {
	if j.aeng != nil {
		return j.aeng.calls()
	}
	return j.eng.calls()
}

func tv(t unix.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// kernelIONote says what an io_uring job's kernel_io counts: the threads
// that may have run its requests (the SQPOLL thread submits and runs them
// with --sqpoll; io-wq workers run punted ones), and whether they are in
// it (procIOPath).
func kernelIONote(s *Spec) string {
	if s.Engine != EngineIOUring {
		return ""
	}
	who := "io-wq worker threads (iou-wrk-*)"
	if s.SQPoll {
		who = "the SQPOLL thread (iou-sqp-*) and io-wq worker threads (iou-wrk-*)"
	}
	if procIOPath(s) == processIO {
		return "kernel_io's read_bytes and write_bytes count the whole process (/proc/self/io): io_uring requests carried out by " + who + " are in them; its system-call counters are the job's own thread's"
	}
	return "kernel_io counts the job's own thread (/proc/thread-self/io): io_uring requests carried out by " + who + " are not in it"
}
