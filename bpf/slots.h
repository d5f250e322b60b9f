/* SPDX-License-Identifier: GPL-2.0 */
/* The per-thread slot allocator: tid -> slot in task_ops (struct op). */
#ifndef IOPATH_SLOTS_H
#define IOPATH_SLOTS_H

#include "maps.h"

/* Per-thread call state. Threads are given a slot in the task_ops array,
 * found through tid_slot, an array indexed by tid (four 16-bit fields per
 * u64 word, tid & 3 picks the field). Both lookups are plain array lookups,
 * which the verifier inlines: the hash keyed by tid used before cost ~60 ns
 * per lookup on this project's 6.18 VM (measured with bpf_stats), paid at
 * entry and exit of every traced call and twice per context switch.
 * Task storage (~45 ns) is not available to classic tracepoint and kprobe
 * programs before 6.2 either.
 * A field holds 0 (thread not seen yet, or exited), a slot 1..MAX_SLOTS, or
 * SLOT_UNTRACED | generation: the thread's process was not traced when
 * targets_gen had that value (userspace bumps it when it adds a pid). */
#define MAX_SLOTS 8192
#define PID_MAX_LIMIT (4 << 20) /* include/linux/threads.h, 64-bit */
#define SLOT_UNTRACED 0x8000
#define SLOT_GEN_MASK 0x7fff

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PID_MAX_LIMIT / 4); /* every possible tid (pid_max can be raised at run time) */
	__type(key, __u32);        /* tid >> 2 */
	__type(value, __u64);      /* four 16-bit fields */
} tid_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SLOTS + 1); /* slot 0 unused */
	__type(key, __u32);
	__type(value, struct op);
} task_ops SEC(".maps");

/* Slots of exited threads, reused before never-used ones (next_slot). */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, MAX_SLOTS);
	__type(value, __u32);
} free_slots SEC(".maps");

__u64 next_slot = 0;

/* Slots given to threads so far: each thread's op_id sequence starts at a
 * base drawn from it (op_slot), so a thread that reuses an exited thread's
 * tid does not repeat its op_ids (tid<<32 | seq): with seq from 1 in every
 * slot, a 64 k-thread run repeated 63,215 op_ids (2026-12-07), and the
 * engine keys pending calls by op_id. */
__u64 slot_gen = 0;

static __always_inline __u64 *slot_word(__u32 tid)
{
	__u32 k = tid >> 2;
	return bpf_map_lookup_elem(&tid_slot, &k);
}

static __always_inline __u32 slot_field(__u64 word, __u32 tid)
{
	return (word >> ((tid & 3) * 16)) & 0xffff;
}

/* slot_set changes tid's field from old to new with one atomic add of
 * (new - old) << shift: the field holds old, so nothing carries into the
 * neighbours' fields, which other threads may change at the same time.
 * Only the thread itself (or its exit hook) writes its field. */
static __always_inline void slot_set(__u64 *word, __u32 tid, __u32 old, __u32 new)
{
	__u64 delta = ((__u64)new - (__u64)old) << ((tid & 3) * 16);
	__sync_fetch_and_add(word, delta);
}

/* op_of returns tid's call state, or NULL if it has none. */
static __always_inline struct op *op_of(__u32 tid)
{
	__u64 *w = slot_word(tid);
	if (!w)
		return NULL;
	__u32 slot = slot_field(*w, tid);
	if (slot == 0 || slot > MAX_SLOTS)
		return NULL;
	return bpf_map_lookup_elem(&task_ops, &slot);
}

/* A non-leader thread whose execve wins de_thread takes the leader's tid
 * in the middle of load_elf_binary, with reads still to come, and keeps
 * its slot under its old tid until sched_process_exec moves it (bpf/sched.c
 * exec_kept). In between, exec_moving (by tgid) names the slot, written
 * when the leader exits in de_thread (or at the call's entry when the
 * leader had already exited), so that current_op finds the call. No tid
 * field ever shares a slot (the free list would get it twice). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} exec_moving SEC(".maps");

/* Entries in exec_moving (approximate): current_op looks it up only then. */
__s64 execs_moving = 0;

/* exec_call returns slot's op if it is tgid's open execve call. */
static __always_inline struct op *exec_call(__u32 slot, __u32 tgid)
{
	struct op *op = bpf_map_lookup_elem(&task_ops, &slot);
	if (op && op->active && op->sys == SYS_EXECVE && op->owner == tgid)
		return op;
	return NULL;
}

/* exec_moving_set names slot as tgid's moving execve; only where none is
 * (two threads exec'ing at once: one wins, the other is killed). */
static __always_inline void exec_moving_set(__u32 tgid, __u32 slot)
{
	long err = bpf_map_update_elem(&exec_moving, &tgid, &slot, BPF_NOEXIST);
	if (err == 0)
		__sync_fetch_and_add(&execs_moving, 1);
	else if (err == -E2BIG)
		count_event(CNT_EXEC_MOVING_FULL); /* -EEXIST: the other thread won */
}

/* exec_moving_del forgets tgid's moving execve, if it is slot's (0: any). */
static __always_inline void exec_moving_del(__u32 tgid, __u32 slot)
{
	if (execs_moving <= 0)
		return;
	__u32 *v = bpf_map_lookup_elem(&exec_moving, &tgid);
	if (!v || (slot && *v != slot))
		return;
	if (bpf_map_delete_elem(&exec_moving, &tgid) == 0)
		__sync_fetch_and_add(&execs_moving, -1);
}

/* exec_moving_op: the open execve call of the current thread when it is
 * the leader's tid taken over by an exec'ing thread (exec_moving). */
static __always_inline struct op *exec_moving_op(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;
	if (execs_moving <= 0 || (__u32)pid_tgid != tgid)
		return NULL;
	__u32 *slot = bpf_map_lookup_elem(&exec_moving, &tgid);
	return slot ? exec_call(*slot, tgid) : NULL;
}

#endif /* IOPATH_SLOTS_H */
