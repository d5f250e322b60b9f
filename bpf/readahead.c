//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Hook "readahead": what window the kernel decided for a call.
 * Mechanisms, best first:
 *  fexit page_cache_sync_ra / page_cache_async_ra (5.18+ shapes:
 *    (ractl, req_count) and (ractl, folio, req_count)): ractl->ra holds the
 *    window after sizing (start, size, async_size).
 *  readahead:page_cache_sync_ra / page_cache_async_ra + page_cache_ra_order
 *    tracepoints (6.18+): sync/async fire at entry (size is the previous
 *    window), ra_order fires after sizing with the new window.
 *  none: userspace derives readahead from pages added beyond the request. */
#include "op.h"

static __always_inline struct ra_decision *ra_push(struct op *op, __u32 kind, __u64 index, __u32 req)
{
	__u32 n = op->nr_ra;
	if (n >= MAX_RA)
		return NULL;
	struct ra_decision *r = &op->ra[n];
	r->kind = kind;
	r->index = index;
	r->start = index;
	r->size = 0;
	r->async_size = 0;
	r->req_count = req;
	op->nr_ra = n + 1;
	return r;
}

/* exec_other_file: a decision on a file other than the program an execve
 * call loads (its interpreter's header read), which its record does not
 * list; ino 0: unknown (counted). */
static __always_inline bool exec_other_file(struct op *op, __u64 ino)
{
	return op->sys == SYS_EXECVE && op->ino && ino && ino != op->ino;
}

/* ra_entry records a sync/async decision at its entry tracepoint, on the
 * file of inode number ino. */
static __always_inline void ra_entry(__u32 kind, __u64 index, __u32 req, __u64 ino)
{
	struct op *op = current_op();
	if (op && !exec_other_file(op, ino))
		ra_push(op, kind, index, req);
}

/* ra_fexit_ra records a decision whose window is in ra. */
static __always_inline void ra_fexit_ra(struct readahead_control *ractl, struct file_ra_state *ra, __u32 kind, __u64 req)
{
	struct op *op = current_op();
	if (!op || exec_other_file(op, BPF_CORE_READ(ractl, mapping, host, i_ino)))
		return;
	struct ra_decision *r = ra_push(op, kind, BPF_CORE_READ(ractl, _index), req);
	if (!r)
		return;
	r->start = BPF_CORE_READ(ra, start);
	r->size = BPF_CORE_READ(ra, size);
	r->async_size = BPF_CORE_READ(ra, async_size);
}

/* 5.18+: the window is ractl->ra. The ractl___ra flavor keeps the field
 * access relocatable on kernels without it (their programs are not loaded). */
struct readahead_control___ra {
	struct file_ra_state *ra;
} __attribute__((preserve_access_index));

static __always_inline void ra_fexit(struct readahead_control *ractl, __u32 kind, __u64 req)
{
	ra_fexit_ra(ractl, BPF_CORE_READ((struct readahead_control___ra *)ractl, ra), kind, req);
}

SEC("fexit/page_cache_sync_ra")
int BPF_PROG(fexit_page_cache_sync_ra, struct readahead_control *ractl, unsigned long req_count)
{
	ra_fexit(ractl, RA_SYNC, req_count);
	return 0;
}

SEC("fexit/page_cache_async_ra")
int BPF_PROG(fexit_page_cache_async_ra, struct readahead_control *ractl, struct folio *folio, unsigned long req_count)
{
	ra_fexit(ractl, RA_ASYNC, req_count);
	return 0;
}

/* Before 5.18 the window is an argument: page_cache_sync_ra(ractl, ra,
 * req_count) and page_cache_async_ra(ractl, ra, page, req_count) (5.10;
 * tracer/hooks.go picks these by the function's BTF shape; kernels/issue 16). */
SEC("fexit/page_cache_sync_ra")
int BPF_PROG(fexit_page_cache_sync_ra_ra, struct readahead_control *ractl, struct file_ra_state *ra, unsigned long req_count)
{
	ra_fexit_ra(ractl, ra, RA_SYNC, req_count);
	return 0;
}

SEC("fexit/page_cache_async_ra")
int BPF_PROG(fexit_page_cache_async_ra_ra, struct readahead_control *ractl, struct file_ra_state *ra, struct page *page,
	     unsigned long req_count)
{
	ra_fexit_ra(ractl, ra, RA_ASYNC, req_count);
	return 0;
}

SEC("tracepoint/readahead/page_cache_sync_ra")
int tp_page_cache_sync_ra(struct trace_event_raw_page_cache_ra_op *ctx)
{
	/* Loaded before current_op, so that clang cannot fold the context
	 * offset into a pointer (the verifier rejects a modified ctx pointer). */
	__u64 index = ctx->index;
	__u32 req = ctx->req_count;
	__u64 ino = ctx->i_ino;
	barrier_var(index);
	barrier_var(req);
	barrier_var(ino);
	ra_entry(RA_SYNC, index, req, ino);
	return 0;
}

SEC("tracepoint/readahead/page_cache_async_ra")
int tp_page_cache_async_ra(struct trace_event_raw_page_cache_ra_op *ctx)
{
	/* Loaded before current_op, so that clang cannot fold the context
	 * offset into a pointer (the verifier rejects a modified ctx pointer). */
	__u64 index = ctx->index;
	__u32 req = ctx->req_count;
	__u64 ino = ctx->i_ino;
	barrier_var(index);
	barrier_var(req);
	barrier_var(ino);
	ra_entry(RA_ASYNC, index, req, ino);
	return 0;
}

/* ra_order carries the window the sync/async entry above was sized to. It
 * also fires on its own (e.g. from the mmap fault path): then kind is unknown. */
/* ra_sized records the window page_cache_ra_order sized: it completes the
 * sync/async decision just pushed, or stands alone (e.g. the fault path). */
static __always_inline void ra_sized(__u64 index, __u64 start, __u32 size, __u32 async_size, __u64 ino)
{
	struct op *op = current_op();
	if (!op || exec_other_file(op, ino))
		return;
	__u32 n = op->nr_ra;
	struct ra_decision *r = NULL;
	if (n > 0 && n <= MAX_RA && op->ra[n - 1].size == 0)
		r = &op->ra[n - 1];
	else
		r = ra_push(op, RA_ORDER, index, 0);
	if (!r)
		return;
	r->start = start;
	r->size = size;
	r->async_size = async_size;
}

SEC("tracepoint/readahead/page_cache_ra_order")
int tp_page_cache_ra_order(struct trace_event_raw_page_cache_ra_order *ctx)
{
	ra_sized(ctx->index, ctx->index, ctx->size, ctx->async_size, ctx->i_ino);
	return 0;
}

/* The same three events as BTF raw tracepoints (typed struct file_ra_state *):
 * cheaper to attach and detach than classic tracepoints. */
SEC("tp_btf/page_cache_sync_ra")
int BPF_PROG(btf_page_cache_sync_ra, struct inode *inode, unsigned long index, struct file_ra_state *ra, unsigned long req_count)
{
	aio_mark_inode(inode, (__u64)index << PAGE_SHIFT, false); /* issue 13: a libaio request's start */
	ra_entry(RA_SYNC, index, req_count, BPF_CORE_READ(inode, i_ino));
	return 0;
}

SEC("tp_btf/page_cache_async_ra")
int BPF_PROG(btf_page_cache_async_ra, struct inode *inode, unsigned long index, struct file_ra_state *ra, unsigned long req_count)
{
	aio_mark_inode(inode, (__u64)index << PAGE_SHIFT, false); /* issue 13 */
	ra_entry(RA_ASYNC, index, req_count, BPF_CORE_READ(inode, i_ino));
	return 0;
}

SEC("tp_btf/page_cache_ra_order")
int BPF_PROG(btf_page_cache_ra_order, struct inode *inode, unsigned long index, struct file_ra_state *ra)
{
	ra_sized(index, BPF_CORE_READ(ra, start), BPF_CORE_READ(ra, size), BPF_CORE_READ(ra, async_size),
		 BPF_CORE_READ(inode, i_ino));
	return 0;
}
