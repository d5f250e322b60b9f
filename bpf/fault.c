//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Page faults on file mappings (issue 14). A fault is an op of kind
 * SYS_FAULT in the thread's slot, so the hooks that attribute page-cache
 * insertions, readahead decisions, bios, iowait sleeps and dirtied pages to
 * the thread's current op attribute them to the fault.
 *
 * How a fault is bracketed (seen with bpftrace on 6.18, a cold ext4 file,
 * read_ahead_kb 8192):
 *   handle_mm_fault (fentry or kprobe), else exceptions:page_fault_user
 *       entry (address; the file and page from the VMA: an argument of
 *       handle_mm_fault, else bpf_find_vma, 5.17+). Opens the op.
 *   filemap:mm_filemap_fault    filemap_fault ran (6.11+), before any IO.
 *       A cold page: read-around (page_cache_ra_order alone, 2048 pages),
 *       the bios, an iowait sleep, then VM_FAULT_RETRY: the fault is redone
 *       (the retry shows as a second mm_filemap_fault or, usually, a
 *       mm_filemap_map_pages that finds the page).
 *   filemap:mm_filemap_map_pages  fault-around mapped cached pages of
 *       [index, last_index] without IO (fires only when it found some).
 *   perf software events page-faults-maj / page-faults-min: the end, once,
 *       after any retry (mm_account_fault; a fault that failed, SIGBUS or
 *       SIGSEGV, has none). Major is what the task's maj_flt counts:
 *       VM_FAULT_MAJOR, or a retry after a major first pass.
 *   signal:signal_deliver  the end of a fault that has no perf event: the
 *       thread went back to user mode for a signal (fault_signaled).
 * A fault that ends unstreamed (minor, no IO, no sleep, no readahead) is
 * counted in fault_stats per process and file. */
#include "op.h"

#define X86_PF_WRITE 2

/* op->fault_busy: the user fault at op->fault_addr could not name its file
 * (bpf_find_vma found the mmap lock taken); filemap_fault may still. */
#define FAULT_BUSY       1
#define FAULT_BUSY_WRITE 2

/* Set by the loader when a mm_filemap_fault program is attached. */
const volatile __u8 fault_filemap_hooked = 0;

/* A process's faults on one file (agg.h agg_file_key: i_generation too,
 * so that a file reusing a deleted one's inode number is another). */
struct fault_key {
	struct agg_file_key file;
	__u32 pid;
	__u32 pad;
};

/* Faults not streamed (minor, no IO, no wait), per process and file. */
struct fault_stat {
	__u64 faults;
	__u64 write_faults;
	__u64 around_pages; /* pages offered to fault-around */
	__u64 fs_magic;     /* the file's superblock s_magic (tmpfs: no block IO) */
	char comm[16];
	char name[PART_LEN]; /* the file's name (last path component) */
};

/* The compat build preallocates fault_stats: before 6.1 perf_event programs
 * (the fault's end) may use only preallocated hash maps (5.10's verifier:
 * "perf_event programs can only use preallocated hash map"); 4096 entries
 * keep that at 0.4 MiB per CPU, and a full map is counted
 * (CNT_FAULT_STATS_FULL). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
#ifdef IOPATH_COMPAT
	__uint(max_entries, 4096);
#else
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
#endif
	__type(key, struct fault_key);
	__type(value, struct fault_stat);
} fault_stats SEC(".maps");

struct vma_ctx {
	__u64 file;
	__u64 start;
	__u64 pgoff;
};

#ifndef IOPATH_COMPAT
static long vma_cb(struct task_struct *task, struct vm_area_struct *vma, struct vma_ctx *c)
{
	c->file = (__u64)vma->vm_file;
	c->start = vma->vm_start;
	c->pgoff = vma->vm_pgoff;
	return 0;
}
#endif

/* vma_file returns the file mapped at addr in the current task (NULL for an
 * anonymous mapping) and the page index of addr in it. bpf_find_vma takes
 * the mmap lock with a trylock: a contended lock gives NULL. */
static __always_inline struct file *vma_file(__u64 addr, __u64 *index, bool *busy)
{
#ifdef IOPATH_COMPAT
	/* bpf_find_vma is 5.17+, like bpf_loop: the compat build (kernels
	 * without bpf_loop, compat.h) finds no file here, so it has no fault
	 * records and no msync/madvise records (their hooks' probes refuse
	 * them: doctor says unavailable). Its callback would be a subprogram
	 * that 5.10's verifier rejects ("number of funcs in func_info doesn't
	 * match number of subprogs") in every program that includes this. */
	return NULL;
#else
	struct vma_ctx c = {};
	long err = bpf_find_vma(bpf_get_current_task_btf(), addr, vma_cb, &c, 0);
	if (err == -EBUSY) {
		/* Another thread holds the mmap lock (mmap, munmap, a new
		 * thread's stack) while this fault runs under its VMA lock
		 * (6.4+): the file cannot be known here. Counted, not silent. */
		count_event(CNT_FAULT_VMA_BUSY);
		*busy = true;
		return NULL;
	}
	if (err || !c.file)
		return NULL;
	*index = ((addr - c.start) >> PAGE_SHIFT) + c.pgoff;
	return (struct file *)c.file;
#endif
}

/* Set by the loader when the msync/madvise calls find their file at
 * find_vma's return (fexit) instead of with bpf_find_vma (5.17+). */
const volatile __u8 map_call_hooked = 0;

/* map_call_open opens sys, an msync(addr, len, flags) or madvise(addr, len,
 * advice) call, on file, whose page index maps addr (the call's offset:
 * addr's place in the file). */
static __always_inline void map_call_open(struct op *op, __u32 sys, struct file *file, __u64 index, __u64 addr,
					  __u64 len, __u32 arg)
{
	__u64 off = (index << PAGE_SHIFT) | (addr & ((1 << PAGE_SHIFT) - 1));
	if (op_begin_in(op, sys, file, -1, off, len, FILE_PROBE))
		op->advice = arg;
}

/* map_call_begin starts an msync(addr, len, flags) or madvise(addr, len,
 * advice) call on the file mapped at addr. A range over several mappings
 * is named by its first; an anonymous mapping is not traced. Without
 * bpf_find_vma (map_call_hooked) the call waits in the thread's op
 * (map_pending, with addr, len and arg) for the kernel's own lookup of
 * addr: msync and madvise call find_vma(mm, start) first (5.10:
 * mm/msync.c, and find_vma_prev in mm/madvise.c), before any IO. */
static __always_inline void map_call_begin(struct op *op, __u32 sys, __u64 addr, __u64 len, __u64 arg)
{
	if (map_call_hooked) {
		op->map_pending = sys;
		op->fault_addr = addr;
		op->count = len;
		op->advice = arg;
		return;
	}
	__u64 index = 0;
	bool busy = false;
	struct file *file = vma_file(addr, &index, &busy);
	if (file)
		map_call_open(op, sys, file, index, addr, len, arg);
}

/* map_call_vma: the kernel's lookup of addr returned vma (NULL: nothing at
 * or above addr). The thread's first lookup of the address its waiting
 * msync/madvise named opens that call, as bpf_find_vma would have: on the
 * mapping that contains addr, if it maps a file. Lookups of other
 * addresses (and of other threads) pass. */
static __always_inline void map_call_vma(__u64 addr, struct vm_area_struct *vma)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op || !op->map_pending || op->active || op->fault_addr != addr)
		return;
	__u32 sys = op->map_pending;
	op->map_pending = 0;
	if (!vma)
		return;
	struct file *file = BPF_CORE_READ(vma, vm_file);
	__u64 start = BPF_CORE_READ(vma, vm_start);
	if (file && start <= addr)
		map_call_open(op, sys, file, ((addr - start) >> PAGE_SHIFT) + BPF_CORE_READ(vma, vm_pgoff), addr, op->count,
			      op->advice);
}

/* map_call_exit ends a call still waiting for its file (an early error,
 * an unmapped range). */
static __always_inline void map_call_exit(void)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (op)
		op->map_pending = 0;
}

SEC("fexit/find_vma")
int BPF_PROG(fexit_find_vma, struct mm_struct *mm, unsigned long addr, struct vm_area_struct *ret)
{
	map_call_vma(addr, ret);
	return 0;
}

/* madvise's lookup (5.10 do_madvise); find_vma_prev calls find_vma, which
 * the compiler may inline there. */
SEC("fexit/find_vma_prev")
int BPF_PROG(fexit_find_vma_prev, struct mm_struct *mm, unsigned long addr, struct vm_area_struct **pprev,
	     struct vm_area_struct *ret)
{
	map_call_vma(addr, ret);
	return 0;
}

/* fault_unended closes op's fault, which never ended: no perf page-fault
 * event and no signal's delivery came (the kernel went back to user mode
 * without accounting it, e.g. a pass that returned VM_FAULT_RETRY because
 * a signal was pending, which another thread of the process then took), or
 * the thread exits during it. What it did stands (its bios, readahead and
 * dirtied pages are in its record): it is streamed always, marked
 * FAULT_UNENDED, its end_ns the time it was found open (an upper bound), and
 * counted in CNT_FAULT_UNENDED. A call that starts over an open fault
 * (op_start) only counts it: streaming there would put the path walk in the
 * system-call entry programs. */
static __always_inline void fault_unended(struct op *op)
{
	if (!op->active || op->sys != SYS_FAULT)
		return;
	op->active = 0;
	op->ret = 0;
	op->fault_busy = 0;
	op->fault_flags |= FAULT_UNENDED;
	count_event(CNT_FAULT_UNENDED);
	op_stream(op);
}

/* fault_pass returns the thread's slot for a fault at addr, or NULL when
 * there is none or the fault is a retry of the one in progress (marked). */
static __always_inline struct op *fault_pass(__u64 addr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct op *op = op_slot((__u32)id, id >> 32);
	if (!op)
		return NULL;
	op->fault_busy = 0;
	if (op->active && op->sys == SYS_FAULT) {
		if ((op->fault_addr >> PAGE_SHIFT) == (addr >> PAGE_SHIFT)) {
			/* The same page again: the kernel returned to user space to
			 * redo the fault, with no end event for the first pass
			 * (Debian 7.2: the pass that read the file ahead, 64 MiB in
			 * 4 MiB bios, ended VM_FAULT_RETRY that way), or, seen from
			 * handle_mm_fault, the arch handler called it again with
			 * FAULT_FLAG_TRIED. One fault: keep its bios. */
			op->fault_flags |= FAULT_RETRIED;
			return NULL;
		}
		/* The thread faults elsewhere and the last fault never ended. */
		fault_unended(op);
	}
	return op;
}

/* fault_opened sets up the fault at addr just opened in op. */
static __always_inline void fault_opened(struct op *op, __u64 addr, bool write)
{
	op->fault_addr = addr;
	op->fault_flags = write ? FAULT_WRITE : 0;
	if (fault_filemap_hooked)
		op->fault_flags |= FAULT_FILEMAP_SEEN;
	op->around_index = 0;
	op->around_pages = 0;
}

/* fault_open opens the fault at addr on page index of file in op. */
static __always_inline void fault_open(struct op *op, struct file *file, __u64 index, __u64 addr, bool write)
{
	if (op_begin_in(op, SYS_FAULT, file, -1, index << PAGE_SHIFT, 1 << PAGE_SHIFT, FILE_PROBE))
		fault_opened(op, addr, write);
}

/* fault_begin: a user-mode fault at addr seen by page_fault_user (the file
 * from the VMA, bpf_find_vma). */
static __always_inline void fault_begin(__u64 addr, __u64 error_code)
{
	struct op *op = fault_pass(addr);
	if (!op)
		return;
	__u64 index = 0;
	bool busy = false;
	struct file *file = vma_file(addr, &index, &busy);
	if (file)
		fault_open(op, file, index, addr, error_code & X86_PF_WRITE);
	else if (busy) {
		op->fault_addr = addr;
		op->fault_busy = FAULT_BUSY | (error_code & X86_PF_WRITE ? FAULT_BUSY_WRITE : 0);
	}
}

/* fault_recover opens a user fault whose file bpf_find_vma could not name
 * (the mmap lock was taken) when it reaches filemap_fault: mapping is the
 * file's page cache, index the faulting page (the tracepoint's arguments,
 * 6.11+). The fault is then known by its inode, without a struct file: its
 * record has no path of its own (userspace names it from the inode's other
 * records). A fault that never reaches filemap_fault (fault-around mapped
 * the page, an anonymous mapping) stays counted in CNT_FAULT_VMA_BUSY only. */
static __always_inline void fault_recover(struct address_space *mapping, __u64 index)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op || !op->fault_busy || op->active)
		return;
	bool write = op->fault_busy & FAULT_BUSY_WRITE;
	op->fault_busy = 0;
	struct inode *inode = BPF_CORE_READ(mapping, host);
	if (!inode || (BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG)
		return;
	if (!op_start(op, SYS_FAULT, NULL, -1, index << PAGE_SHIFT, 1 << PAGE_SHIFT, BPF_CORE_READ(inode, i_ino),
		      BPF_CORE_READ(inode, i_sb, s_dev), 0, BPF_CORE_READ(inode, i_sb, s_magic)))
		return;
	fault_opened(op, op->fault_addr, write);
	count_event(CNT_FAULT_VMA_RECOVERED);
}

/* fault_begin_vma: handle_mm_fault(vma, address, flags, regs) (the 4-argument
 * form, 5.9+, where the fault's accounting, mm_account_fault, and so its
 * perf end event moved in): the VMA is an argument, so no bpf_find_vma.
 * Only user-mode faults (FAULT_FLAG_USER) open a fault, as page_fault_user
 * does: a kernel-mode fault on a user address (copy_to_user into a mapping
 * inside read(2)) belongs to the call in progress, and a GUP fault
 * (get_user_pages, FAULT_FLAG_REMOTE among them) has no perf end event
 * (regs NULL). FAULT_FLAG_* values are the same since 2.6 (enum fault_flag
 * 5.13+, #defines before). */
static __always_inline void fault_begin_vma(struct vm_area_struct *vma, __u64 addr, __u32 flags)
{
	if (!(flags & FAULT_FLAG_USER))
		return;
	struct op *op = fault_pass(addr);
	if (!op)
		return;
	struct file *file = BPF_CORE_READ(vma, vm_file);
	if (!file)
		return; /* anonymous */
	__u64 index = ((addr - BPF_CORE_READ(vma, vm_start)) >> PAGE_SHIFT) + BPF_CORE_READ(vma, vm_pgoff);
	fault_open(op, file, index, addr, flags & FAULT_FLAG_WRITE);
}

SEC("fentry/handle_mm_fault")
int BPF_PROG(fentry_handle_mm_fault, struct vm_area_struct *vma, unsigned long address, unsigned int flags)
{
	fault_begin_vma(vma, address, flags);
	return 0;
}

SEC("kprobe/handle_mm_fault")
int BPF_KPROBE(kprobe_handle_mm_fault, struct vm_area_struct *vma, unsigned long address, unsigned int flags)
{
	fault_begin_vma(vma, address, flags);
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(btf_page_fault_user, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	fault_begin(address, error_code);
	return 0;
}

/* The classic tracepoint's record (tracefs format; vmlinux.h has no type). */
struct page_fault_user_tp {
	__u64 common;
	__u64 address;
	__u64 ip;
	__u64 error_code;
};

SEC("tracepoint/exceptions/page_fault_user")
int tp_page_fault_user(struct page_fault_user_tp *ctx)
{
	__u64 addr = ctx->address, err = ctx->error_code;
	barrier_var(addr);
	barrier_var(err);
	fault_begin(addr, err);
	return 0;
}

/* fault_op returns the current thread's fault in progress (touched). */
static __always_inline struct op *fault_op(void)
{
	struct op *op = current_op();
	if (!op || op->sys != SYS_FAULT)
		return NULL; /* no op, or a kernel-mode fault inside a traced call */
	return op;
}

static __always_inline void fault_filemap(void)
{
	struct op *op = fault_op();
	if (!op)
		return;
	if (op->fault_flags & FAULT_FILEMAP)
		op->fault_flags |= FAULT_RETRIED;
	op->fault_flags |= FAULT_FILEMAP;
}

/* fexit/kretprobe filemap_fault: the pass's result, VM_FAULT_RETRY among
 * its bits (enum vm_fault_reason, from BTF). Without the tracepoint (before
 * 6.11) this is what says a fault was retried. */
static __always_inline void fault_filemap_ret(long ret)
{
	struct op *op = fault_op();
	if (!op)
		return;
	op->fault_flags |= FAULT_FILEMAP;
	if (ret & bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_RETRY))
		op->fault_flags |= FAULT_RETRIED;
}

SEC("fexit/filemap_fault")
int BPF_PROG(fexit_filemap_fault, struct vm_fault *vmf, vm_fault_t ret)
{
	fault_filemap_ret(ret);
	return 0;
}

SEC("kretprobe/filemap_fault")
int BPF_KRETPROBE(kretprobe_filemap_fault, long ret)
{
	fault_filemap_ret(ret);
	return 0;
}

SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(btf_filemap_fault, struct address_space *mapping, unsigned long index)
{
	fault_recover(mapping, index);
	fault_filemap();
	return 0;
}

SEC("tracepoint/filemap/mm_filemap_fault")
int tp_filemap_fault(void *ctx)
{
	fault_filemap();
	return 0;
}

static __always_inline void fault_around(__u64 index, __u64 last)
{
	struct op *op = fault_op();
	if (!op)
		return;
	/* A pass after filemap_fault ran: the kernel redid the fault. */
	if (op->fault_flags & FAULT_FILEMAP)
		op->fault_flags |= FAULT_RETRIED;
	if (op->around_pages == 0 && last >= index) {
		op->around_index = index;
		op->around_pages = last - index + 1;
	}
}

SEC("tp_btf/mm_filemap_map_pages")
int BPF_PROG(btf_filemap_map_pages, struct address_space *mapping, unsigned long index, unsigned long last_index)
{
	fault_around(index, last_index);
	return 0;
}

SEC("tracepoint/filemap/mm_filemap_map_pages")
int tp_filemap_map_pages(struct trace_event_raw_mm_filemap_op_page_cache_range *ctx)
{
	__u64 index = ctx->index, last = ctx->last_index;
	barrier_var(index);
	barrier_var(last);
	fault_around(index, last);
	return 0;
}

/* fault_count adds a fault that is not streamed to fault_stats. */
static __always_inline void fault_count(struct op *op)
{
	struct file *file = (struct file *)op->file;
	struct fault_key k = {
		.file = { .ino = op->ino, .dev = op->dev, .gen = BPF_CORE_READ(file, f_inode, i_generation) },
		.pid = op->pid,
	};
	struct fault_stat *v = bpf_map_lookup_elem(&fault_stats, &k);
	if (!v) {
		struct fault_stat zero = { .fs_magic = op->fs_magic };
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
		bpf_probe_read_kernel_str(zero.name, sizeof(zero.name), BPF_CORE_READ(file, f_path.dentry, d_name.name));
		if (bpf_map_update_elem(&fault_stats, &k, &zero, BPF_NOEXIST) == -E2BIG) {
			count_event(CNT_FAULT_STATS_FULL);
			return;
		}
		v = bpf_map_lookup_elem(&fault_stats, &k);
		if (!v)
			return;
	}
	v->faults++;
	if (op->fault_flags & FAULT_WRITE)
		v->write_faults++;
	v->around_pages += op->around_pages;
}

/* fault_close returns the thread's fault in progress, closed (inactive),
 * or NULL when there is none. */
static __always_inline struct op *fault_close(void)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op)
		return NULL;
	op->fault_busy = 0;
	if (!op->active || op->sys != SYS_FAULT)
		return NULL;
	op->active = 0;
	op->ret = 0;
	return op;
}

/* fault_end closes the thread's fault at its perf page-fault event: stream
 * it if it was major, touched the disk, waited, read ahead or dirtied a
 * page (or with --all), else count it. */
static __always_inline void fault_end(bool major)
{
	struct op *op = fault_close();
	if (!op)
		return;
	op->fault_flags |= FAULT_ENDED | (major ? FAULT_MAJOR : 0);
	if (major || (op->touched ? interesting(op) || op->nr_ra : interesting_untouched(op))) {
		op_stream(op);
		return;
	}
	fault_count(op);
}

/* fault_signaled closes the thread's fault when the thread goes back to
 * user mode to take signal sig (signal:signal_deliver, in get_signal) with
 * the fault still open. The fault's perf end event will never come: a pass
 * that returned VM_FAULT_RETRY with a signal pending is not redone (the
 * arch fault handler's fault_signal_pending, 5.8+; before it only a fatal
 * signal) and not accounted (mm_account_fault skips VM_FAULT_RETRY and
 * errors, 5.9+), and a failed fault (VM_FAULT_SIGBUS, SIGSEGV) raises the
 * signal itself. What the pass did stands: a shared write fault whose
 * page_mkwrite dirtied the page returns VM_FAULT_RETRY after it to throttle
 * without the mmap lock (fault_dirty_shared_page, 5.6-5.18; 5.19+ returns
 * VM_FAULT_COMPLETED, accounted), so the store, run again after the
 * handler, finds the page writable and faults no more. No
 * kernel count includes such a fault (maj_flt, min_flt): it is streamed
 * always, as a minor fault, marked FAULT_SIGNAL with ret the signal. */
static __always_inline void fault_signaled(int sig)
{
	struct op *op = fault_close();
	if (!op)
		return;
	op->fault_flags |= FAULT_ENDED | FAULT_SIGNAL;
	op->ret = sig;
	op_stream(op);
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(btf_signal_deliver, int sig)
{
	fault_signaled(sig);
	return 0;
}

SEC("tracepoint/signal/signal_deliver")
int tp_signal_deliver(struct trace_event_raw_signal_deliver *ctx)
{
	int sig = ctx->sig;
	barrier_var(sig);
	fault_signaled(sig);
	return 0;
}

SEC("perf_event")
int perf_fault_major(struct bpf_perf_event_data *ctx)
{
	fault_end(true);
	return 0;
}

SEC("perf_event")
int perf_fault_minor(struct bpf_perf_event_data *ctx)
{
	fault_end(false);
	return 0;
}
