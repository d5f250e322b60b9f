/* SPDX-License-Identifier: GPL-2.0 */
/* Internal types shared by flush.c (device cache flushes) and block.c. */
#ifndef IOPATH_FLUSH_H
#define IOPATH_FLUSH_H

#include "events.h" /* struct flush_done_ev is in the -type contract */

#define REQ_OP_FLUSH_ 2
#ifndef REQ_OP_MASK
#define REQ_OP_MASK 0xff
#endif

/* A flush request as flush.c remembers it (flush_issued, flush_last). */
struct flush_seen {
	__u64 issue_ns;
	__u64 done_ns;
	__u64 rq;
	__u32 cmd_flags;
	__u32 error;
	__u32 tid;
	__u32 served; /* owned bios it served (EV_FLUSH_DONE OWN_FLUSH_SERVES sent) */
};

/* RQF_FLUSH_SEQ, the bit of struct request.rq_flags that marks a request in
 * a flush sequence, set by the loader from the kernel's BTF (tracer/rqflags.go):
 * 1 << __RQF_FLUSH_SEQ where an enum names it (6.12's enum is anonymous, so a
 * CO-RE enum relocation cannot find it there: it then read bit 4,
 * __RQF_SCHED_TAGS, set on every request of a queue with an I/O scheduler),
 * else 1 << 4, the #define of 5.10 and 6.1. */
const volatile __u32 rqf_flush_seq_bit = 1U << 4;

/* Flush requests in flight (a device has one per hardware queue): flush.c. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* struct request * */
	__type(value, struct flush_seen);
} flush_issued SEC(".maps");

/* The transaction each jbd2 thread commits (jbd2_start_commit), and
 * whether that commit has ended (jbd2_end_commit): the thread then wakes
 * its waiters (flush.c; block.c owns the commit's record). A commit is
 * named by its jbd2 thread and its transaction id. */
struct jbd2_commit {
	__u32 tid;   /* transaction_t.t_tid of the commit (jbd2_start_commit) */
	__u32 ended; /* jbd2_end_commit seen, no jbd2_start_commit since */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32); /* the jbd2 thread's tid */
	__type(value, struct jbd2_commit);
} jbd2_commits SEC(".maps");

static __always_inline bool is_flush_rq(struct request *rq)
{
	return (rq->cmd_flags & REQ_OP_MASK) == REQ_OP_FLUSH_ && !rq->bio;
}

/* flush_requeued forgets a flush request the driver handed back
 * (block_rq_requeue, block.c): its next issue is the same flush, not a sign
 * that its completion went unseen. */
static __always_inline void flush_requeued(struct request *rq)
{
	if (!is_flush_rq(rq))
		return;
	__u64 key = (__u64)rq;
	bpf_map_delete_elem(&flush_issued, &key);
}

static __always_inline __u32 rqf_flush_seq(void)
{
	return rqf_flush_seq_bit;
}

#endif /* IOPATH_FLUSH_H */
