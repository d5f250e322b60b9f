//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Hook "libaio" (issue 13): Linux native AIO through the system calls, for
 * kernels where no function hook reaches io_submit_one (this machine's
 * 6.18: tracepoints only).
 *
 *  io_submit(ctx, nr, iocbpp) at raw_syscalls sys_enter: the call's iocbs
 *    are read from user memory (the kernel copies them itself right after),
 *    and iocb 0's request becomes the thread's running op. io_submit
 *    processes its iocbs in order, in the caller's context, so everything
 *    the running op collects (page-cache inserts, readahead, bios queued,
 *    dirtied pages) belongs to that request until a marker says the next
 *    iocb has started:
 *      iomap:iomap_dio_rw_begin (direct IO on ext4, xfs, btrfs: the iocb's
 *        file and position, before any bio),
 *      readahead:page_cache_sync_ra / page_cache_async_ra (6.18+, before the
 *        pages are added) and filemap:mm_filemap_get_pages (6.12+, at the end
 *        of each lookup; the first event of a cache hit),
 *    each matched to the next iocbs by file and offset. The running request
 *    is then sent as an EV_OP (sys SYS_AIO_READ / SYS_AIO_WRITE) and the
 *    matched iocb's begins. Request k of the call whose own number is seq
 *    is op_id tid<<32 | (seq + 1 + k): no table joins them.
 *  io_submit at sys_exit: the last request is sent, then EV_AIO_SUBMIT
 *    records with every iocb (user address, user data, opcode, fd, offset,
 *    bytes) and the call's result (iocbs submitted).
 *  iocbs beyond AIO_MAX_IOCBS are not reported (CNT_AIO_IOCB_TRUNC counts
 *    them): once a marker names one, the last reported request is sent and
 *    the bios queued until io_submit's exit are unattributed with cause
 *    CAUSE_AIO_TRUNC, never given to a reported request.
 *  io_getevents / io_pgetevents at sys_exit: EV_AIO_REAP records with the
 *    io_events returned (obj = the iocb's user address, data, res).
 * Completion itself runs in the bio's end_io (interrupt context): nothing
 * here looks at `current` then; userspace takes a direct request's
 * completion from its bios. */
#include "op.h"
#include "unattributed.h"

#define IOCB_CMD_PREAD 0
#define IOCB_CMD_PWRITE 1
#define IOCB_CMD_PREADV 7
#define IOCB_CMD_PWRITEV 8

#define AIO_LOOKAHEAD 4 /* iocbs a marker is matched against past the running one */

/* struct iocb of include/uapi/linux/aio_abi.h (x86-64, little endian). */
struct user_iocb {
	__u64 aio_data;
	__u32 aio_key;
	__s32 aio_rw_flags;
	__u16 aio_lio_opcode;
	__s16 aio_reqprio;
	__u32 aio_fildes;
	__u64 aio_buf;
	__u64 aio_nbytes;
	__s64 aio_offset;
	__u64 aio_reserved2;
	__u32 aio_flags;
	__u32 aio_resfd;
};

/* count_add adds n to counter idx. */
static __always_inline void count_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += n;
}

/* aio_iocb_at reads iocb k of the running io_submit; its user address, 0
 * if unreadable. */
static __always_inline __u64 aio_iocb_at(struct op *op, __u32 k, struct user_iocb *cb)
{
	__u64 p = 0;
	if (bpf_probe_read_user(&p, sizeof(p), (void *)(op->aio_iocbpp + (__u64)k * 8)) || !p)
		return 0;
	if (bpf_probe_read_user(cb, sizeof(*cb), (void *)p))
		return 0;
	return p;
}

static __always_inline __u64 aio_count(struct user_iocb *cb)
{
	if (cb->aio_lio_opcode == IOCB_CMD_PREADV || cb->aio_lio_opcode == IOCB_CMD_PWRITEV)
		return iov_total((const struct iovec *)cb->aio_buf, cb->aio_nbytes);
	return cb->aio_nbytes;
}

/* aio_close sends the running request's record. Its result is not known
 * here (userspace takes it from the reap): ret is the bytes asked for, so
 * that userspace counts the requested pages as hits or misses. */
static __always_inline void aio_close(struct op *op)
{
	if (!op->active || (op->sys != SYS_AIO_READ && op->sys != SYS_AIO_WRITE))
		return;
	op->active = 0;
	op->ret = op->count;
	op_stream(op);
}

/* aio_begin makes iocb k's request the thread's running op (reads and
 * writes of regular files and block devices; other opcodes have none). */
static __always_inline void aio_begin(struct op *op, __u32 k, struct user_iocb *cb)
{
	op->aio_cur = k;
	op->aio_dio = 0;
	__u32 sys;
	switch (cb->aio_lio_opcode) {
	case IOCB_CMD_PREAD:
	case IOCB_CMD_PREADV:
		sys = SYS_AIO_READ;
		break;
	case IOCB_CMD_PWRITE:
	case IOCB_CMD_PWRITEV:
		sys = SYS_AIO_WRITE;
		break;
	default:
		return;
	}
	op->seq = op->aio_call_seq + k; /* op_begin_in adds 1 */
	if (op_begin_in(op, sys, fd_file((int)cb->aio_fildes, FILE_PROBE), (int)cb->aio_fildes, cb->aio_offset,
			aio_count(cb), FILE_PROBE))
		op->req_id = op->op_id;
}

/* aio_submit_enter starts an io_submit call of a traced thread. */
static __always_inline void aio_submit_enter(struct op *op, long nr, __u64 iocbpp)
{
	op->aio_nr = 0;
	if (nr <= 0 || !iocbpp)
		return;
	if (nr > AIO_MAX_IOCBS)
		count_add(CNT_AIO_IOCB_TRUNC, nr - AIO_MAX_IOCBS);
	op->active = 0;
	op->aio_iocbpp = iocbpp;
	op->aio_nr = nr;
	op->seq++;
	op->aio_call_seq = op->seq;
	op->aio_start_ns = bpf_ktime_get_ns();
	op->aio_fn = 0;
	struct user_iocb cb = {};
	if (aio_iocb_at(op, 0, &cb))
		aio_begin(op, 0, &cb);
}

/* aio_unreported ends the last reported request of an io_submit whose
 * iocbs go on beyond AIO_MAX_IOCBS: what follows belongs to unreported
 * iocbs (aio_cur AIO_MAX_IOCBS says so to aio_bio_cause). */
static __always_inline void aio_unreported(struct op *op)
{
	aio_close(op);
	op->active = 0;
	op->aio_cur = AIO_MAX_IOCBS;
}

/* aio_bio_cause is the unattributed cause of a bio a traced thread queued
 * outside any traced call (block.c): CAUSE_AIO_TRUNC inside an io_submit's
 * unreported iocbs, else unattributed.h's. */
static __always_inline __u32 aio_bio_cause(struct bio *bio)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (op && op->aio_nr > AIO_MAX_IOCBS && op->aio_cur >= AIO_MAX_IOCBS)
		return CAUSE_AIO_TRUNC << OWN_CAUSE_SHIFT;
	return unattributed_cause(bio);
}

/* aio_mark moves the running io_submit to the iocb a marker names (the
 * file's ino and dev, a byte position); exact: the position is the iocb's
 * offset, at most once per request (direct IO's begin). */
static __always_inline void aio_mark_at(struct op *op, __u64 ino, __u32 dev, __u64 pos, bool exact)
{
	if (op->active && op->ino == ino && op->dev == dev) {
		if (exact) {
			if (!op->aio_dio && pos == op->offset) {
				op->aio_dio = 1;
				return;
			}
		} else if (pos >= op->offset && pos < op->offset + (op->count ? op->count : 1)) {
			return;
		}
	}
	for (__u32 i = 1; i <= AIO_LOOKAHEAD; i++) {
		__u32 k = op->aio_cur + i;
		if (k >= op->aio_nr)
			return;
		if (k >= AIO_MAX_IOCBS) {
			aio_unreported(op);
			return;
		}
		struct user_iocb cb = {};
		if (!aio_iocb_at(op, k, &cb))
			return;
		__u64 off = cb.aio_offset;
		__u64 n = cb.aio_lio_opcode == IOCB_CMD_PREADV || cb.aio_lio_opcode == IOCB_CMD_PWRITEV ? 0 : cb.aio_nbytes;
		bool hit = exact ? pos == off : (pos >= off && (n == 0 || pos < off + n)) || pos >> PAGE_SHIFT == off >> PAGE_SHIFT;
		if (!hit)
			continue;
		struct file *f = fd_file((int)cb.aio_fildes, FILE_PROBE);
		if (!f || BPF_CORE_READ(f, f_inode, i_ino) != ino)
			continue;
		aio_close(op);
		aio_begin(op, k, &cb);
		if (exact)
			op->aio_dio = 1;
		return;
	}
}

static __always_inline void aio_mark_inode(struct inode *inode, __u64 pos, bool exact)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op || !op->aio_nr)
		return;
	aio_mark_at(op, BPF_CORE_READ(inode, i_ino), BPF_CORE_READ(inode, i_sb, s_dev), pos, exact);
}

static __always_inline __u64 aio_wakeup(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* aio_emit is what the chunk callbacks of aio_submit_exit and aio_reap
 * share (bpf_loop's context: only values unknown to the verifier, so that
 * kernels before 6.7, which verified a callback once with the context's
 * initial constants, prune nothing; see struct wb_work). */
struct aio_emit {
	__u32 slot;     /* the caller's op: its task_ops slot (no pointer: the compat build keeps this in a map) */
	__u32 pad;
	__u64 ctx;      /* aio_context_t */
	__u64 arg;      /* io_submit: nr as passed; reap: the struct io_event * */
	__u64 now;
	__u64 id;       /* pid_tgid */
	long ret;
	__u32 nr;       /* iocbs (events) to report */
};

/* aio_submit_chunk sends iocbs c*AIO_PER_EV.. of the io_submit ending in
 * one EV_AIO_SUBMIT (bpf_loop callback; 1: stop). */
static long aio_submit_chunk(__u32 c, struct aio_emit *w)
{
	__u32 first = c * AIO_PER_EV;
	__u32 slot = w->slot;
	struct op *op = bpf_map_lookup_elem(&task_ops, &slot);
	if (!op || first >= w->nr || first >= AIO_MAX_IOCBS)
		return 1;
	struct aio_submit_ev *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_event(CNT_RINGBUF_LOST);
		return 0;
	}
	ev->type = EV_AIO_SUBMIT;
	ev->pid = op->owner;
	ev->tid = (__u32)w->id;
	ev->nr = w->arg;
	ev->op_id = ((__u64)ev->tid << 32) | op->aio_call_seq;
	ev->ctx = w->ctx;
	ev->start_ns = op->aio_start_ns;
	ev->end_ns = w->now;
	ev->ret = w->ret;
	ev->first = first;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	__u32 n = w->nr - first; /* first < w->nr */
	if (n > AIO_PER_EV)
		n = AIO_PER_EV;
	/* Unrolled, and no break: a loop whose body branches (a failed read,
	 * a vectored iocb) costs the verifier every path through every
	 * iteration where it cannot prune inside a loop (6.18: 350,000
	 * instructions, 1.7 s of start-up); unrolled, the paths join after
	 * each iocb. */
#pragma unroll
	for (__u32 j = 0; j < AIO_PER_EV; j++) {
		if (j >= n)
			continue;
		__u32 k = first + j;
		struct user_iocb cb = {};
		__u64 p = aio_iocb_at(op, k, &cb);
		struct aio_iocb *e = &ev->iocb[j];
		e->iocb = p;
		e->user_data = cb.aio_data;
		e->offset = cb.aio_offset;
		e->nbytes = aio_count(&cb);
		e->opcode = cb.aio_lio_opcode;
		e->fd = cb.aio_fildes;
		e->flags = cb.aio_flags;
		e->rw_flags = cb.aio_rw_flags;
	}
	ev->n = n;
	bpf_ringbuf_submit(ev, aio_wakeup());
	return 0;
}

#define AIO_CHUNKS (AIO_MAX_IOCBS / AIO_PER_EV)

static long aio_reap_chunk(__u32 c, struct aio_emit *w);

#ifdef IOPATH_COMPAT
/* The compat build has no bpf_loop: a bounded loop over the chunks, whose
 * every iteration 5.10's verifier checks. The chunk is a global function
 * instead (checked once), its context in a per-thread scratch entry
 * (global functions take scalars only on 5.10). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tid */
	__type(value, struct aio_emit);
} aio_scratch SEC(".maps");

__noinline long aio_chunk_global(__u32 c, __u32 reap)
{
	if (c >= AIO_CHUNKS)
		return 1;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct aio_emit *w = bpf_map_lookup_elem(&aio_scratch, &tid);
	if (!w)
		return 1;
	return reap ? aio_reap_chunk(c, w) : aio_submit_chunk(c, w);
}

/* aio_chunks sends w's iocbs (reap: io_events) in chunks of AIO_PER_EV. */
static __always_inline void aio_chunks(struct aio_emit *w, __u32 reap)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (bpf_map_update_elem(&aio_scratch, &tid, w, BPF_ANY)) {
		count_event(CNT_RINGBUF_LOST); /* no record: counted as a lost one */
		return;
	}
	for (__u32 c = 0; c < AIO_CHUNKS; c++)
		if (aio_chunk_global(c, reap))
			break;
	bpf_map_delete_elem(&aio_scratch, &tid);
}
#else
/* aio_chunks sends w's iocbs (reap: io_events) in chunks of AIO_PER_EV. */
static __always_inline void aio_chunks(struct aio_emit *w, __u32 reap)
{
	if (reap)
		bpf_loop(AIO_CHUNKS, aio_reap_chunk, w, 0);
	else
		bpf_loop(AIO_CHUNKS, aio_submit_chunk, w, 0);
}
#endif

/* aio_submit_exit ends an io_submit: its last request's record, then its
 * iocbs (the first AIO_MAX_IOCBS) in EV_AIO_SUBMIT records of AIO_PER_EV each. */
static __always_inline void aio_submit_exit(struct pt_regs *regs, long ret)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op || !op->aio_nr)
		return;
	aio_close(op);
	__u32 nr = op->aio_nr;
	struct aio_emit w = { .slot = op->slot, .ctx = BPF_CORE_READ(regs, di), .arg = BPF_CORE_READ(regs, si),
			      .now = bpf_ktime_get_ns(), .id = bpf_get_current_pid_tgid(), .ret = ret,
			      .nr = nr < AIO_MAX_IOCBS ? nr : AIO_MAX_IOCBS };
	aio_chunks(&w, 0);
	op->seq = op->aio_call_seq + nr;
	op->aio_nr = 0;
}

/* aio_reap_chunk sends io_events c*AIO_PER_EV.. of the reap in one
 * EV_AIO_REAP (bpf_loop callback; 1: stop). */
static long aio_reap_chunk(__u32 c, struct aio_emit *w)
{
	__u32 first = c * AIO_PER_EV;
	__u32 slot = w->slot;
	struct op *op = bpf_map_lookup_elem(&task_ops, &slot);
	if (!op || first >= w->nr || first >= AIO_MAX_IOCBS)
		return 1;
	struct aio_reap_ev *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_event(CNT_RINGBUF_LOST);
		return 0;
	}
	ev->type = EV_AIO_REAP;
	ev->pid = w->id >> 32;
	ev->tid = (__u32)w->id;
	ev->ctx = w->ctx;
	ev->ts = w->now;
	ev->ret = w->ret;
	ev->first = first;
	ev->min_nr = op->call_arg1;
	ev->start_ns = op->call_start_ns;
	ev->op_id = op->call_start_ns ? (w->id << 32) | op->call_arg2 : 0;
	__u32 n = w->nr - first;
	if (n > AIO_PER_EV)
		n = AIO_PER_EV;
	for (__u32 j = 0; j < AIO_PER_EV; j++) {
		if (j >= n)
			break;
		if (bpf_probe_read_user(&ev->ev[j], sizeof(ev->ev[j]),
					(void *)(w->arg + (__u64)(first + j) * sizeof(struct aio_event)))) {
			n = j;
			break;
		}
	}
	ev->n = n;
	bpf_ringbuf_submit(ev, aio_wakeup());
	return 0;
}

/* aio_reap reports the io_events an io_getevents/io_pgetevents call of a
 * traced thread returned (events: the 4th argument of both); those beyond
 * AIO_MAX_IOCBS are counted (CNT_AIO_REAP_TRUNC, in events). */
static __always_inline void aio_reap(struct pt_regs *regs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct op *op;
	if (ret <= 0 || !(op = op_slot((__u32)id, id >> 32)))
		return;
	__u32 total = ret;
	if (total > AIO_MAX_IOCBS) {
		count_add(CNT_AIO_REAP_TRUNC, total - AIO_MAX_IOCBS);
		total = AIO_MAX_IOCBS;
	}
	struct aio_emit w = { .ctx = BPF_CORE_READ(regs, di), .arg = BPF_CORE_READ(regs, r10), .now = bpf_ktime_get_ns(),
			      .id = id, .ret = ret, .nr = total, .slot = op->slot };
	aio_chunks(&w, 1);
	op->call_start_ns = 0;
}

/* Direct IO's begin (iomap filesystems): the marker of the iocb whose
 * kiocb this is. trace_iomap_dio_rw_begin(iocb, iter, dio_flags, done_before). */
static __always_inline int dio_begin(struct kiocb *iocb, const int copy)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op || !op->aio_nr || !take_turn(SPARED_AIO_DIO, copy, (__u64)iocb))
		return 0;
	struct inode *inode = BPF_CORE_READ(iocb, ki_filp, f_inode);
	aio_mark_at(op, BPF_CORE_READ(inode, i_ino), BPF_CORE_READ(inode, i_sb, s_dev), BPF_CORE_READ(iocb, ki_pos), true);
	return 0;
}

SEC("tp_btf/iomap_dio_rw_begin")
int BPF_PROG(aio_dio_begin, struct kiocb *iocb)
{
	return dio_begin(iocb, PRIMARY);
}

/* Its spare (bpf/spare.h). */
SEC("tp_btf/iomap_dio_rw_begin")
int BPF_PROG(aio_dio_begin_spare, struct kiocb *iocb)
{
	return dio_begin(iocb, SPARE);
}

SEC("tp_btf/iomap_dio_rw_begin")
int BPF_PROG(aio_dio_begin_spare2, struct kiocb *iocb)
{
	return dio_begin(iocb, SPARE2);
}

/* Where a function hook reaches io_submit_one(ctx, user_iocb, compat)
 * (fentry, else kprobe; x86 4.18+, not on this machine's 6.18), each call
 * is exactly the start of the next iocb: no marker needs to match it. */
static __always_inline void aio_submit_one(void)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op || !op->aio_nr)
		return;
	__u32 k = op->aio_fn++;
	if (k == 0 || k >= op->aio_nr)
		return; /* iocb 0 began at io_submit's entry */
	if (k >= AIO_MAX_IOCBS) {
		aio_unreported(op);
		return;
	}
	struct user_iocb cb = {};
	if (!aio_iocb_at(op, k, &cb))
		return;
	aio_close(op);
	aio_begin(op, k, &cb);
}

SEC("fentry/io_submit_one")
int BPF_PROG(fentry_io_submit_one)
{
	aio_submit_one();
	return 0;
}

SEC("kprobe/io_submit_one")
int BPF_KPROBE(kprobe_io_submit_one)
{
	aio_submit_one();
	return 0;
}
