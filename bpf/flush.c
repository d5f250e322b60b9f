//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Device cache flushes (block/blk-flush.c), seen with tracepoints only.
 *
 * On a device with a volatile write cache (queue/write_cache "write back"),
 * a bio with REQ_PREFLUSH or REQ_FUA (fsync's empty flush bio, jbd2's commit
 * block) is not issued as itself: blk_insert_flush parks its request on the
 * hardware queue's flush queue, and the flush machinery issues one separate
 * flush request (fq->flush_rq: op REQ_OP_FLUSH, no bio, rwbs "FF", usually
 * from kworker/N:1H) for every request waiting at that moment (several
 * callers' flushes merge into one). When it completes, flush_end_io moves
 * each waiting request on (its data, or a post-flush) and finally ends it
 * with blk_mq_end_request: a block_rq_complete for a request that was never
 * issued (an empty flush), or a second one after its data's (verified with
 * bpftrace on 6.18: Q "FWS" by the caller, I "FF" by kworker/1:1H, C "FF",
 * then C "WS" on the same CPU, no block_bio_complete for blk-mq bios).
 *
 * So:
 *   block_rq_issue     a flush request: remember its issue time (flush_issued).
 *   block_rq_complete  a flush request: remember it as the last flush of its
 *                      hardware queue (flush_last, keyed by rq->mq_hctx);
 *                      a request whose first bio asked for PREFLUSH/FUA and
 *                      is not in a flush sequence any more (RQF_FLUSH_SEQ
 *                      cleared by blk_flush_restore_request): its final end.
 *                      An owned bio gets EV_FLUSH_DONE, naming the last flush
 *                      of its queue if that was issued after the bio was
 *                      queued (it is the one that served it).
 * A device without a volatile cache never gets here: submit_bio_noacct
 * strips PREFLUSH/FUA and ends an empty flush bio before block_bio_queue.
 * block.c keeps the owner of a bio whose request is in a flush sequence at
 * issue (OWN_FLUSH_SEQ) for this final completion. */
#include "op.h"
#include "flush.h" /* included after block.c (iopath.bpf.c): rq_dev */

/* The last completed flush of each hardware queue. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* struct blk_mq_hw_ctx * */
	__type(value, struct flush_seen);
} flush_last SEC(".maps");

static __always_inline int flush_issue(struct request *rq);

SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_flush_issue, struct request *rq)
{
	return flush_issue(rq);
}

/* block_rq_issue(q, rq) before 5.11 (as tp_block_rq_issue_q, block.c). */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_flush_issue_q, struct request_queue *q, struct request *rq)
{
	return flush_issue(rq);
}

static __always_inline int flush_issue(struct request *rq)
{
	if (!is_flush_rq(rq))
		return 0;
	__u64 key = (__u64)rq;
	struct flush_seen s = {
		.issue_ns = bpf_ktime_get_ns(), .rq = key, .cmd_flags = rq->cmd_flags,
		.tid = (__u32)bpf_get_current_pid_tgid(),
	};
	struct flush_seen *prev = bpf_map_lookup_elem(&flush_issued, &key);
	if (prev) {
		/* Issued again with no completion seen and no requeue (which
		 * forgets it: flush_requeued): the kernel ended the previous
		 * flush (a hardware queue has one flush request, reused only
		 * when the last one is done), but no BPF program saw it
		 * (docs/kernel-notes.md, "Completions BPF never sees"). Say so:
		 * the engine gives it to the calls it served. */
		struct flush_done_ev ev = {
			.type = EV_FLUSH_DONE, .flush_rq = key, .flush_issue_ns = prev->issue_ns,
			.flush_flags = prev->cmd_flags, .flush_tid = prev->tid, .done_ns = s.issue_ns,
			.own_flags = OWN_FLUSH_UNSEEN,
		};
		ev.dev = rq_dev(rq); /* block.c */
		emit(&ev, sizeof(ev));
	}
	if (bpf_map_update_elem(&flush_issued, &key, &s, BPF_ANY))
		count_event(CNT_FLUSH_FULL);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_flush_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 hctx = (__u64)rq->mq_hctx;
	if (is_flush_rq(rq)) {
		__u64 key = (__u64)rq;
		struct flush_seen *s = bpf_map_lookup_elem(&flush_issued, &key);
		if (!s)
			return 0; /* issued before iopath attached */
		struct flush_seen last = *s;
		bpf_map_delete_elem(&flush_issued, &key);
		last.done_ns = bpf_ktime_get_ns();
		last.error = error;
		bpf_map_update_elem(&flush_last, &hctx, &last, BPF_ANY);
		return 0;
	}
	struct bio *bio = rq->bio;
	if (!bio || (rq->rq_flags & rqf_flush_seq()))
		return 0; /* a data step of a flush sequence: its end comes later */
	__u32 fflags = (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)) |
		       (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA));
	if (!(bio->bi_opf & fflags))
		return 0; /* an ordinary request: two loads */
	__u64 bk = (__u64)bio;
	struct bio_owner *o = bpf_map_lookup_elem(&bio_owners, &bk);
	if (!o)
		return 0;
	struct flush_done_ev ev = {
		.type = EV_FLUSH_DONE, .bio = bk, .op_id = o->op_id, .queue_ns = o->queue_ns,
		.done_ns = bpf_ktime_get_ns(), .rq_flags = rq->cmd_flags, .error = error, .bytes = rq->__data_len,
		.pid = o->pid, .tid = o->tid, .own_flags = o->flags,
	};
	ev.dev = rq_dev(rq); /* block.c */
	bpf_map_delete_elem(&bio_owners, &bk);
	struct flush_seen *last = bpf_map_lookup_elem(&flush_last, &hctx);
	/* A flush issued before the bio was queued cannot have served it. */
	if (last && last->issue_ns >= ev.queue_ns) {
		ev.flush_rq = last->rq;
		ev.flush_issue_ns = last->issue_ns;
		ev.flush_done_ns = last->done_ns;
		ev.flush_flags = last->cmd_flags;
		ev.flush_error = last->error;
		ev.flush_tid = last->tid;
	}
	emit(&ev, sizeof(ev));
	return 0;
}
