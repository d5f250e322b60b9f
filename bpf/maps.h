/* SPDX-License-Identifier: GPL-2.0 */
/* iopath's maps, loader-set configuration and global counters, and the
 * map values only BPF reads. The per-thread slot maps are in slots.h. */
#ifndef IOPATH_MAPS_H
#define IOPATH_MAPS_H

#include "events.h"
#include <bpf/bpf_helpers.h>

#define PAGE_SHIFT 12
#define E2BIG 7
#define EBUSY 16 /* bpf_find_vma: the mmap lock was taken (trylock) */
#define EEXIST 17
#define MAX_RQ_BIOS 256  /* bios walked per request (rq->bio chain, bpf_loop) */
#define MAX_WALK_STEPS 4352 /* folios + bvecs walked per writeback bio (bpf_loop) */

struct dirty_key {
	__u64 ino;
	__u64 index; /* folio head index */
	__u32 dev;
	__u32 pad;
};

struct dirty_val {
	__u64 op_id;  /* 0: dirtied by a traced task outside a traced call (mmap) */
	__u64 ts;     /* when it turned dirty */
	__u32 pid;
	__u32 nr;     /* pages in the folio */
};

struct bio_owner {
	__u64 op_id;
	__u64 queue_ns;
	__u32 pid;
	__u32 tid;
	__u32 flags; /* enum own_flag bits */
	__u32 commit; /* OWN_COMMIT_REC: the commit's number for its jbd2 thread (flush.c) */
};

/* Configuration, set by the loader before load (spec.Variables). */
const volatile __u32 self_tgid = 0;
const volatile __u8 emit_all = 0;      /* stream every call, not only interesting ones */
const volatile __u8 filter_comm = 0;   /* trace tasks whose comm equals target_comm */
const volatile char target_comm[16] = {};
/* target_comm as two little-endian words, and masks covering its bytes and
 * the NUL after them: comm_matches compares a task's comm in two loads. */
const volatile __u64 target_comm_lo = 0, target_comm_hi = 0;
const volatile __u64 target_comm_mask_lo = 0, target_comm_mask_hi = 0;
const volatile __u8 track_dirty = 1;   /* follow dirtied pages to writeback */
const volatile __u8 trace_all = 0;     /* every process but iopath (top, serve without -p/--comm) */
/* Wake the reader only once wakeup_bytes are queued: each wakeup is a
 * cross-CPU interrupt, expensive in VMs (measured: a cold 4 KiB read's BPF
 * time fell from 23.6 to 5.6 µs). The reader also polls every 100 ms. */
const volatile __u64 wakeup_bytes = 1 << 20; /* set by the loader: min(1 MiB, ring / 4) */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader (--ringbuf-size) */
} events SEC(".maps");

/* Traced processes (tgid): added by userspace and by the fork hook,
 * removed when the process's last thread exits (a reused pid is not
 * traced). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);  /* tgid */
	__type(value, __u8);
} targets SEC(".maps");

/* EV_PATH numbers, unique across threads (u32 in the record: wraps after
 * 4 G paths). */
__u64 path_serial = 0;
/* Bumped by userspace each time it adds a traced pid: invalidates the
 * "untraced" marks in tid_slot. */
volatile __u32 targets_gen = 0;

/* Not preallocated: a thread folds its hits in only when it moves to another
 * file or exits, and preallocating 16384 per-CPU values took ~11 ms of
 * start-up (measured). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct stat_key);
	__type(value, struct stat_val);
} hit_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct other_key);
	__type(value, struct stat_val);
} hit_other SEC(".maps");

/* Last resort, never full: hits neither map had room for, by direction
 * (index = write). Counted in no process. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct stat_val);
} hit_unowned SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* struct bio * */
	__type(value, struct bio_owner);
} bio_owners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct request * */
	__type(value, __u64); /* issue time */
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144); /* resized by the loader (--max-dirty-pages) */
	__type(key, struct dirty_key);
	__type(value, struct dirty_val);
} dirty_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* count_event adds one to loss counter idx (enum counter). */
static __always_inline void count_event(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += 1;
}

/* Scratch space for events too large for the BPF stack, one entry per
 * running task (tid). Not per-CPU: tracing programs run with migration
 * disabled but stay preemptible, so two tasks on one CPU could interleave
 * in a per-CPU buffer (a long bio walk is easily preempted). LRU: an entry
 * stays with its task (one lookup per use instead of create + delete on
 * every request) and tasks gone quiet are evicted. */
struct wb_work {
	struct wb_bio_ev ev;
	/* walk state: kept in the map, not in bpf_loop's stack context, because
	 * kernels before 6.7 verified a callback once with the context's initial
	 * constants and pruned the branches they made look dead (seen on 6.1). */
	__u64 vecs;      /* struct bio_vec * */
	__u64 bv_page;   /* struct page * of the current bvec */
	__u64 page_size; /* sizeof(struct page), from BTF */
	__u32 vcnt;
	__u32 i;         /* next bvec */
	__u32 pg;        /* page offset of the next folio within the current bvec */
	__u32 bv_pages;  /* pages spanned by the current bvec */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tid */
	__type(value, struct wb_work);
} wb_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tid */
	__type(value, struct rq_issue_ev);
} rq_scratch SEC(".maps");

static const struct wb_work wb_work_zero = {};
static const struct rq_issue_ev rq_issue_zero = {};

/* Traced fsync-family calls in flight, by the kernel dev_t of their file's
 * filesystem: jbd2 bios queued for that device meanwhile are the journal
 * commit the call waits for. The latest call on a device wins. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} sync_waiters SEC(".maps");

__s64 syncs_active = 0;

/* Completed renames on the system (hook "rename", rename.c): part of the
 * path key, so a directory renamed above a file gets its path sent again. */
__u64 rename_gen = 0;

/* Number of live entries in dirty_pages (approximate under races); gates the
 * bio page walk so that untraced write bios cost one load. */
__s64 dirty_tracked = 0;

#endif /* IOPATH_MAPS_H */
