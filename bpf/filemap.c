//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Page-cache hooks.
 * "page_cache_add": filemap:mm_filemap_add_to_page_cache, as tp_btf (typed
 *   struct folio *, 5.17+) or as a classic tracepoint (all kernels; the
 *   `order` field exists from 5.17, older events are single pages). Fires in
 *   the task inserting the folio: the reader for sync/async readahead, the
 *   writer in write_begin, the faulting task for mmap.
 * "filemap_get_pages": fentry on filemap_get_pages (5.12+, static: may be
 *   inlined) or filemap:mm_filemap_get_pages (6.12+), which fires at the end
 *   of the lookup, after any readahead and IO.
 * "page_cache_delete": tp_btf mm_filemap_delete_from_page_cache, to forget
 *   tracked dirty folios that were truncated or evicted before writeback. */
#include "op.h"

/* count_in_range adds the pages of [index, index+nr) that fall inside the
 * call's requested byte range: exact misses even when the ranges array
 * overflows. */
static __always_inline void count_in_range(struct op *op, __u64 index, __u32 nr)
{
	if (op->count == 0)
		return;
	__u64 first = op->offset >> PAGE_SHIFT;
	__u64 last = (op->offset + op->count - 1) >> PAGE_SHIFT;
	__u64 lo = index > first ? index : first;
	__u64 end = index + nr - 1;
	__u64 hi = end < last ? end : last;
	if (hi >= lo)
		op->pages_in_range += hi - lo + 1;
}

SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int tp_page_cache_add(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	struct op *op = current_op();
	if (!op)
		return 0;
	if (op->ino && (ctx->i_ino != op->ino || ctx->s_dev != op->dev))
		return 0; /* another file's page (the output of an in-kernel copy) */
	__u32 nr = 1;
	if (bpf_core_field_exists(ctx->order))
		nr = 1U << (BPF_CORE_READ(ctx, order) & 15);
	op->pages_added += nr;
	count_in_range(op, ctx->index, nr);
	add_range(op, ctx->index, nr, RANGE_ADDED);
	return 0;
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(btf_page_cache_add, struct folio *folio)
{
	struct op *op = current_op();
	if (!op)
		return 0;
	struct inode *host = BPF_CORE_READ(folio, mapping, host);
	/* execve is named only at its end (bpf/sched.c): the first regular
	 * file it reads is the program (prepare_binprm's read of its header
	 * comes before the interpreter's); directory and inode-table blocks
	 * (the block device's pages) and the interpreter's are other files. */
	if (!op->ino && op->sys == SYS_EXECVE) {
		if ((BPF_CORE_READ(host, i_mode) & S_IFMT) != S_IFREG)
			return 0;
		op->ino = BPF_CORE_READ(host, i_ino);
		op->dev = BPF_CORE_READ(host, i_sb, s_dev);
	}
	if (op->ino) {
		if (BPF_CORE_READ(host, i_ino) != op->ino || BPF_CORE_READ(host, i_sb, s_dev) != op->dev)
			return 0; /* another file's page (the output of an in-kernel copy) */
	}
	__u32 nr = folio_pages(folio);
	__u64 index = BPF_CORE_READ(folio, index);
	op->pages_added += nr;
	count_in_range(op, index, nr);
	add_range(op, index, nr, RANGE_ADDED);
	return 0;
}

SEC("tp_btf/mm_filemap_get_pages")
int BPF_PROG(btf_filemap_get_pages, struct address_space *mapping, unsigned long index, unsigned long last_index)
{
	aio_mark_inode(BPF_CORE_READ(mapping, host), (__u64)index << PAGE_SHIFT, false); /* issue 13 */
	struct op *op = current_op();
	if (!op)
		return 0;
	if (op->lookups == 0)
		op->lookup_first = index;
	op->lookup_last = last_index;
	op->lookups++;
	return 0;
}

SEC("tracepoint/filemap/mm_filemap_get_pages")
int tp_filemap_get_pages(struct trace_event_raw_mm_filemap_op_page_cache_range *ctx)
{
	struct op *op = current_op();
	if (!op)
		return 0;
	if (op->lookups == 0)
		op->lookup_first = ctx->index;
	op->lookup_last = ctx->last_index;
	op->lookups++;
	return 0;
}

/* lookup_seen counts one page lookup of the current call: the body of the
 * fentry and kprobe programs. Their first argument is the kiocb in every
 * version (5.12+); the looked-up index is its position. The last index is
 * not known here. */
static __always_inline void lookup_seen(struct kiocb *iocb)
{
	struct op *op = current_op();
	if (!op)
		return;
	__u64 index = BPF_CORE_READ(iocb, ki_pos) >> PAGE_SHIFT;
	if (op->lookups == 0)
		op->lookup_first = index;
	op->lookup_last = index;
	op->lookups++;
}

SEC("fentry/filemap_get_pages")
int BPF_PROG(fentry_filemap_get_pages, struct kiocb *iocb)
{
	lookup_seen(iocb);
	return 0;
}

SEC("kprobe/filemap_get_pages")
int BPF_KPROBE(kprobe_filemap_get_pages, struct kiocb *iocb)
{
	lookup_seen(iocb);
	return 0;
}

/* dirty_gone forgets a tracked dirty page-cache entry being deleted. */
static __always_inline int dirty_gone(struct address_space *mapping, __u64 index)
{
	if (!mapping)
		return 0;
	struct inode *host = BPF_CORE_READ(mapping, host);
	struct dirty_key k = {
		.ino = BPF_CORE_READ(host, i_ino),
		.index = index,
		.dev = BPF_CORE_READ(host, i_sb, s_dev),
	};
	struct dirty_val *v = bpf_map_lookup_elem(&dirty_pages, &k);
	if (!v)
		return 0;
	struct dirty_gone_ev ev = {
		.type = EV_DIRTY_GONE, .dev = k.dev, .ino = k.ino, .index = k.index,
		.op_id = v->op_id, .ts = bpf_ktime_get_ns(), .nr = v->nr, .pid = v->pid,
	};
	if (bpf_map_delete_elem(&dirty_pages, &k) == 0)
		__sync_fetch_and_add(&dirty_tracked, -1);
	agg_dropped(ev.pid, k.dev, k.ino, agg_on ? BPF_CORE_READ(host, i_generation) : 0, ev.nr); /* agg.h */
	if (!agg_only)
		emit(&ev, sizeof(ev));
	return 0;
}

SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(tp_page_cache_delete, struct folio *folio)
{
	if (dirty_tracked <= 0)
		return 0;
	return dirty_gone(BPF_CORE_READ(folio, mapping), BPF_CORE_READ(folio, index));
}

/* (struct page *) up to 5.15 (tracer/hooks.go picks it by BTF shape;
 * kernels/issue 16). */
SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(tp_page_cache_delete_page, struct page *page)
{
	if (dirty_tracked <= 0)
		return 0;
	return dirty_gone(BPF_CORE_READ(page, mapping), BPF_CORE_READ((struct page___index *)page, index));
}
