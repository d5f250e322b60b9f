package metrics

import "github.com/prometheus/client_golang/prometheus"

// Metric is one metric family: its name, help text and labels (the README
// lists All).
type Metric struct {
	Name, Help string
	Labels     []string
	Kind       string // counter, gauge, histogram
	desc       *prometheus.Desc
}

func metric(kind, name, help string, labels ...string) *Metric {
	m := &Metric{Name: "iopath_" + name, Help: help, Labels: labels, Kind: kind}
	m.desc = prometheus.NewDesc(m.Name, help, labels, nil)
	return m
}

// perComm is a --per-comm counter: named iopath_process_NAME, with the
// label comm first (the only per-process label: series stay bounded).
func perComm(name, help string, labels ...string) *Metric {
	return metric("counter", "process_"+name, help, append([]string{"comm"}, labels...)...)
}

var (
	syscalls = metric("counter", "syscalls_total",
		"Read, write and sync-family system calls completed by traced processes.", "op")
	syscallErrors = metric("counter", "syscall_errors_total",
		"Of those calls, the ones that returned an error.", "op")
	syscallBytes = metric("counter", "syscall_bytes_total",
		"Bytes returned by read calls and written by write calls.", "op")
	syscallDuration = metric("histogram", "syscall_duration_seconds",
		"Duration of read, write and sync-family calls; cache=miss when the call inserted pages into the page cache in its range or queued bios, else hit. Log2 buckets.", "op", "cache")
	pageCache = metric("counter", "page_cache_accesses_total",
		"4 KiB pages of block-backed files read by read calls: found in the page cache (hit) or inserted by the call (miss). Not O_DIRECT reads, nor files without a block device (proc, sysfs, cgroup, tmpfs).", "result")
	readahead = metric("counter", "readahead_pages_total",
		"4 KiB pages read calls inserted into the page cache beyond the range they asked for (readahead, or the rest of a large folio).", "outcome")
	callDiskBytes = metric("counter", "syscall_disk_bytes_total",
		"Bytes of bios queued by traced calls (read: read calls; write: write and sync calls, plus the writeback of the pages they dirtied).", "op")
	dirtied = metric("counter", "dirtied_pages_total",
		"4 KiB pages traced calls turned dirty (clean to dirty).")
	dirtyPending = metric("gauge", "dirty_pages_pending",
		"4 KiB pages traced calls dirtied that are not yet written back or dropped, as far as iopath followed them.")
	throttle = metric("counter", "dirty_throttle_seconds_total",
		"Time traced calls spent throttled in balance_dirty_pages.")
	dirtyToDisk = metric("histogram", "dirty_to_disk_seconds",
		"Time from a page turning dirty to the queueing of the writeback bio that carries it, per 4 KiB page. Log2 buckets.")
	diskBytes = metric("counter", "disk_bytes_total",
		"Bytes of block requests issued per disk, whoever queued them (as iostat counts; a requeued request once).", "device", "op")
	diskRequests = metric("counter", "disk_requests_total",
		"Block requests issued per disk and op (read, write, flush, discard; a requeued request once).", "device", "op")
	diskErrors = metric("counter", "disk_request_errors_total",
		"Block requests completed with an error status.", "device", "op")
	diskUnseen = metric("counter", "disk_completions_unseen_total",
		"Block requests issued whose completion no BPF program saw (the kernel ran none for it): in disk_requests_total and disk_bytes_total, not in bio_latency_seconds.", "device", "op")
	bioLatency = metric("histogram", "bio_latency_seconds",
		"Block request latency per disk: stage d2c from issue to the device to completion, q2c from the request's start (its first bio entering blk-mq) to completion. Log2 buckets.", "device", "op", "stage")
	lostEvents = metric("counter", "lost_events_total",
		"Records the kernel could not queue for iopath (ring buffer full).")
	mapFull = metric("counter", "map_full_total",
		"Entries a bounded BPF map refused (counted elsewhere: agg_procs/agg_files into the totals only; agg_rqs without latency; task_ops: a thread's calls not traced).", "map")
	missedRuns = metric("counter", "missed_runs_total",
		"Runs of a BPF program the kernel skipped because it was already running on that CPU (recursion protection): what they would have counted is in no other metric. One series per attached program from the start, 0 while it missed none; none on kernels that do not count skipped runs (before 5.12).", "program")
	noDisk = metric("counter", "disk_requests_unnamed_total",
		"Block requests completed without a disk to name them by: not in iopath_disk_requests_total.")
	procSyscalls = perComm("syscalls_total",
		"Calls of the processes with this comm (only comms given to --per-comm): the comm of the process's main thread at the call (/proc/PID/comm), followed through prctl(PR_SET_NAME) and exec.", "op")
	procBytes = perComm("syscall_bytes_total",
		"Bytes read and written by the calls of the processes with this comm (--per-comm).", "op")
	procDiskBytes = perComm("disk_bytes_total",
		"Bytes of bios queued by the calls of the processes with this comm, plus the writeback of the pages they dirtied (--per-comm).", "op")
	procPageCache = perComm("page_cache_accesses_total",
		"Page-cache hits and misses of the read calls of the processes with this comm (--per-comm).", "result")
	procThrottle = perComm("dirty_throttle_seconds_total",
		"Time the processes with this comm spent throttled in balance_dirty_pages (--per-comm).")
	scrapeErr = metric("gauge", "scrape_error", "Reading the BPF maps failed.")
)

// All lists every metric family, in the README's order.
var All = []*Metric{syscalls, syscallErrors, syscallBytes, syscallDuration, pageCache, readahead, callDiskBytes,
	dirtied, dirtyPending, throttle, dirtyToDisk, diskBytes, diskRequests, diskErrors, diskUnseen, bioLatency, lostEvents, mapFull,
	missedRuns, noDisk, procSyscalls, procBytes, procDiskBytes, procPageCache, procThrottle}
