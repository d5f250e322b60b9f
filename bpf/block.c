//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Block layer hooks (tp_btf: typed struct bio * / struct request *).
 *
 * Attribution is keyed by bio, not by the task running at issue/complete:
 * requests are issued from the submitter at unplug or from kblockd
 * (kworker/N:1H) and completed in IRQ context (KERNEL-HOOKS.md §3a).
 *  block_bio_queue  submitter context: remember bio -> {call, pid, tid}.
 *  block_split      the split-off bio inherits its parent's owner.
 *  block_rq_issue   walk rq->bio..bi_next; for owned bios emit EV_RQ_ISSUE
 *                   with per-bio bytes read now (they drop to 0 at completion).
 *  block_rq_complete/requeue  emit for requests we reported at issue.
 * Writeback bios: a write bio whose pages are tracked dirty folios is walked
 * (bvec -> page -> folio -> mapping->host) and joined with dirty_pages. */
#include "op.h"
#include "flush.h"
#include "unattributed.h"

#define REQ_OP_WRITE 1

/* 7.x renamed page->compound_head to compound_info (fallback for
 * kernels/issue 16: keep when restructuring). */
struct page___info {
	unsigned long compound_info;
} __attribute__((preserve_access_index));

/* folio_of returns the folio containing page. Bit 0 of compound_head marks a
 * tail page; the rest is the head page's address. 7.x calls the word
 * compound_info and, with HugeTLB vmemmap optimization on a power-of-2
 * struct page, stores a mask instead (head = page & mask): a value whose
 * bits above the low zeros are all ones is taken as that mask. */
static __always_inline struct folio *folio_of(struct page *page)
{
	unsigned long head;
	if (bpf_core_field_exists(page->compound_head))
		head = BPF_CORE_READ(page, compound_head);
	else
		head = BPF_CORE_READ((struct page___info *)page, compound_info);
	if (!(head & 1))
		return (struct folio *)page;
	unsigned long inv = ~(head - 1);
	if ((inv & (inv + 1)) == 0)
		return (struct folio *)((unsigned long)page & head);
	return (struct folio *)(head - 1);
}

/* claim records one tracked dirty folio in the event, merging contiguous
 * folios of the same call into one match, and forgets it; gen is its
 * inode's i_generation (the aggregates' file key). */
static __always_inline void claim(struct wb_bio_ev *ev, struct dirty_key *k, struct dirty_val *v, __u32 bio_pages,
				  __u32 gen)
{
	/* Every folio, merged or not: before the merge below skipped it,
	 * the aggregates counted only the first folio of each contiguous run
	 * of one call (kernels without large folios in the page cache, e.g.
	 * ext4 before 6.16: a 64 KiB write cleaned 1 page of 16). */
	agg_written(v->pid, k->dev, k->ino, gen, v->nr, bio_pages, v->ts, ev->op_id != 0); /* agg.h */
	__u32 n = ev->nr_match;
	if (n > 0 && n <= MAX_WB_MATCH) {
		struct wb_match *last = &ev->match[n - 1];
		if (last->op_id == v->op_id && last->index + last->nr == k->index) {
			last->nr += v->nr;
			last->bio_pages += bio_pages;
			if (v->ts < last->dirtied_ns)
				last->dirtied_ns = v->ts;
			goto forget;
		}
	}
	if (n >= MAX_WB_MATCH) {
		/* Full: send these matches and continue in a new part. */
		if (!agg_only)
			emit(ev, sizeof(*ev));
		ev->part++;
		ev->nr_match = 0;
		n = 0;
	}
	if (n < MAX_WB_MATCH) {
		ev->match[n].op_id = v->op_id;
		ev->match[n].dirtied_ns = v->ts;
		ev->match[n].index = k->index;
		ev->match[n].nr = v->nr;
		ev->match[n].pid = v->pid;
		ev->match[n].bio_pages = bio_pages;
		ev->nr_match = n + 1;
	}
forget:
	if (bpf_map_delete_elem(&dirty_pages, k) == 0)
		__sync_fetch_and_add(&dirty_tracked, -1);
}

/* folio_step handles one folio of the bio (bpf_loop callback). A bio_vec
 * may span several folios (physically contiguous pages are merged into one
 * multi-page bvec) and a large folio spans several pages. */
static long folio_step(__u32 step, void *unused)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct wb_work *w = bpf_map_lookup_elem(&wb_scratch, &tid);
	if (!w)
		return 1;
	struct wb_bio_ev *ev = &w->ev;
	if (w->pg >= w->bv_pages) {
		/* Next bvec. */
		if (w->i >= w->vcnt)
			return 1;
		struct bio_vec bv = {};
		bpf_probe_read_kernel(&bv, sizeof(bv), &((struct bio_vec *)w->vecs)[w->i]);
		w->i++;
		w->bv_page = (__u64)bv.bv_page;
		w->pg = bv.bv_offset >> PAGE_SHIFT;
		w->bv_pages = (bv.bv_offset + bv.bv_len + 4095) >> PAGE_SHIFT;
		ev->pages += w->bv_pages - w->pg;
		if (w->pg >= w->bv_pages)
			return 0;
	}
	struct page *page = (struct page *)((char *)w->bv_page + (__u64)w->pg * w->page_size);
	struct folio *folio = folio_of(page);
	__u32 nr = folio_pages(folio);
	__u32 in_folio = ((char *)page - (char *)folio) / w->page_size;
	__u32 left = nr > in_folio ? nr - in_folio : 1;
	/* Pages of this folio in this bvec (a bio may carry part of a large folio). */
	__u32 in_bio = w->bv_pages - w->pg;
	if (in_bio > left)
		in_bio = left;
	w->pg += left;
	struct address_space *mapping = folio_mapping_of(folio); /* op.h: also before folios */
	if (!mapping || ((unsigned long)mapping & 3))
		return 0; /* anonymous, movable or no file */
	struct inode *host = BPF_CORE_READ(mapping, host);
	struct dirty_key k = {
		.ino = BPF_CORE_READ(host, i_ino),
		.index = folio_index_of(folio),
		.dev = BPF_CORE_READ(host, i_sb, s_dev),
	};
	if (!ev->ino) {
		ev->ino = k.ino;
		ev->dev = k.dev;
	}
	count_event(CNT_WALK_FOLIOS);
	struct dirty_val *v = bpf_map_lookup_elem(&dirty_pages, &k);
	if (v) {
		count_event(CNT_WALK_MATCHED);
		claim(ev, &k, v, in_bio, agg_on ? BPF_CORE_READ(host, i_generation) : 0);
	}
	return 0;
}

#ifdef IOPATH_COMPAT
/* COMPAT_STEPS_PER_CALL folio_steps from first, as a global function
 * (scalar argument only: 5.10 takes no pointers in global functions);
 * kernels/issue 16. The verifier checks it once, and the caller's bounded
 * loop calls it MAX_WALK_STEPS / COMPAT_STEPS_PER_CALL times: with one
 * step per call, that loop alone was 87,000 of the instructions it
 * processed for block_bio_queue (every iteration is checked on 5.10). */
#define COMPAT_STEPS_PER_CALL 16
__noinline long folio_steps_global(__u32 first)
{
	/* first is used: for an argument the callee ignores, clang passes
	 * whatever the register holds, and 5.10's verifier refuses the call
	 * ("R1 is not a scalar"; seen after an unrelated change in bio_queue). */
	if (first >= COMPAT_WALK_STEPS)
		return 1;
#pragma unroll
	for (__u32 k = 0; k < COMPAT_STEPS_PER_CALL; k++)
		if (folio_step(first + k, NULL))
			return 1;
	return 0;
}
#endif

/* walk_wb_bio joins a write bio's pages with tracked dirty folios. */
static __always_inline void walk_wb_bio(struct bio *bio, struct op *op, __u32 pid, __u32 tid)
{
	struct wb_work *w = scratch(&wb_scratch, &wb_work_zero);
	if (!w)
		return;
	struct wb_bio_ev *ev = &w->ev;
	ev->type = EV_WB_BIO;
	ev->bio = (__u64)bio;
	ev->ts = bpf_ktime_get_ns();
	ev->op_id = op ? op->op_id : 0;
	ev->sys = op ? op->sys : 0;
	ev->tid = tid;
	ev->nr_match = 0;
	ev->pages = 0;
	ev->part = 0;
	ev->ino = 0;
	ev->dev = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));

	w->vecs = (__u64)BPF_CORE_READ(bio, bi_io_vec);
	w->vcnt = BPF_CORE_READ(bio, bi_vcnt);
	w->page_size = bpf_core_type_size(struct page);
	w->i = 0;
	w->pg = 0;
	w->bv_pages = 0;
	w->bv_page = 0;
	/* One step per folio plus one per bvec; MAX_WALK_STEPS covers a 16 MiB
	 * bio of single-page folios. Larger walks are counted as truncated. */
	count_event(CNT_WALK_BIOS);
#ifdef IOPATH_COMPAT
	/* compat.h: a bounded loop over a global function, which the verifier
	 * checks once instead of once per iteration. */
	for (__u32 i = 0; i < COMPAT_WALK_STEPS / COMPAT_STEPS_PER_CALL; i++)
		if (folio_steps_global(i * COMPAT_STEPS_PER_CALL))
			break;
#else
	bpf_loop(MAX_WALK_STEPS, folio_step, NULL, 0);
#endif
	if (w->i < w->vcnt || w->pg < w->bv_pages)
		count_event(CNT_BVEC_TRUNC);
	if (ev->nr_match == 0 && ev->part == 0)
		return;
	if (!agg_only)
		emit(ev, sizeof(*ev));
	struct bio_owner o = {
		.op_id = op ? op->op_id : 0, .queue_ns = ev->ts, .pid = pid, .tid = tid,
		.flags = OWN_WRITEBACK,
	};
	if (bpf_map_update_elem(&bio_owners, &bio, &o, BPF_ANY))
		count_event(CNT_BIO_OWNER_FULL);
}

static __always_inline bool is_jbd2(void)
{
	char comm[8];
	bpf_get_current_comm(comm, sizeof(comm));
	return comm[0] == 'j' && comm[1] == 'b' && comm[2] == 'd' && comm[3] == '2' && comm[4] == '/';
}

/* Before 5.12 a bio names its disk and partition (bi_disk, bi_partno), not a
 * block_device (kernels/issue 16). */
struct bio___disk {
	struct gendisk *bi_disk;
	__u8 bi_partno;
} __attribute__((preserve_access_index));

/* bio_dev returns the kernel dev_t (major<<20 | minor) a bio is queued on. */
static __always_inline __u32 bio_dev(struct bio *bio)
{
	if (bpf_core_field_exists(bio->bi_bdev))
		return BPF_CORE_READ(bio, bi_bdev, bd_dev);
	struct bio___disk *old = (void *)bio;
	struct gendisk *disk = BPF_CORE_READ(old, bi_disk);
	return ((__u32)BPF_CORE_READ(disk, major) << 20) |
	       ((__u32)BPF_CORE_READ(disk, first_minor) + BPF_CORE_READ(old, bi_partno));
}

static __always_inline int bio_queue(struct bio *bio, const int copy);

SEC("tp_btf/block_bio_queue")
int BPF_PROG(tp_block_bio_queue, struct bio *bio)
{
	return bio_queue(bio, PRIMARY);
}

/* Its spare (bpf/spare.h): 7.2 skipped it for bios of traced threads. */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(tp_block_bio_queue_spare, struct bio *bio)
{
	return bio_queue(bio, SPARE);
}

/* Its second spare (bpf/spare.h). */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(tp_block_bio_queue_spare2, struct bio *bio)
{
	return bio_queue(bio, SPARE2);
}

/* block_bio_queue(q, bio) before 5.11 (tracer/hooks.go picks the program by
 * the tracepoint's BTF shape; kernels/issue 16). */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(tp_block_bio_queue_q, struct request_queue *q, struct bio *bio)
{
	return bio_queue(bio, PRIMARY);
}

static __always_inline int bio_queue(struct bio *bio, const int copy)
{
	if (!take_turn(SPARED_BIO_QUEUE, copy, (__u64)bio))
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct op *op = current_op();
	bool write = (BPF_CORE_READ(bio, bi_opf) & REQ_OP_MASK) == REQ_OP_WRITE;

	/* A bio is queued once (BIO_TRACE_COMPLETION), so an owner already under
	 * this address belongs to an earlier bio there that was never reported
	 * at issue (a bio-based device's bio, e.g. dm's, becomes no request).
	 * Forget it: the new bio must not inherit that call (seen on 6.12: a
	 * jbd2 write at a freed read bio's address listed under the read).
	 * On 6.18 under fdatasync load (measured with a debug build) the stale
	 * owners are of fdatasync's on-stack empty PREFLUSH bio (the next one
	 * reuses the address) whose flush sequence's final block_rq_complete
	 * never ran flush.c's program: as many as the engine's never_issued
	 * (86/86, 58/58, 12/12 in three runs). */
	__u64 bk = (__u64)bio;
	if (bpf_map_lookup_elem(&bio_owners, &bk))
		bpf_map_delete_elem(&bio_owners, &bk);

	if (write && track_dirty && dirty_tracked > 0) {
		walk_wb_bio(bio, op, tgid, tid);
		if (bpf_map_lookup_elem(&bio_owners, &bio))
			goto counted;
	}
	if (!op && syncs_active > 0 && is_jbd2()) {
		__u32 dev = bio_dev(bio);
		__u64 *waiter = bpf_map_lookup_elem(&sync_waiters, &dev);
		/* The commit record (PREFLUSH|FUA, journal_submit_commit_record)
		 * of the commit this thread runs (flush.c): owned even with no
		 * waiter left on its device (sync_waiters keeps the latest call
		 * only), for the calls that wait for the commit. */
		__u32 fflags = (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)) |
			       (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA));
		struct jbd2_commit *c = (BPF_CORE_READ(bio, bi_opf) & fflags) ? bpf_map_lookup_elem(&jbd2_commits, &tid) : NULL;
		if (waiter || c) {
			struct bio_owner j = {
				.op_id = waiter ? *waiter : 0, .queue_ns = bpf_ktime_get_ns(), .pid = tgid, .tid = tid,
				.flags = (waiter ? OWN_JOURNAL : 0) | (c ? OWN_COMMIT_REC : 0), .commit = c ? c->tid : 0,
			};
			if (bpf_map_update_elem(&bio_owners, &bio, &j, BPF_ANY))
				count_event(CNT_BIO_OWNER_FULL);
			return 0;
		}
	}
	if (!op && !is_traced(tgid))
		return 0;
	struct bio_owner o = {
		.op_id = op ? op->op_id : 0, .queue_ns = bpf_ktime_get_ns(), .pid = tgid, .tid = tid,
		.flags = op ? 0 : aio_bio_cause(bio), /* aio.c: unattributed.h, or an unreported iocb */
	};
	if (bpf_map_update_elem(&bio_owners, &bio, &o, BPF_ANY)) {
		count_event(CNT_BIO_OWNER_FULL);
		return 0;
	}
counted:
	if (op) {
		op->bios_queued++;
		op->bio_bytes += BPF_CORE_READ(bio, bi_iter.bi_size);
	}
	return 0;
}

static __always_inline int bio_split(struct bio *split);

SEC("tp_btf/block_split")
int BPF_PROG(tp_block_split, struct bio *split)
{
	return bio_split(split);
}

/* block_split(q, bio, new_sector) before 5.11 (kernels/issue 16). */
SEC("tp_btf/block_split")
int BPF_PROG(tp_block_split_q, struct request_queue *q, struct bio *split)
{
	return bio_split(split);
}

static __always_inline int bio_split(struct bio *split)
{
	/* bio_chain(split, parent) set split->bi_private = parent. */
	__u64 parent = (__u64)BPF_CORE_READ(split, bi_private);
	struct bio_owner *po = bpf_map_lookup_elem(&bio_owners, &parent);
	if (!po)
		return 0;
	struct bio_owner o = *po;
	if (bpf_map_update_elem(&bio_owners, &split, &o, BPF_ANY))
		count_event(CNT_BIO_OWNER_FULL);
	if (o.flags & OWN_WRITEBACK) {
		/* Userspace joins the parts: the writeback is on disk when all are. */
		struct bio_split_ev ev = {
			.type = EV_BIO_SPLIT, .split = (__u64)split, .parent = parent, .ts = bpf_ktime_get_ns(),
		};
		emit(&ev, sizeof(ev));
	}
	return 0;
}

struct rq_walk {
	struct rq_issue_ev *ev;
	struct bio *bio;
	__u32 nr;
	__u32 flush_seq; /* OWN_FLUSH_SEQ: the request is in a flush sequence (flush.c) */
};

static long rq_bio_step(__u32 i, struct rq_walk *w)
{
	struct bio *bio = w->bio;
	if (!bio)
		return 1;
	struct rq_issue_ev *ev = w->ev;
	__u64 key = (__u64)bio;
	struct bio_owner *o = bpf_map_lookup_elem(&bio_owners, &key);
	if (o) {
		__u32 n = ev->nr_own;
		if (n < MAX_ISSUE_OWN) {
			ev->own[n].op_id = o->op_id;
			ev->own[n].bio = key;
			ev->own[n].sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
			ev->own[n].bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
			ev->own[n].queue_ns = o->queue_ns;
			ev->own[n].pid = o->pid;
			ev->own[n].tid = o->tid;
			ev->own[n].flags = o->flags | w->flush_seq;
			ev->nr_own = n + 1;
		} else {
			count_event(CNT_RQ_OWN_TRUNC);
		}
		/* Reported: forget the bio now rather than walk the chain
		 * again at completion. A requeued request is issued again
		 * with no owned bio left; the issue event still goes out
		 * (inflight says it is ours) and userspace keeps its bios.
		 * A request in a flush sequence ends again after a flush:
		 * flush.c reports that end and forgets the bio then. */
		if (!w->flush_seq)
			bpf_map_delete_elem(&bio_owners, &key);
	}
	w->nr++;
	w->bio = BPF_CORE_READ(bio, bi_next);
	return 0;
}

struct request___disk {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* rq_dev returns the kernel dev_t of a request's disk (0: none). The
 * request_queue names its disk from 5.14; before, the request does (rq_disk;
 * kernels/issue 16). rq is a typed tp_btf argument: direct loads. */
static __always_inline __u32 rq_dev(struct request *rq)
{
	if (bpf_core_field_exists(rq->q->disk)) {
		struct gendisk *disk = rq->q->disk;
		return disk ? ((__u32)disk->major << 20) | (__u32)disk->first_minor : 0;
	}
	struct gendisk *disk = BPF_CORE_READ((struct request___disk *)rq, rq_disk);
	return disk ? ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor) : 0;
}

static __always_inline int rq_issue(struct request *rq, const int copy);

SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_block_rq_issue, struct request *rq)
{
	return rq_issue(rq, PRIMARY);
}

/* Its spare (bpf/spare.h). */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_block_rq_issue_spare, struct request *rq)
{
	return rq_issue(rq, SPARE);
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_block_rq_issue_spare2, struct request *rq)
{
	return rq_issue(rq, SPARE2);
}

/* block_rq_issue(q, rq) before 5.11 and in 5.10 stable before 5.10.137
 * (kernels/issue 16). */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_block_rq_issue_q, struct request_queue *q, struct request *rq)
{
	return rq_issue(rq, PRIMARY);
}

static __always_inline int rq_issue(struct request *rq, const int copy)
{
	if (!take_turn(SPARED_RQ_ISSUE, copy, (__u64)rq))
		return 0;
	struct rq_issue_ev *ev = scratch(&rq_scratch, &rq_issue_zero);
	if (!ev)
		return 0;
	ev->nr_own = 0;
	/* rq is a typed tp_btf argument: direct loads. */
	struct rq_walk w = { .ev = ev, .bio = rq->bio, .flush_seq = (rq->rq_flags & rqf_flush_seq()) ? OWN_FLUSH_SEQ : 0 };
	LOOP(MAX_RQ_BIOS, COMPAT_RQ_BIOS, rq_bio_step, &w); /* compat.h */
	if (w.bio)
		count_event(CNT_RQ_CHAIN_TRUNC);
	agg_rq_issue(rq, rq_dev(rq)); /* agg.h */
	if (agg_only)
		return 0; /* top, serve: the walk only forgets the owned bios */
	__u64 rqk = (__u64)rq;
	if (ev->nr_own == 0 && !bpf_map_lookup_elem(&inflight, &rqk))
		return 0; /* not ours, and not a requeued request of ours */
	ev->type = EV_RQ_ISSUE;
	ev->rq = rqk;
	ev->ts = bpf_ktime_get_ns();
	ev->dev = rq_dev(rq);
	ev->sector = rq->__sector;
	ev->bytes = rq->__data_len;
	ev->cmd_flags = rq->cmd_flags;
	ev->nr_bios = w.nr;
	ev->issuer_tid = (__u32)bpf_get_current_pid_tgid();
	if (bpf_map_update_elem(&inflight, &rqk, &ev->ts, BPF_ANY))
		count_event(CNT_INFLIGHT_FULL);
	/* Cut after the last owned bio: usually one entry of MAX_ISSUE_OWN. */
	__u32 n = ev->nr_own;
	if (n > MAX_ISSUE_OWN)
		n = MAX_ISSUE_OWN;
	emit(ev, offsetof(struct rq_issue_ev, own) + n * sizeof(struct issue_own));
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	agg_rq_done(rq, error, nr_bytes); /* agg.h */
	__u64 key = (__u64)rq;
	if (bpf_map_delete_elem(&inflight, &key))
		return 0; /* not a request we reported at issue */
	struct rq_done_ev ev = {
		.type = EV_RQ_COMPLETE, .error = error, .rq = key, .ts = bpf_ktime_get_ns(), .bytes = nr_bytes,
	};
	emit(&ev, sizeof(ev));
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(tp_block_rq_requeue, struct request *rq)
{
	agg_rq_requeue(rq); /* agg.h */
	flush_requeued(rq); /* flush.h */
	__u64 key = (__u64)rq;
	if (!bpf_map_lookup_elem(&inflight, &key))
		return 0;
	struct rq_done_ev ev = {
		.type = EV_RQ_REQUEUE, .rq = key, .ts = bpf_ktime_get_ns(),
	};
	emit(&ev, sizeof(ev));
	return 0;
}
