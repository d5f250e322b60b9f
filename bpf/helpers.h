/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the hook files (vfs_read.c, vfs_write.c, syscalls.c,
 * rename.c, filemap.c, readahead.c, block.c, sched.c, writeback.c): loss
 * counters, ring-buffer output, the traced-process test, per-call page
 * ranges. op.h builds a call's life on them; iopath.bpf.c includes every
 * hook file so that bpf2go builds one object whose maps all programs share. */
#ifndef IOPATH_HELPERS_H
#define IOPATH_HELPERS_H

#include "slots.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

/* scratch returns this task's entry in a scratch map (created on demand). */
static __always_inline void *scratch(void *map, const void *zero)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	void *v = bpf_map_lookup_elem(map, &tid);
	if (v)
		return v;
	bpf_map_update_elem(map, &tid, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, &tid);
}

static __always_inline int emit(void *data, __u64 size)
{
	__u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, data, size, flags)) {
		count_event(CNT_RINGBUF_LOST);
		return -1;
	}
	return 0;
}

/* comm_matches says whether the current task's comm is target_comm: the
 * bytes up to its NUL are equal (a kernel before 5.17 may leave stale bytes
 * after the NUL: strlcpy, not strscpy_pad). */
static __always_inline bool comm_matches(void)
{
#ifndef IOPATH_COMPAT
	/* Two plain loads of current->comm (a BTF pointer): under --comm
	 * every call of every thread is filtered here, and
	 * bpf_get_current_comm with a byte loop cost ~40 ns of it. */
	struct task_struct *task = bpf_get_current_task_btf();
	const __u64 *c = (const __u64 *)task->comm;
	return (c[0] & target_comm_mask_lo) == target_comm_lo && (c[1] & target_comm_mask_hi) == target_comm_hi;
#else
	char comm[16];
	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < 16; i++) {
		if (comm[i] != target_comm[i])
			return false;
		if (comm[i] == 0)
			break;
	}
	return true;
#endif
}

/* is_traced says whether the current task belongs to a traced process. */
static __always_inline bool is_traced(__u32 tgid)
{
	if (tgid == self_tgid)
		return false;
	/* The whole machine (top/serve without a filter). */
	if (trace_all)
		return true;
	/* The comm first: two loads, where a targets lookup is a hash
	 * lookup (~60 ns here). */
	if (filter_comm && comm_matches())
		return true;
	/* No pid was ever added (--comm alone): targets is empty (the fork
	 * hook adds only children of its members). */
	if (targets_gen == 0)
		return false;
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/* op_touch zeroes a call's counters the first time a hook records into
 * it. op_begin sets only the call's identity: most calls (cache hits) are
 * never touched, and skipping ~25 stores per call is measurable at a
 * million calls a second. Counters of an untouched call are stale (from an
 * earlier call) and must not be read. */
static __always_inline void op_touch(struct op *op)
{
	if (op->touched)
		return;
	op->touched = 1;
	op->blocked_ns = 0;
	op->sleep_start = 0;
	op->throttle_ns = 0;
	op->throttle_pauses = 0;
	op->dirtied_pages = 0;
	op->other_dirtied = 0;
	op->pages_added = 0;
	op->pages_in_range = 0;
	op->out_ino = 0;
	op->out_dev = 0;
	op->bios_queued = 0;
	op->bio_bytes = 0;
	op->lookups = 0;
	op->lookup_first = 0;
	op->lookup_last = 0;
	op->nr_ranges = 0;
	op->ranges_lost = 0;
	op->nr_ra = 0;
	op->bdp_start = 0;
	op->max_pause_ns = 0;
}

/* current_op returns the running call of the current task, ready to record
 * into (touched), or NULL. */
static __always_inline struct op *current_op(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct op *op = op_of((__u32)id);
	if (!op)
		op = exec_moving_op(id); /* bpf/slots.h */
	if (op && op->active) {
		op_touch(op);
		return op;
	}
	return NULL;
}

static __always_inline bool extend(struct page_range *r, __u64 index, __u32 nr, __u32 flags)
{
	if (r->flags == flags && r->index + r->nr == index) {
		r->nr += nr;
		return true;
	}
	return false;
}

/* add_range records pages in the call's ranges, merging with the previous
 * range of the same kind: a buffered write alternates "added" and "dirtied"
 * for each new page, so the last two entries are checked. */
static __always_inline void add_range(struct op *op, __u64 index, __u32 nr, __u32 flags)
{
	__u32 n = op->nr_ranges;
	__u32 last = n - 1, prev = n - 2;
	barrier_var(last);
	if (last < MAX_RANGES && extend(&op->ranges[last], index, nr, flags))
		return;
	barrier_var(prev);
	if (prev < MAX_RANGES && extend(&op->ranges[prev], index, nr, flags))
		return;
	if (n >= MAX_RANGES) {
		op->ranges_lost += nr;
		count_event(CNT_RANGES_TRUNC);
		return;
	}
	op->ranges[n].index = index;
	op->ranges[n].nr = nr;
	op->ranges[n].flags = flags;
	op->nr_ranges = n + 1;
}

static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	if (!disk)
		return 0;
	int major = BPF_CORE_READ(disk, major);
	int minor = BPF_CORE_READ(disk, first_minor);
	return ((__u32)major << 20) | (__u32)minor;
}

#endif /* IOPATH_HELPERS_H */
