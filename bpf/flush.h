/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by flush.c (device cache flushes) and block.c. */
#ifndef IOPATH_FLUSH_H
#define IOPATH_FLUSH_H

#include "common.h"

#define REQ_OP_FLUSH_ 2
#define RQF_FLUSH_SEQ_OLD (1U << 4) /* before 6.3 a #define, not an enum */

struct flush_done_ev {
	__u32 type;         /* EV_FLUSH_DONE */
	__u32 dev;          /* kernel dev_t of the disk */
	__u64 bio;          /* struct bio * of the waiting bio */
	__u64 op_id;        /* its owner's call (0: none, see pid) */
	__u64 queue_ns;     /* block_bio_queue of the bio */
	__u64 done_ns;      /* the waiting request's final completion */
	__u64 flush_rq;     /* struct request * of the flush (0: none served it) */
	__u64 flush_issue_ns;
	__u64 flush_done_ns;
	__u32 flush_flags;  /* the flush request's cmd_flags (rwbs) */
	__u32 flush_error;  /* its blk_status_t */
	__u32 rq_flags;     /* the waiting request's cmd_flags at its end */
	__u32 error;        /* the waiting request's blk_status_t */
	__u32 bytes;        /* the waiting request's data bytes (0: an empty flush) */
	__u32 pid;
	__u32 tid;
	__u32 own_flags;    /* OWN_* of the bio */
	__u32 flush_tid;    /* the task that issued the flush request */
	__u32 pad;
};

struct flush_seen {
	__u64 issue_ns;
	__u64 done_ns;
	__u64 rq;
	__u32 cmd_flags;
	__u32 error;
	__u32 tid;
	__u32 pad;
};

static __always_inline __u32 rqf_flush_seq(void)
{
	if (bpf_core_enum_value_exists(enum rqf_flags, __RQF_FLUSH_SEQ))
		return 1U << bpf_core_enum_value(enum rqf_flags, __RQF_FLUSH_SEQ);
	return RQF_FLUSH_SEQ_OLD;
}

#endif /* IOPATH_FLUSH_H */
