/* SPDX-License-Identifier: GPL-2.0 */
/* Internal types shared by flush.c (device cache flushes) and block.c. */
#ifndef IOPATH_FLUSH_H
#define IOPATH_FLUSH_H

#include "events.h" /* struct flush_done_ev is in the -type contract */

#define REQ_OP_FLUSH_ 2
#define RQF_FLUSH_SEQ_OLD (1U << 4) /* before 6.3 a #define, not an enum */

/* A flush request as flush.c remembers it (flush_issued, flush_last). */
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
