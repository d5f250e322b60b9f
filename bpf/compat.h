/* SPDX-License-Identifier: GPL-2.0 */
/* The compat build (-DIOPATH_COMPAT, bpf2go name IopathCompat) for kernels
 * whose verifier lacks what the main build uses (issue 16, floor 5.10):
 *  - bpf_loop (5.17): loops become bounded C loops (verified since 5.3). The
 *    writeback walk's steps and the flush list's step are global functions
 *    (verified once), so they keep MAX_WALK_STEPS and MAX_FLUSH_WAITERS, as
 *    is the dentry walk (op.h fill_path_slot); the request bio chain walk is inlined and stops at
 *    COMPAT_RQ_BIOS (longer chains are counted, CNT_RQ_CHAIN_TRUNC).
 *  - atomic fetch-and-add (BPF_ATOMIC | BPF_FETCH, 5.12): the two counters
 *    that hand out numbers (next_slot, path_serial, slot_gen) become per-CPU counters
 *    striped by CPU (n * nr_cpus + cpu). Only task-context programs draw
 *    numbers, and those do not nest on one CPU.
 * Userspace picks the build by probing the kernel for both features, never
 * by version (tracer/compat.go). Keep this file when common.h is split. */
#ifndef IOPATH_COMPAT_H
#define IOPATH_COMPAT_H

#ifdef IOPATH_COMPAT

#define COMPAT_RQ_BIOS 64    /* bios walked per request (MAX_RQ_BIOS: 256) */
#define COMPAT_WALK_STEPS MAX_WALK_STEPS /* folio_steps_global: cheap to verify */

/* Possible CPUs (userspace sets it; 0 = unset: no numbers are handed out). */
const volatile __u32 nr_cpus = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} compat_serials SEC(".maps");

/* serial_next returns the next number of counter `which` (0: slots, 1: path
 * records, 2: slot generations), unique across CPUs; 0xfffffffe when it cannot. */
static __always_inline __u64 serial_next(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&compat_serials, &which);
	if (!c || nr_cpus == 0)
		return 0xfffffffeULL; /* +1 is beyond MAX_SLOTS: counted as full */
	__u64 n = *c;
	*c = n + 1;
	return n * nr_cpus + bpf_get_smp_processor_id();
}

#define FETCH_INC(var, which) serial_next(which)
/* LOOP(n, compat_n, cb, ctx): bpf_loop(n, cb, ctx, 0), or a bounded loop. */
#define LOOP(n, compat_n, cb, ctx)                                                                 \
	do {                                                                                       \
		for (__u32 _i = 0; _i < (compat_n); _i++)                                          \
			if (cb(_i, ctx))                                                           \
				break;                                                             \
	} while (0)

#else

#define FETCH_INC(var, which) __sync_fetch_and_add(&(var), 1)
#define LOOP(n, compat_n, cb, ctx) bpf_loop(n, cb, ctx, 0)

#endif /* IOPATH_COMPAT */
#endif /* IOPATH_COMPAT_H */
