package tracer

import (
	"strings"

	"github.com/cilium/ebpf/asm"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine"
)

// Mechanism is how a hook is attached.
type Mechanism string

// Mechanisms, in order of preference for function hooks (cheapest and most
// precise first). TPBTF is a BTF-typed raw tracepoint; Tracepoint a classic one.
const (
	Fentry     Mechanism = "fentry"
	Kprobe     Mechanism = "kprobe"
	TPBTF      Mechanism = "tp_btf"
	Tracepoint Mechanism = "tracepoint"
	PerfEvent  Mechanism = "perf_event" // a BPF program run by a perf software event (fault_hooks.go)
	None       Mechanism = "none"
)

type attachKind int

const (
	akFentry attachKind = iota
	akFexit
	akKprobe
	akKretprobe
	akTracepoint // target "group/name"
	akTPBTF      // target: event name
	akPerfEvent  // target: a perf software event (fault_hooks.go), on every CPU
)

func (k attachKind) String() string {
	return [...]string{"fentry", "fexit", "kprobe", "kretprobe", "tracepoint", "tp_btf", "perf_event"}[k]
}

type attachment struct {
	prog   string
	kind   attachKind
	target string
	// shape, when set, is the argument list the program expects, checked
	// against the kernel's BTF (the function's prototype, or the
	// btf_trace_<event> typedef without its context): comma-separated
	// struct names, * for any argument. Programs for older argument lists
	// are other candidates (e.g. block_bio_queue(q, bio) before 5.11).
	shape string
	// module, for a tp_btf event a kernel module defines (jbd2's), names
	// the module whose BTF has the event where it is not built in (Debian
	// builds ext4 and jbd2 as modules).
	module string
}

type candidate struct {
	mech    Mechanism
	attach  []attachment
	variant string // what the candidate measures differently, for doctor
	sysMask uint64 // raw_syscalls candidates: op_sys values served (raw_sys_mask bits)
	// needs lists BPF helpers the programs call that older kernels lack
	// (probed with a test load; kernels/issue 16).
	needs []asm.BuiltinFunc
	// unpreempted: no run of these programs is lost to a thread preempted
	// inside one (they have spare programs, spare.go, or run with
	// interrupts off). Where the kernel preempts tracing programs (7.2:
	// PREEMPT_LAZY) they are tried first: fentry/fexit programs have no
	// spares, and 7.2 skipped fexit_vfs_read (a read missing from top's
	// count, 4 VMs on 2 cores, 2026-12-07) and fentry_handle_mm_fault
	// (2-12 runs in single tests).
	unpreempted bool
}

// taskRegs are the helpers syscall_from_regs (bpf/op.h) calls:
// bpf_get_current_task_btf (5.11) and bpf_task_pt_regs (5.15).
var taskRegs = []asm.BuiltinFunc{asm.FnGetCurrentTaskBtf, asm.FnTaskPtRegs}

// Hook is one logical attachment point of the design.
type Hook struct {
	Name string
	// What is lost when no mechanism attaches (empty: the hook is required).
	Loses      string
	candidates []candidate
}

func fn(prog string, kind attachKind, target string) attachment {
	return attachment{prog: prog, kind: kind, target: target}
}

// inModule is fn for a tp_btf event of kernel module module when it is
// not built in.
func inModule(prog, target, module string) attachment {
	return attachment{prog: prog, kind: akTPBTF, target: target, module: module}
}

// shaped is fn for a program that needs the given argument shape.
func shaped(prog string, kind attachKind, target, shape string) attachment {
	return attachment{prog: prog, kind: kind, target: target, shape: shape}
}

// syscallPair attaches an enter program and the shared exit program.
func syscallPair(enterProg, name string) []attachment {
	return []attachment{
		fn(enterProg, akTracepoint, "syscalls/sys_enter_"+name),
		fn(bpf.IopathProgTpExitOp, akTracepoint, "syscalls/sys_exit_"+name),
	}
}

// rawSyscalls is the raw_syscalls:sys_enter/sys_exit stand-in for the given
// syscalls (bpf/syscalls.c). Several hooks share its two programs.
func rawSyscalls(sys ...bpf.IopathOpSys) candidate {
	var mask uint64
	var names []string
	for _, s := range sys {
		mask |= 1 << uint(s)
		names = append(names, engine.SysName(uint32(s)))
	}
	return candidate{mech: TPBTF, sysMask: mask, variant: "raw_syscalls filtered to " + strings.Join(names, ","), attach: []attachment{
		fn(bpf.IopathProgRawSysEnter, akTPBTF, "sys_enter"), fn(bpf.IopathProgRawSysExit, akTPBTF, "sys_exit")}}
}

// unpreempted marks c as a candidate whose runs preemption cannot make the
// kernel skip (candidate.unpreempted).
func unpreempted(c candidate) candidate {
	c.unpreempted = true
	return c
}

func concat(lists ...[]attachment) []attachment {
	var out []attachment
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// fieldsOf names the record fields a hook provides, for Syscall.Unavailable.
var fieldsOf = map[string][]string{
	"iowait":              {"blocked_ns"},
	"filemap_get_pages":   {"cache.lookups"},
	"balance_dirty_pages": {"throttle_ns", "throttle_pauses", "throttle_max_pause_ns"},
	"dirty_folio":         {"dirtied_pages", "dirtied_ranges"},
	"block_rq_requeue":    {"bios.requeues"},
	"readv":               {"readv calls"},
	"writev":              {"writev calls"},
	"fsync":               {"fsync calls"},
	"copy":                {"sendfile/splice/copy_file_range calls"},
}

// Unavailable returns the record fields lost to hooks that got no mechanism.
func Unavailable(st []HookStatus) []string {
	var out []string
	for _, h := range st {
		if h.Mechanism == None {
			out = append(out, fieldsOf[h.Hook]...)
		}
	}
	return out
}

// uringEvents is the io_uring hook's programs with the given submission and
// completion events (their shapes changed across versions; the others did
// not): bpf/uring.c.
func uringEvents(submit, submitEvent, submitShape, complete, completeShape string) []attachment {
	return []attachment{
		shaped(submit, akTPBTF, submitEvent, submitShape),
		shaped(bpf.IopathProgUringQueueAsyncWork, akTPBTF, "io_uring_queue_async_work", "io_kiocb,*"),
		shaped(complete, akTPBTF, "io_uring_complete", completeShape),
		shaped(bpf.IopathProgUringFileGet, akTPBTF, "io_uring_file_get", "io_kiocb,*"),
		fn(bpf.IopathProgUringTaskWorkRun, akTPBTF, "io_uring_task_work_run"),
		fn(bpf.IopathProgUringWakeupNew, akTPBTF, "sched_wakeup_new"),
	}
}

// Hooks lists every logical hook with its candidate mechanisms, best first.
// Function hooks come from the design (vfs_read, filemap_get_pages,
// do_writepages, balance_dirty_pages); each has a tracepoint stand-in
// (docs/hooks.md says which, and why).
func Hooks() []Hook {
	return append([]Hook{
		{Name: "vfs_read", candidates: []candidate{
			{mech: Fentry, needs: taskRegs, attach: []attachment{fn(bpf.IopathProgFentryVfsRead, akFentry, "vfs_read"), fn(bpf.IopathProgFexitVfsRead, akFexit, "vfs_read")}},
			{mech: Kprobe, needs: taskRegs, attach: []attachment{fn(bpf.IopathProgKprobeVfsRead, akKprobe, "vfs_read"), fn(bpf.IopathProgKretprobeVfsRead, akKretprobe, "vfs_read")}},
			unpreempted(rawSyscalls(bpf.IopathOpSysSYS_READ, bpf.IopathOpSysSYS_PREAD64)),
			{mech: Tracepoint, attach: concat(syscallPair(bpf.IopathProgTpEnterRead, "read"), syscallPair(bpf.IopathProgTpEnterPread64, "pread64"))},
		}},
		{Name: "readv", Loses: "readv/preadv/preadv2 calls", candidates: []candidate{
			rawSyscalls(bpf.IopathOpSysSYS_READV, bpf.IopathOpSysSYS_PREADV, bpf.IopathOpSysSYS_PREADV2),
			{mech: Tracepoint, attach: concat(syscallPair(bpf.IopathProgTpEnterReadv, "readv"), syscallPair(bpf.IopathProgTpEnterPreadv, "preadv"), syscallPair(bpf.IopathProgTpEnterPreadv2, "preadv2"))},
		}},
		{Name: "vfs_write", Loses: "write/pwrite64 calls", candidates: []candidate{
			{mech: Fentry, needs: taskRegs, attach: []attachment{fn(bpf.IopathProgFentryVfsWrite, akFentry, "vfs_write"), fn(bpf.IopathProgFexitVfsWrite, akFexit, "vfs_write")}},
			{mech: Kprobe, needs: taskRegs, attach: []attachment{fn(bpf.IopathProgKprobeVfsWrite, akKprobe, "vfs_write"), fn(bpf.IopathProgKretprobeVfsWrite, akKretprobe, "vfs_write")}},
			unpreempted(rawSyscalls(bpf.IopathOpSysSYS_WRITE, bpf.IopathOpSysSYS_PWRITE64)),
			{mech: Tracepoint, attach: concat(syscallPair(bpf.IopathProgTpEnterWrite, "write"), syscallPair(bpf.IopathProgTpEnterPwrite64, "pwrite64"))},
		}},
		{Name: "writev", Loses: "writev/pwritev/pwritev2 calls", candidates: []candidate{
			rawSyscalls(bpf.IopathOpSysSYS_WRITEV, bpf.IopathOpSysSYS_PWRITEV, bpf.IopathOpSysSYS_PWRITEV2),
			{mech: Tracepoint, attach: concat(syscallPair(bpf.IopathProgTpEnterWritev, "writev"), syscallPair(bpf.IopathProgTpEnterPwritev, "pwritev"), syscallPair(bpf.IopathProgTpEnterPwritev2, "pwritev2"))},
		}},
		{Name: "fsync", Loses: "fsync/fdatasync/sync_file_range/sync/syncfs calls", candidates: []candidate{
			rawSyscalls(bpf.IopathOpSysSYS_FSYNC, bpf.IopathOpSysSYS_FDATASYNC, bpf.IopathOpSysSYS_SYNC_FILE_RANGE, bpf.IopathOpSysSYS_SYNC, bpf.IopathOpSysSYS_SYNCFS),
			{mech: Tracepoint, attach: concat(syscallPair(bpf.IopathProgTpEnterFsync, "fsync"), syscallPair(bpf.IopathProgTpEnterFdatasync, "fdatasync"),
				syscallPair(bpf.IopathProgTpEnterSyncFileRange, "sync_file_range"), syscallPair(bpf.IopathProgTpEnterSync, "sync"), syscallPair(bpf.IopathProgTpEnterSyncfs, "syncfs"))},
		}},
		{Name: "copy", Loses: "sendfile/splice/copy_file_range calls", candidates: []candidate{
			rawSyscalls(bpf.IopathOpSysSYS_SENDFILE, bpf.IopathOpSysSYS_SPLICE, bpf.IopathOpSysSYS_COPY_FILE_RANGE),
		}},
		// execve's own reads (the binary's headers, its interpreter's);
		// the binary is named by the follow hook's sched_process_exec.
		{Name: "exec", Loses: "execve calls: what the kernel read to load a program stays unattributed (cause exec)", candidates: []candidate{
			rawSyscalls(bpf.IopathOpSysSYS_EXECVE),
		}},
		{Name: "rename", Loses: "a path after a directory above its file is renamed (the old one for up to 256 records)", candidates: []candidate{
			{mech: Fentry, attach: []attachment{fn(bpf.IopathProgFexitVfsRename, akFexit, "vfs_rename")}},
			{mech: Kprobe, attach: []attachment{fn(bpf.IopathProgKretprobeVfsRename, akKretprobe, "vfs_rename")}},
			rawSyscalls(bpf.IopathOpSysSYS_RENAME),
		}},
		// issue 13 (bpf/aio.c): libaio through its system calls.
		{Name: "libaio", Loses: "libaio requests (their IO is unattributed)", candidates: []candidate{
			rawSyscalls(bpf.IopathOpSysSYS_IO_SUBMIT, bpf.IopathOpSysSYS_IO_GETEVENTS),
		}},
		{Name: "aio_iocb", Loses: "exact iocb starts in a multi-iocb io_submit (matched by file and offset instead)", candidates: []candidate{
			{mech: Fentry, attach: []attachment{fn(bpf.IopathProgFentryIoSubmitOne, akFentry, "io_submit_one")}},
			{mech: Kprobe, attach: []attachment{fn(bpf.IopathProgKprobeIoSubmitOne, akKprobe, "io_submit_one")}},
		}},
		{Name: "aio_dio", Loses: "separate direct-IO iocbs within one io_submit (their bios go to the first)", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{shaped(bpf.IopathProgAioDioBegin, akTPBTF, "iomap_dio_rw_begin", "kiocb,iov_iter,*,*")}},
		}},
		// issue 13 (bpf/uring.c): io_uring from its tracepoints (the 6.4+
		// shapes: io_uring_submit_req was io_uring_submit_sqe before).
		{Name: "io_uring", Loses: "io_uring requests (their IO is unattributed)", candidates: []candidate{
			{mech: TPBTF, attach: uringEvents(bpf.IopathProgUringSubmitReq, "io_uring_submit_req", "io_kiocb",
				bpf.IopathProgUringComplete, "io_ring_ctx,*,io_uring_cqe")},
			{mech: TPBTF, variant: "io_uring_complete with the CQE's fields (6.12 here)", attach: uringEvents(
				bpf.IopathProgUringSubmitReq, "io_uring_submit_req", "io_kiocb", bpf.IopathProgUringCompleteFields, "*,*,*,*,*,*,*")},
			{mech: TPBTF, variant: "io_uring_submit_sqe(req, ...) and io_uring_complete with the CQE's fields (6.1 here)", attach: uringEvents(
				bpf.IopathProgUringSubmitSqe, "io_uring_submit_sqe", "io_kiocb,*", bpf.IopathProgUringCompleteFields, "*,*,*,*,*,*,*")},
		}},
		{Name: "io_uring_local_work", Loses: "ends of io_uring inline parts at the task work of DEFER_TASKRUN rings", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgUringLocalWorkRun, akTPBTF, "io_uring_local_work_run")}},
		}},
		{Name: "io_uring_dio", Loses: "names of io-wq workers' direct IO by their io_uring request (named at their completion instead)", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{shaped(bpf.IopathProgUringDioBegin, akTPBTF, "iomap_dio_rw_begin", "kiocb,iov_iter,*,*")}},
		}},
		{Name: "io_uring_enter", Loses: "submit_op_id of io_uring requests", candidates: []candidate{
			rawSyscalls(bpf.IopathOpSysSYS_IO_URING_ENTER),
		}},
		{Name: "filemap_get_pages", Loses: "cache.lookups", candidates: []candidate{
			{mech: Fentry, attach: []attachment{fn(bpf.IopathProgFentryFilemapGetPages, akFentry, "filemap_get_pages")}},
			{mech: Kprobe, attach: []attachment{fn(bpf.IopathProgKprobeFilemapGetPages, akKprobe, "filemap_get_pages")}},
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgBtfFilemapGetPages, akTPBTF, "mm_filemap_get_pages")}},
			{mech: Tracepoint, attach: []attachment{fn(bpf.IopathProgTpFilemapGetPages, akTracepoint, "filemap/mm_filemap_get_pages")}},
		}},
		{Name: "page_cache_add", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{shaped(bpf.IopathProgBtfPageCacheAdd, akTPBTF, "mm_filemap_add_to_page_cache", "folio")}},
			{mech: Tracepoint, attach: []attachment{fn(bpf.IopathProgTpPageCacheAdd, akTracepoint, "filemap/mm_filemap_add_to_page_cache")}},
		}},
		{Name: "readahead", Loses: "readahead windows from the kernel (derived from pages added instead)", candidates: []candidate{
			{mech: Fentry, attach: []attachment{shaped(bpf.IopathProgFexitPageCacheSyncRa, akFexit, "page_cache_sync_ra", "readahead_control,*"),
				shaped(bpf.IopathProgFexitPageCacheAsyncRa, akFexit, "page_cache_async_ra", "readahead_control,folio,*")}},
			{mech: Fentry, variant: "window passed as an argument (before 5.18)", attach: []attachment{
				shaped(bpf.IopathProgFexitPageCacheSyncRaRa, akFexit, "page_cache_sync_ra", "readahead_control,file_ra_state,*"),
				shaped(bpf.IopathProgFexitPageCacheAsyncRaRa, akFexit, "page_cache_async_ra", "readahead_control,file_ra_state,page,*")}},
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgBtfPageCacheSyncRa, akTPBTF, "page_cache_sync_ra"),
				fn(bpf.IopathProgBtfPageCacheAsyncRa, akTPBTF, "page_cache_async_ra"), fn(bpf.IopathProgBtfPageCacheRaOrder, akTPBTF, "page_cache_ra_order")}},
			{mech: Tracepoint, attach: []attachment{fn(bpf.IopathProgTpPageCacheSyncRa, akTracepoint, "readahead/page_cache_sync_ra"),
				fn(bpf.IopathProgTpPageCacheAsyncRa, akTracepoint, "readahead/page_cache_async_ra"), fn(bpf.IopathProgTpPageCacheRaOrder, akTracepoint, "readahead/page_cache_ra_order")}},
		}},
		{Name: "block_bio_queue", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{shaped(bpf.IopathProgTpBlockBioQueue, akTPBTF, "block_bio_queue", "bio")}},
			{mech: TPBTF, variant: "(q, bio) before 5.11", attach: []attachment{shaped(bpf.IopathProgTpBlockBioQueueQ, akTPBTF, "block_bio_queue", "request_queue,bio")}},
		}},
		{Name: "block_split", Loses: "attribution of split bios", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{shaped(bpf.IopathProgTpBlockSplit, akTPBTF, "block_split", "bio,*")}},
			{mech: TPBTF, variant: "(q, bio, sector) before 5.11", attach: []attachment{shaped(bpf.IopathProgTpBlockSplitQ, akTPBTF, "block_split", "request_queue,bio,*")}},
		}},
		{Name: "block_rq_issue", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{shaped(bpf.IopathProgTpBlockRqIssue, akTPBTF, "block_rq_issue", "request")}},
			{mech: TPBTF, variant: "(q, rq) before 5.11", attach: []attachment{shaped(bpf.IopathProgTpBlockRqIssueQ, akTPBTF, "block_rq_issue", "request_queue,request")}},
		}},
		{Name: "block_rq_complete", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgTpBlockRqComplete, akTPBTF, "block_rq_complete")}},
		}},
		{Name: "device_flush", Loses: "device cache flushes of fsync-family calls (their flush bios are released incomplete)", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{shaped(bpf.IopathProgTpFlushIssue, akTPBTF, "block_rq_issue", "request"), fn(bpf.IopathProgTpFlushComplete, akTPBTF, "block_rq_complete")}},
			{mech: TPBTF, variant: "(q, rq) before 5.11", attach: []attachment{shaped(bpf.IopathProgTpFlushIssueQ, akTPBTF, "block_rq_issue", "request_queue,request"), fn(bpf.IopathProgTpFlushComplete, akTPBTF, "block_rq_complete")}},
		}},
		{Name: "journal_commit", Loses: "device flushes of fsync-family calls that waited for another call's jbd2 commit (device_flush unavailable)", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{inModule(bpf.IopathProgTpJbd2StartCommit, "jbd2_start_commit", "jbd2"), inModule(bpf.IopathProgTpJbd2EndCommit, "jbd2_end_commit", "jbd2"),
				shaped(bpf.IopathProgTpCommitWaking, akTPBTF, "sched_waking", "task_struct")}},
		}},
		{Name: "journal_need", Loses: "exact jbd2 commits for ext4 fsync-family calls (a call gets the commit whose end woke it: an earlier one if it raced its own, none if it never slept)", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{inModule(bpf.IopathProgTpExt4SyncFileExit, "ext4_sync_file_exit", "ext4")}},
		}},
		{Name: "block_rq_requeue", Loses: "requeue counts", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgTpBlockRqRequeue, akTPBTF, "block_rq_requeue")}},
		}},
		{Name: "iowait", Loses: "blocked_ns", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgTpSchedSwitch, akTPBTF, "sched_switch")}},
		}},
		{Name: "follow", Loses: "children of traced processes", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgTpSchedProcessFork, akTPBTF, "sched_process_fork"), fn(bpf.IopathProgTpSchedProcessExit, akTPBTF, "sched_process_exit"),
				fn(bpf.IopathProgTpSchedProcessExec, akTPBTF, "sched_process_exec"), fn(bpf.IopathProgTpTaskRename, akTPBTF, "task_rename")}},
		}},
		{Name: "dirty_folio", Loses: "dirtied pages and their writeback", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgTpWritebackDirtyFolio, akTPBTF, "writeback_dirty_folio")}},
			{mech: TPBTF, variant: "writeback_dirty_page, one page per event (before 5.17)", attach: []attachment{fn(bpf.IopathProgTpWritebackDirtyPage, akTPBTF, "writeback_dirty_page")}},
		}},
		{Name: "page_cache_delete", Loses: "dirty pages removed before writeback", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{shaped(bpf.IopathProgTpPageCacheDelete, akTPBTF, "mm_filemap_delete_from_page_cache", "folio")}},
			{mech: TPBTF, variant: "struct page events (before 5.17)", attach: []attachment{shaped(bpf.IopathProgTpPageCacheDeletePage, akTPBTF, "mm_filemap_delete_from_page_cache", "page")}},
		}},
		{Name: "balance_dirty_pages", Loses: "throttle_ns", candidates: []candidate{
			{mech: Fentry, variant: "time inside the function", attach: []attachment{fn(bpf.IopathProgFentryBalanceDirtyPages, akFentry, "balance_dirty_pages"), fn(bpf.IopathProgFexitBalanceDirtyPages, akFexit, "balance_dirty_pages")}},
			{mech: Kprobe, variant: "time inside the function", attach: []attachment{fn(bpf.IopathProgKprobeBalanceDirtyPages, akKprobe, "balance_dirty_pages"), fn(bpf.IopathProgKretprobeBalanceDirtyPages, akKretprobe, "balance_dirty_pages")}},
			{mech: Tracepoint, variant: "sum of the kernel's planned pauses", attach: []attachment{fn(bpf.IopathProgTpBalanceDirtyPages, akTracepoint, "writeback/balance_dirty_pages")}},
		}},
		{Name: "do_writepages", Loses: "writeback passes per inode", candidates: []candidate{
			{mech: Fentry, attach: []attachment{fn(bpf.IopathProgFentryDoWritepages, akFentry, "do_writepages")}},
			{mech: Kprobe, attach: []attachment{fn(bpf.IopathProgKprobeDoWritepages, akKprobe, "do_writepages")}},
			{mech: TPBTF, variant: "flusher and sync_inode paths only", attach: []attachment{fn(bpf.IopathProgTpWritebackSingleInodeStart, akTPBTF, "writeback_single_inode_start")}},
		}},
		{Name: "writeback_start", Loses: "writeback reasons (derived from the inode pass instead)", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgBtfWritebackStart, akTPBTF, "writeback_start")}},
			{mech: Tracepoint, attach: []attachment{fn(bpf.IopathProgTpWritebackStart, akTracepoint, "writeback/writeback_start")}},
		}},
	}, faultHooks()...)
}
