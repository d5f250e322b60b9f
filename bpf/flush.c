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
 * issue (OWN_FLUSH_SEQ) for this final completion.
 *
 * Which bios a flush request serves is read at its issue: the requests
 * waiting for it are the hardware queue's running flush list
 * (hctx->fq->flush_queue[flush_running_idx], linked by rq->queuelist from
 * 6.5, rq->flush.list before; blk_kick_flush toggles flush_pending_idx, so
 * requests queued meanwhile wait on the other list). Each owned bio on it
 * gets an EV_FLUSH_DONE marked OWN_FLUSH_SERVES and its bio_owners entry the
 * same mark; the flush's completion (OWN_FLUSH_END) follows. So a jbd2
 * commit record on a device without FUA (PREFLUSH|FUA: a pre-flush, its
 * data, a post-flush) is named by both of its flush requests, and a flush
 * whose completion BPF never sees still names exactly the bios it served.
 *
 * Journal commits (jbd2's events, include/trace/events/jbd2.h, 2009: on every
 * kernel iopath is tested on, 5.10 to 7.2; sched_waking since 4.3):
 * jbd2_start_commit / jbd2_end_commit tell, per jbd2 thread, which
 * transaction it commits; block.c owns that commit's record (its
 * PREFLUSH/FUA bio, OWN_COMMIT_REC) while a traced fsync-family call is in
 * flight; after jbd2_end_commit the thread wakes the callers waiting in
 * jbd2_log_wait_commit (wake_up(&journal->j_wait_done_commit)), and a
 * traced fsync-family call it wakes then gets an EV_FLUSH_DONE marked
 * OWN_COMMIT_WAIT naming the commit. The engine gives that call the
 * commit's flushes: it waited for another thread's commit, whose flushes
 * made its data and metadata durable. ext4's fsync then says which
 * transaction the call needed (OWN_COMMIT_NEED, ext4_sync_file_exit): the
 * exact commit, where a wake can name an earlier one or none. */
#include "op.h"
#include "flush.h" /* included after block.c (iopath.bpf.c): rq_dev */

/* The last completed flush of each hardware queue. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* struct blk_mq_hw_ctx * */
	__type(value, struct flush_seen);
} flush_last SEC(".maps");

static __always_inline int flush_issue(struct request *rq, const int copy);
static __always_inline __u32 flush_waiters(struct request *rq, struct flush_seen *s);

SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_flush_issue, struct request *rq)
{
	return flush_issue(rq, PRIMARY);
}

/* Its spares (bpf/spare.h): 7.2 skipped it beside tp_block_rq_issue. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_flush_issue_spare, struct request *rq)
{
	return flush_issue(rq, SPARE);
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_flush_issue_spare2, struct request *rq)
{
	return flush_issue(rq, SPARE2);
}

/* block_rq_issue(q, rq) before 5.11 (as tp_block_rq_issue_q, block.c). */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_flush_issue_q, struct request_queue *q, struct request *rq)
{
	return flush_issue(rq, PRIMARY);
}

static __always_inline int flush_issue(struct request *rq, const int copy)
{
	/* Turns are taken by flushes only (every copy sees the same request). */
	if (!is_flush_rq(rq) || !take_turn(SPARED_FLUSH_ISSUE, copy, (__u64)rq))
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
	s.served = flush_waiters(rq, &s);
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
		if (last.served) {
			struct flush_done_ev ev = {
				.type = EV_FLUSH_DONE, .flush_rq = key, .flush_issue_ns = last.issue_ns,
				.flush_done_ns = last.done_ns, .done_ns = last.done_ns, .flush_flags = last.cmd_flags,
				.flush_error = error, .flush_tid = last.tid, .own_flags = OWN_FLUSH_END,
			};
			ev.dev = rq_dev(rq); /* block.c */
			emit(&ev, sizeof(ev));
		}
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

/* struct request before 6.5 linked a request waiting in a flush list by
 * rq->flush.list (blk-flush.c); from 6.5 by rq->queuelist. */
struct request___flushlist {
	struct {
		struct list_head list;
	} flush;
} __attribute__((preserve_access_index));

#define MAX_FLUSH_WAITERS 64 /* requests on one flush list walked; beyond, counted */

struct flush_walk {
	__u64 rq;       /* the flush request */
	__u64 issue_ns; /* its issue */
	__u32 cmd_flags;
	__u32 tid;      /* its issuer */
	__u64 head;     /* the running flush list */
	__u64 node;     /* the next list entry */
	__u64 link_off; /* offset of the list entry in struct request */
	__u32 dev;
	__u32 served;
};

/* flush_waiter_step reports one request of the running flush list. */
static long flush_waiter_step(__u32 i, struct flush_walk *w)
{
	if (!w->node || w->node == w->head)
		return 1;
	struct request *wrq = (struct request *)(w->node - w->link_off);
	/* A local first: inside BPF_CORE_READ, w->node would be a CO-RE
	 * access of struct flush_walk, which the kernel does not have. */
	struct list_head *node = (struct list_head *)w->node;
	w->node = (__u64)BPF_CORE_READ(node, next);
	/* After its data completed, a request waiting for its post-flush
	 * has rq->bio NULL and rq->biotail its bio (blk_flush_restore_request). */
	struct bio *bio = BPF_CORE_READ(wrq, bio);
	if (!bio)
		bio = BPF_CORE_READ(wrq, biotail);
	__u64 bk = (__u64)bio;
	struct bio_owner *o = bk ? bpf_map_lookup_elem(&bio_owners, &bk) : NULL;
	if (!o)
		return 0;
	o->flags |= OWN_FLUSH_SERVES;
	struct flush_done_ev ev = {
		.type = EV_FLUSH_DONE, .dev = w->dev, .bio = bk, .op_id = o->op_id, .queue_ns = o->queue_ns,
		.done_ns = w->issue_ns, .flush_rq = w->rq, .flush_issue_ns = w->issue_ns,
		.flush_flags = w->cmd_flags, .bytes = BPF_CORE_READ(wrq, __data_len), .pid = o->pid, .tid = o->tid,
		.own_flags = o->flags, .flush_tid = w->tid, .commit_tid = o->commit,
	};
	emit(&ev, sizeof(ev));
	w->served++;
	return 0;
}

#ifdef IOPATH_COMPAT
/* The compat build walks the flush list in a bounded loop, whose every
 * iteration 5.10's verifier checks (145,000 instructions for
 * tp_flush_issue): the step is a global function instead, checked once,
 * with the walk in a per-thread scratch entry (global functions take no
 * pointers on 5.10). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tid */
	__type(value, struct flush_walk);
} flush_scratch SEC(".maps");

__noinline long flush_waiter_global(__u32 i)
{
	if (i >= MAX_FLUSH_WAITERS) /* i is used (block.c folio_steps_global says why) */
		return 1;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct flush_walk *w = bpf_map_lookup_elem(&flush_scratch, &tid);
	if (!w)
		return 1;
	return flush_waiter_step(i, w);
}

/* flush_walk_all runs the walk w in the scratch entry of the thread. */
static __always_inline void flush_walk_all(struct flush_walk *w)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (bpf_map_update_elem(&flush_scratch, &tid, w, BPF_ANY))
		return; /* w->node stays at the first waiter: counted as not walked */
	for (__u32 i = 0; i < MAX_FLUSH_WAITERS; i++)
		if (flush_waiter_global(i))
			break;
	struct flush_walk *s = bpf_map_lookup_elem(&flush_scratch, &tid);
	if (s) {
		w->node = s->node;
		w->served = s->served;
	}
	bpf_map_delete_elem(&flush_scratch, &tid);
}
#else
static __always_inline void flush_walk_all(struct flush_walk *w)
{
	bpf_loop(MAX_FLUSH_WAITERS, flush_waiter_step, w, 0);
}
#endif

/* flush_waiters reports the owned bios the flush request rq, being issued,
 * serves (the requests on its hardware queue's running flush list) and
 * returns how many. */
static __always_inline __u32 flush_waiters(struct request *rq, struct flush_seen *s)
{
	if (agg_only || !bpf_core_field_exists(rq->mq_hctx->fq))
		return 0; /* top, serve: no per-call records */
	struct blk_flush_queue *fq = BPF_CORE_READ(rq, mq_hctx, fq);
	if (!fq)
		return 0;
	__u32 idx = BPF_CORE_READ_BITFIELD_PROBED(fq, flush_running_idx);
	struct flush_walk w = { .rq = s->rq, .issue_ns = s->issue_ns, .cmd_flags = s->cmd_flags, .tid = s->tid, .dev = rq_dev(rq) };
	w.head = (__u64)fq + bpf_core_field_offset(struct blk_flush_queue, flush_queue) +
		 (idx & 1) * sizeof(struct list_head);
	/* flush.list follows flush.seq (an unsigned int) at 8. Its own
	 * field-offset relocation cannot be used: clang moves it out of the
	 * branch, and where the field is missing the poisoned instruction is
	 * then on the path the verifier walks. */
	if (bpf_core_field_exists(((struct request___flushlist *)0)->flush.list))
		w.link_off = bpf_core_field_offset(struct request, flush) + 8;
	else
		w.link_off = bpf_core_field_offset(struct request, queuelist);
	struct list_head *head = (struct list_head *)w.head;
	w.node = (__u64)BPF_CORE_READ(head, next);
	flush_walk_all(&w);
	if (w.node && w.node != w.head)
		count_event(CNT_FLUSH_FULL);
	return w.served;
}

/* The commit's transaction id, read through CO-RE: journal_t and
 * transaction_t are the jbd2 module's types where jbd2 is a module (Debian),
 * relocated against the module's BTF (cilium/ebpf searches every module's;
 * a kernel whose modules have no BTF, 5.10, has no tp_btf event of jbd2
 * either: this hook is then unavailable). */
SEC("tp_btf/jbd2_start_commit")
int BPF_PROG(tp_jbd2_start_commit, journal_t *journal, transaction_t *commit_transaction)
{
	__u32 me = (__u32)bpf_get_current_pid_tgid();
	/* Checked: 6.12+ refuse even the field address of a maybe-NULL argument. */
	struct jbd2_commit n = { .tid = commit_transaction ? BPF_CORE_READ(commit_transaction, t_tid) : 0 };
	bpf_map_update_elem(&jbd2_commits, &me, &n, BPF_ANY);
	return 0;
}

SEC("tp_btf/jbd2_end_commit")
int BPF_PROG(tp_jbd2_end_commit)
{
	__u32 me = (__u32)bpf_get_current_pid_tgid();
	struct jbd2_commit *c = bpf_map_lookup_elem(&jbd2_commits, &me);
	if (c)
		c->ended = 1;
	return 0;
}

/* A jbd2 thread that has ended a commit wakes the callers waiting for it
 * (jbd2_log_wait_commit): a traced fsync-family call among them waited for
 * that commit. A caller waiting for a later transaction is woken too and
 * sleeps again; it is woken again after its own commit, and the engine
 * keeps the last. */
SEC("tp_btf/sched_waking")
int BPF_PROG(tp_commit_waking, struct task_struct *p)
{
	if (syncs_active <= 0 || agg_only)
		return 0;
	__u32 me = (__u32)bpf_get_current_pid_tgid();
	struct jbd2_commit *c = bpf_map_lookup_elem(&jbd2_commits, &me);
	if (!c || !c->ended)
		return 0;
	__u32 tid = p->pid;
	struct op *op = op_of(tid); /* slots.h */
	if (!op || !op->active || !syncs_device(op->sys, op->f_flags))
		return 0;
	struct flush_done_ev ev = {
		.type = EV_FLUSH_DONE, .op_id = op->op_id, .done_ns = bpf_ktime_get_ns(), .pid = p->tgid, .tid = tid,
		.own_flags = OWN_COMMIT_WAIT, .flush_tid = me, .commit_tid = c->tid,
	};
	emit(&ev, sizeof(ev));
	return 0;
}

/* ext4's fsync (ext4_sync_file) ends: the call needed the journal
 * transaction the inode was last changed in, i_datasync_tid for fdatasync
 * and msync (datasync), i_sync_tid for fsync, which jbd2_complete_transaction
 * waited for (or found committed). Read here, after the wait, it is that
 * transaction unless another task changed the inode meanwhile (then a later
 * one, not committed yet: not reported). Its commit is named by its jbd2
 * thread (journal->j_task) and that
 * id: the engine gives the call exactly that commit's flush requests, where
 * a wake (tp_commit_waking) can name an earlier commit (the call woken after
 * it, then asleep again or not run until its own commit ended) or none (the
 * call never slept). ext4_inode_info, ext4_sb_info and journal_t are the
 * ext4 and jbd2 modules' types (Debian): relocated against their BTF. */
SEC("tp_btf/ext4_sync_file_exit")
int BPF_PROG(tp_ext4_sync_file_exit, struct inode *inode, int ret)
{
	if (syncs_active <= 0 || agg_only || ret < 0)
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct op *op = op_of(tid); /* slots.h */
	if (!op || !op->active || !syncs_device(op->sys, op->f_flags) || !inode)
		return 0; /* inode checked: 6.12+ refuse arithmetic on a maybe-NULL argument */
	struct ext4_sb_info *sbi = BPF_CORE_READ(inode, i_sb, s_fs_info);
	journal_t *journal = BPF_CORE_READ(sbi, s_journal);
	if (!journal)
		return 0; /* no journal (ext2 mode, noload): nothing to wait for */
	struct ext4_inode_info *ei = (void *)inode - bpf_core_field_offset(struct ext4_inode_info, vfs_inode);
	/* fsync and an O_SYNC write (vfs_fsync_range with datasync 0) need
	 * the metadata's transaction too; fdatasync, msync and an O_DSYNC
	 * write the data's. */
	bool full = op->sys == SYS_FSYNC || (op->f_flags & O_SYNC_FLAG);
	__u32 need = full ? BPF_CORE_READ(ei, i_sync_tid) : BPF_CORE_READ(ei, i_datasync_tid);
	__u32 jbd2 = BPF_CORE_READ(journal, j_task, pid);
	struct jbd2_commit *c = bpf_map_lookup_elem(&jbd2_commits, &jbd2);
	/* Not committed yet (later than the thread's commit, or that commit
	 * still running): the inode changed again after the call's wait, and
	 * this is not the transaction it waited for. (tid_t wraps: compared
	 * as jbd2's tid_gt does.) */
	if (c && ((__s32)(need - c->tid) > 0 || (need == c->tid && !c->ended)))
		return 0;
	struct flush_done_ev ev = {
		.type = EV_FLUSH_DONE, .op_id = op->op_id, .queue_ns = op->start_ns, .done_ns = bpf_ktime_get_ns(),
		.pid = (__u32)(bpf_get_current_pid_tgid() >> 32), .tid = tid, .own_flags = OWN_COMMIT_NEED,
		.flush_tid = jbd2, .commit_tid = need,
	};
	emit(&ev, sizeof(ev));
	return 0;
}
