//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Write-side hooks: dirtying, throttling, writeback.
 * "dirty_folio": tp_btf writeback_dirty_folio(folio, mapping) (5.17+), fired
 *   on clean->dirty in the dirtying task. Tracked folios go to dirty_pages.
 * "balance_dirty_pages": fentry/fexit or kprobe/kretprobe (exact time inside;
 *   iowait sleeps inside count as pauses) or writeback:balance_dirty_pages
 *   (one event per throttle-loop pass; pause is the planned sleep in ms).
 * "do_writepages": fentry/kprobe do_writepages(mapping, wbc) (flusher and
 *   fsync paths) or tp_btf writeback_single_inode_start(inode, wbc, nr)
 *   (flusher and sync_inode paths only).
 * "writeback_start": writeback:writeback_start, the work item and its reason. */
#include "op.h"

static __always_inline int dirtied(struct address_space *mapping, __u64 index, __u32 nr);

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(tp_writeback_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	if (!track_dirty || !mapping)
		return 0;
	return dirtied(mapping, BPF_CORE_READ(folio, index), folio_pages(folio));
}

/* writeback_dirty_page(page, mapping) up to 5.15: one page (kernels/issue 16). */

SEC("tp_btf/writeback_dirty_page")
int BPF_PROG(tp_writeback_dirty_page, struct page *page, struct address_space *mapping)
{
	if (!track_dirty || !mapping)
		return 0;
	/* page___index (filemap.c): 6.18 renamed index to __folio_index */
	return dirtied(mapping, BPF_CORE_READ((struct page___index *)page, index), 1);
}

/* dirtied tracks nr pages from index of mapping turned dirty by the current task. */
static __always_inline int dirtied(struct address_space *mapping, __u64 index, __u32 nr)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct op *op = current_op();
	if (!op && !is_traced(tgid))
		return 0;
	struct inode *host = BPF_CORE_READ(mapping, host);
	if ((BPF_CORE_READ(host, i_mode) & S_IFMT) != S_IFREG) {
		/* Filesystem metadata in the block device's page cache (inode
		 * tables, directories): it goes to disk through the journal. */
		if (op)
			op->other_dirtied += nr;
		return 0;
	}
	struct dirty_key k = {
		.ino = BPF_CORE_READ(host, i_ino),
		.index = index,
		.dev = BPF_CORE_READ(host, i_sb, s_dev),
	};
	bool copy = op && op->sys >= SYS_SENDFILE && op->sys <= SYS_COPY_FILE_RANGE;
	if (op && op->ino && !copy && (op->ino != k.ino || op->dev != k.dev)) {
		/* Not the call's file: e.g. ext4 dirtying an inode-table block of
		 * the block device's page cache for an atime update. Counted, not
		 * followed: it reaches disk through the journal. */
		op->other_dirtied += nr;
		return 0;
	}
	struct dirty_val v = {
		.op_id = op ? op->op_id : 0, .ts = bpf_ktime_get_ns(), .pid = tgid, .nr = nr,
	};
	int err = bpf_map_update_elem(&dirty_pages, &k, &v, BPF_NOEXIST);
	if (err == 0)
		__sync_fetch_and_add(&dirty_tracked, 1);
	else if (err == -E2BIG)
		count_event(CNT_DIRTY_FULL);
	else
		bpf_map_update_elem(&dirty_pages, &k, &v, BPF_EXIST);
	if (op) {
		op->dirtied_pages += nr;
		if (copy) {
			op->out_ino = k.ino;
			op->out_dev = k.dev;
		} else {
			add_range(op, k.index, nr, RANGE_DIRTIED);
		}
	}
	return 0;
}

static __always_inline void bdp_enter(void)
{
	struct op *op = current_op();
	if (op)
		op->bdp_start = bpf_ktime_get_ns();
}

static __always_inline void bdp_exit(void)
{
	struct op *op = current_op();
	if (op && op->bdp_start) {
		op->throttle_ns += bpf_ktime_get_ns() - op->bdp_start;
		op->bdp_start = 0;
	}
}

SEC("fentry/balance_dirty_pages")
int BPF_PROG(fentry_balance_dirty_pages)
{
	bdp_enter();
	return 0;
}

SEC("fexit/balance_dirty_pages")
int BPF_PROG(fexit_balance_dirty_pages)
{
	bdp_exit();
	return 0;
}

SEC("kprobe/balance_dirty_pages")
int BPF_KPROBE(kprobe_balance_dirty_pages)
{
	bdp_enter();
	return 0;
}

SEC("kretprobe/balance_dirty_pages")
int BPF_KRETPROBE(kretprobe_balance_dirty_pages)
{
	bdp_exit();
	return 0;
}

SEC("tracepoint/writeback/balance_dirty_pages")
int tp_balance_dirty_pages(struct trace_event_raw_balance_dirty_pages *ctx)
{
	struct op *op = current_op();
	if (!op)
		return 0;
	long pause = ctx->pause; /* ms, as the tracepoint converts it */
	if (pause > 0) {
		__u64 ns = (__u64)pause * 1000000;
		op->throttle_pauses++;
		op->throttle_ns += ns;
		if (ns > op->max_pause_ns)
			op->max_pause_ns = ns;
	}
	return 0;
}

static __always_inline void wb_inode(struct inode *inode, struct writeback_control *wbc)
{
	if (dirty_tracked <= 0)
		return;
	struct wb_inode_ev ev = {
		.type = EV_WB_INODE,
		.tid = (__u32)bpf_get_current_pid_tgid(),
		.ts = bpf_ktime_get_ns(),
		.ino = BPF_CORE_READ(inode, i_ino),
		.dev = BPF_CORE_READ(inode, i_sb, s_dev),
		.dirtied_when = BPF_CORE_READ(inode, dirtied_when),
		.sync_mode = BPF_CORE_READ(wbc, sync_mode),
		.nr_to_write = BPF_CORE_READ(wbc, nr_to_write),
		.for_kupdate = BPF_CORE_READ_BITFIELD_PROBED(wbc, for_kupdate),
		.for_background = BPF_CORE_READ_BITFIELD_PROBED(wbc, for_background),
		.for_sync = BPF_CORE_READ_BITFIELD_PROBED(wbc, for_sync),
	};
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	emit(&ev, sizeof(ev));
}

SEC("fentry/do_writepages")
int BPF_PROG(fentry_do_writepages, struct address_space *mapping, struct writeback_control *wbc)
{
	wb_inode(BPF_CORE_READ(mapping, host), wbc);
	return 0;
}

SEC("kprobe/do_writepages")
int BPF_KPROBE(kprobe_do_writepages, struct address_space *mapping, struct writeback_control *wbc)
{
	wb_inode(BPF_CORE_READ(mapping, host), wbc);
	return 0;
}

SEC("tp_btf/writeback_single_inode_start")
int BPF_PROG(tp_writeback_single_inode_start, struct inode *inode, struct writeback_control *wbc)
{
	wb_inode(inode, wbc);
	return 0;
}

SEC("tracepoint/writeback/writeback_start")
int tp_writeback_start(struct trace_event_raw_writeback_work_class *ctx)
{
	if (dirty_tracked <= 0)
		return 0;
	struct wb_start_ev ev = {
		.type = EV_WB_START,
		.tid = (__u32)bpf_get_current_pid_tgid(),
		.ts = bpf_ktime_get_ns(),
		.nr_pages = ctx->nr_pages,
		.sb_dev = ctx->sb_dev,
		.reason = ctx->reason,
		.sync_mode = ctx->sync_mode,
		.for_kupdate = ctx->for_kupdate,
		.for_background = ctx->for_background,
	};
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	emit(&ev, sizeof(ev));
	return 0;
}

SEC("tp_btf/writeback_start")
int BPF_PROG(btf_writeback_start, struct bdi_writeback *wb, struct wb_writeback_work *work)
{
	if (dirty_tracked <= 0)
		return 0;
	struct super_block *sb = BPF_CORE_READ(work, sb);
	struct wb_start_ev ev = {
		.type = EV_WB_START,
		.tid = (__u32)bpf_get_current_pid_tgid(),
		.ts = bpf_ktime_get_ns(),
		.nr_pages = BPF_CORE_READ(work, nr_pages),
		.sb_dev = sb ? BPF_CORE_READ(sb, s_dev) : 0,
		.reason = BPF_CORE_READ(work, reason),
		.sync_mode = BPF_CORE_READ(work, sync_mode),
		.for_kupdate = BPF_CORE_READ_BITFIELD_PROBED(work, for_kupdate),
		.for_background = BPF_CORE_READ_BITFIELD_PROBED(work, for_background),
		.for_sync = BPF_CORE_READ_BITFIELD_PROBED(work, for_sync),
	};
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	emit(&ev, sizeof(ev));
	return 0;
}
