/* SPDX-License-Identifier: GPL-2.0 */
/* Spare programs: a second copy of the programs the kernel may skip.
 *
 * The kernel runs a tracing program only if that program is not already
 * running on the CPU (its per-CPU recursion counter; a skip is counted in
 * bpf_prog_info recursion_misses, iopath's missed_runs). Where programs run
 * preemptibly, a thread preempted inside one holds the counter, and every
 * other thread's event on that CPU skips the program until the first runs
 * again. Debian's 7.2 (PREEMPT_LAZY, x86's only models there) does this for
 * the system-call tracepoints (no preempt_disable around their BPF run
 * since they may fault) and for the block and iomap tracepoints too:
 * measured in the 1-vCPU VM, 2 libaio job processes, 1000 O_DIRECT reads:
 * tp_block_bio_queue 57 and tp_block_rq_issue 74 runs skipped, 74 bios of
 * the traced jobs never seen issued (2026-12-07).
 *
 * A spare is the same body as another program, with a recursion counter of
 * its own, attached after its primary on the same event (tracer/spare.go,
 * once the kernel has skipped a primary's run). It acts only when the
 * copies before it skipped this event, told per thread (the task the event
 * runs on) by counting runs and, where the event has one, by its key (the
 * bio, the request, the kiocb, the io_uring request):
 *  - every copy counts its runs: the primary adds one per event, a spare
 *    adds one and acts if that puts it ahead of every copy before it, else
 *    takes the highest count;
 *  - the copy that handles an event records its key as the thread's last;
 *    a spare that finds another key acts even when its count is not ahead.
 * Counts alone have an escape a reviewer found by modelling every skip
 * pattern (2026-12-07): a spare that skipped an event its primary ran lags
 * one behind and then misses the next event the primary skips. Keys alone
 * have another: a freed bio or request is reused at once, so a thread's
 * next event often has the same key (dd's O_DIRECT reads: every other
 * one). Either one tells a new event from a handled one in each case.
 * One spare was not enough where several threads take turns on one CPU: in
 * the 1-vCPU 7.2 VM, io_uring with 4 io-wq workers
 * (TestTraceUringFixedFiles/io-wq), the spare of tp_block_rq_issue took
 * over 66 runs and 31 were still lost, both copies held by preempted
 * threads (2026-12-07): the keyed programs have a second spare (SPARE2).
 * Left unhandled: an event every copy skips; a lagging spare at an event
 * with the key of the thread's previous one; nested events on one thread
 * (an interrupt's on top of a task's). Each copy's skips are counted, so
 * missed_runs still says so. Until spares_on, a primary only reads that
 * flag. */
#ifndef IOPATH_SPARE_H
#define IOPATH_SPARE_H

#include "helpers.h"

/* The copies of a spared program, in the order they are attached. */
enum { PRIMARY = 0, SPARE = 1, SPARE2 = 2, COPIES = 3 };

/* Set by userspace before it attaches the spares. */
volatile __u32 spares_on = 0;

struct spare_turns {
	__u32 runs[COPIES * SPARED_MAX]; /* [COPIES*p + c]: copy c of program p's runs */
	__u64 keys[SPARED_MAX];          /* program p's last event handled on the thread (0: no key) */
};

/* By thread id: threads that exit leave their entry to the LRU. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct spare_turns);
} spare_turns SEC(".maps");

/* turns returns the current thread's turns, NULL if it has none (the map
 * refused one: the primary then acts alone). */
static __always_inline struct spare_turns *turns(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct spare_turns *t = bpf_map_lookup_elem(&spare_turns, &tid);
	if (!t) {
		static const struct spare_turns zero = {};
		bpf_map_update_elem(&spare_turns, &tid, &zero, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&spare_turns, &tid);
	}
	return t;
}

/* take_turn says whether copy (PRIMARY, SPARE, SPARE2) of program prog
 * (enum spared) handles the current event, whose key is key (0: none). */
static __always_inline int take_turn(const int prog, const int copy, __u64 key)
{
	if (copy == PRIMARY && !spares_on)
		return 1;
	struct spare_turns *t = turns();
	if (!t)
		return copy == PRIMARY;
	__u32 *runs = &t->runs[COPIES * prog];
	if (copy == PRIMARY) {
		runs[PRIMARY]++;
		t->keys[prog] = key;
		return 1;
	}
	__u32 before = runs[PRIMARY]; /* the highest count of the copies before this one */
	if (copy == SPARE2 && runs[SPARE] > before)
		before = runs[SPARE];
	__u32 mine = runs[copy] + 1;
	if (mine <= before && t->keys[prog] == key) {
		runs[copy] = before; /* a copy before this one handled it */
		return 0;
	}
	if (mine <= before)
		mine = before + 1; /* lagging, and a new key: a new event */
	runs[PRIMARY] = mine;
	runs[SPARE] = mine;
	if (copy == SPARE2)
		runs[SPARE2] = mine;
	t->keys[prog] = key;
	count_event(CNT_SPARE_SYS_ENTER + prog);
	return 1;
}

#endif /* IOPATH_SPARE_H */
