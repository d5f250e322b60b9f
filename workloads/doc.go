// Package workloads generates simple, measurable file IO patterns: a small,
// honest fio. Each workload issues one kind of operation (a 1-byte read, a
// small append, a 4 KiB random read...) through one engine (pread/pwrite,
// lseek+read/write, a memory mapping, user-space buffering, or libaio and
// io_uring with many requests in flight), and reports
// what it did the way fio does: ops, bytes, IOPS, bandwidth, latency
// percentiles, CPU time, and the system calls it issued, cross-checked against
// the kernel's own per-thread counters in /proc/thread-self/io.
//
// Preparation (creating and filling the file, dropping it from the page cache)
// is split from the measured run so a tracer can start tracing in between:
//
//	p, err := workloads.Prepare(spec) // file IO happens here
//	...start tracing...
//	rep, err := p.Run(ctx)            // only the workload's IO happens here
//	p.Cleanup()
//
// Run issues all of its IO from one locked OS thread, so a tracer that filters
// on that thread sees exactly the workload's system calls; with NumJobs > 1,
// each job has its own thread (Thread) or process.
//
// Units: sizes and offsets are bytes, latencies are nanoseconds, durations
// are time.Duration (nanoseconds).
package workloads
