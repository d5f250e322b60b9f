/* SPDX-License-Identifier: GPL-2.0 */
/* Shared types, maps and helpers for iopath's BPF programs.
 *
 * Every hook file (read.c, write.c, filemap.c, readahead.c, block.c, sched.c,
 * writeback.c) includes this header; iopath.bpf.c includes the hook files so
 * that bpf2go builds one object whose maps are shared by all programs.
 *
 * Event layouts here are decoded by tracer/events.go: keep them in sync
 * (the Go side checks sizes against the generated types at init).
 */
#ifndef IOPATH_COMMON_H
#define IOPATH_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#define PAGE_SHIFT 12
#define E2BIG 7
#define MAX_RANGES 24    /* page-cache ranges (added or dirtied) kept per call */
#define MAX_RA 4         /* readahead decisions kept per call */
#define MAX_RQ_BIOS 256  /* bios walked per request (rq->bio chain, bpf_loop) */
#define MAX_ISSUE_OWN 32 /* owned bios reported per request issue */
#define MAX_WALK_STEPS 4352 /* folios + bvecs walked per writeback bio (bpf_loop) */
#define MAX_WB_MATCH 16  /* dirty-page matches reported per writeback bio */
#define PATH_PARTS 8     /* dentry names kept per call (deepest first) */
#define PATH_NAME_ONLY 2 /* path_done bit: an EV_PATH naming path_ino only (a copy's output), not the thread's file */
#define PART_LEN 48

/* Syscalls (and function hooks) that start an operation. */
enum op_sys {
	SYS_READ = 1, SYS_PREAD64, SYS_READV, SYS_PREADV, SYS_PREADV2,
	SYS_WRITE, SYS_PWRITE64, SYS_WRITEV, SYS_PWRITEV, SYS_PWRITEV2,
	SYS_FSYNC, SYS_FDATASYNC, SYS_SYNC_FILE_RANGE, SYS_SYNC, SYS_SYNCFS,
	SYS_VFS_READ, SYS_VFS_WRITE, /* vfs_read/vfs_write reached from another syscall */
	SYS_SENDFILE, SYS_SPLICE, SYS_COPY_FILE_RANGE, /* in-kernel copies: read side traced, pages dirtied on the output followed */
};

enum ev_type {
	EV_OP = 1,        /* struct op: one system call, at its exit */
	EV_RQ_ISSUE,      /* struct rq_issue_ev */
	EV_RQ_COMPLETE,   /* struct rq_done_ev */
	EV_RQ_REQUEUE,    /* struct rq_done_ev */
	EV_WB_BIO,        /* struct wb_bio_ev: a write bio carrying tracked dirty pages */
	EV_WB_START,      /* struct wb_start_ev: writeback work started (reason) */
	EV_WB_INODE,      /* struct wb_inode_ev: do_writepages / writeback_single_inode_start */
	EV_DIRTY_GONE,    /* struct dirty_gone_ev: tracked dirty folio removed before writeback */
	EV_BIO_SPLIT,     /* struct bio_split_ev: a writeback bio was split (block_split) */
	EV_PATH,          /* the path_* tail of struct op: the file of the thread's next EV_OP records */
	EV_FLUSH_DONE,    /* struct flush_done_ev (flush.c): a bio of a flush sequence ended */
};

/* Counters in the `counters` per-CPU array; summed by userspace. */
enum counter {
	CNT_RINGBUF_LOST = 0,   /* ring buffer full: an event was dropped */
	CNT_OPS_FULL,           /* hit aggregation map full */
	CNT_BIO_OWNER_FULL,     /* bio ownership map full */
	CNT_DIRTY_FULL,         /* dirty-page map full */
	CNT_INFLIGHT_FULL,      /* in-flight request map full */
	CNT_RQ_CHAIN_TRUNC,     /* request bio chain longer than MAX_RQ_BIOS */
	CNT_RQ_OWN_TRUNC,       /* more owned bios in a request than MAX_ISSUE_OWN */
	CNT_RANGES_TRUNC,       /* more page ranges in a call than MAX_RANGES */
	CNT_BVEC_TRUNC,         /* writeback bio walk longer than MAX_WALK_STEPS */
	CNT_WB_MATCH_TRUNC,     /* unused: matches beyond MAX_WB_MATCH go in continuation events */
	CNT_TASK_OPS_FULL,      /* per-thread state map full: a call was not traced */
	CNT_WALK_FOLIOS,        /* diagnostics: folios looked up by writeback bio walks */
	CNT_WALK_MATCHED,       /* diagnostics: of those, tracked dirty folios */
	CNT_WALK_BIOS,          /* diagnostics: write bios walked */
	CNT_TARGETS_FULL,       /* traced-process map full: a traced process's child was not traced */
	CNT_FLUSH_FULL,         /* flush_issued map full: a flush request was not remembered */
	CNT_MAX,
};

/* Range flags. */
#define RANGE_ADDED   1 /* folios inserted into the page cache during the call */
#define RANGE_DIRTIED 2 /* folios turned dirty (clean->dirty) by the call */

struct page_range {
	__u64 index; /* first page index (units of 4 KiB pages) */
	__u32 nr;    /* pages */
	__u32 flags; /* RANGE_* */
};

#define RA_SYNC  1
#define RA_ASYNC 2
#define RA_ORDER 3 /* window seen only at page_cache_ra_order: kind unknown */

struct ra_decision {
	__u64 index;      /* page index the readahead was triggered at */
	__u64 start;      /* first page of the window (fexit) or index (tracepoint) */
	__u32 size;       /* window in pages, after sizing; 0 if not seen */
	__u32 async_size; /* pages left when the next async readahead triggers */
	__u32 req_count;  /* pages the caller asked for */
	__u32 kind;       /* RA_* */
};

/* struct op is the per-thread state (task_ops) and holds the two records a
 * streamed call produces, each sent as one contiguous slice of it:
 *   EV_OP   from `type` up to ranges[nr_ranges] (a cold 4 KiB read: ~330 of
 *           ~1050 bytes; every streamed byte costs ~0.3 ns of BPF time in
 *           cache misses, measured);
 *   EV_PATH from `path_type` up to path[path_depth], sent only when the
 *           call's file is not the one this thread's last EV_PATH named
 *           (or every PATH_RESEND records, in case of a rename).
 * Fields before `type` are internal. */
struct op {
	/* internal state */
	__u64 sleep_start;  /* when the task went to iowait sleep */
	__u64 file;         /* struct file * */
	__u64 bdp_start;    /* balance_dirty_pages entry time (fentry/kprobe) */
	__u64 c_inode;      /* cached inode pointer ... */
	__u64 c_ino;        /* ... its i_ino ... */
	__u64 c_magic;      /* ... its superblock's s_magic ... */
	__u32 c_dev;        /* ... its s_dev ... */
	__u32 c_mode;       /* ... and i_mode */
	/* The name the last EV_PATH sent: the file's mount and dentry, the
	 * dentry's parent and name hash/length (a hard link, a bind mount, a
	 * rename or a new file whose dentry reuses the address all differ). */
	__u64 c_path_mnt;
	__u64 c_path_dentry;
	__u64 c_path_parent;
	__u64 c_path_up2;      /* ... the parent's parent ... */
	__u64 c_path_hash_len; /* ... name hash/len xor the inode's i_generation << 32 */
	__u64 out_file;        /* in-kernel copies: the output's struct file * (syscall hooks), for its name */
	__u32 path_reuse;   /* records since the last EV_PATH */
	__u32 seq;          /* per-thread op counter */
	__u32 owner;        /* tgid the slot was given to (a stale slot is noticed) */
	__u32 pad0;
	__u32 active;       /* 1 between entry and exit */
	__u32 touched;      /* 1 once a hook has zeroed the per-call counters (op_touch) */
	/* Cache hits are summed here per thread and file, and folded into
	 * hit_stats only when the thread moves to another file or exits (or by
	 * userspace at the end): no map lookup per hit. */
	__u64 agg_ino;
	__u32 agg_dev;
	__u32 agg_write;
	__u64 agg_calls;
	__u64 agg_bytes_requested;
	__u64 agg_bytes_returned;
	__u64 agg_pages;
	char agg_name[PART_LEN];

	/* EV_OP record */
	__u32 type;        /* EV_OP */
	__u32 sys;         /* enum op_sys */
	__u32 pid;         /* tgid */
	__u32 tid;
	__u64 op_id;       /* tid<<32 | per-thread sequence */
	__u64 start_ns;    /* bpf_ktime_get_ns at entry */
	__u64 end_ns;
	__s64 ret;         /* syscall return value */
	__s64 fd;
	__u64 offset;      /* file offset at entry, bytes */
	__u64 count;       /* bytes requested */
	__u64 ino;
	__u64 fs_magic;    /* file's superblock s_magic (tmpfs: no block device, no writeback) */
	__u32 dev;         /* kernel dev_t of the file's superblock (major<<20|minor) */
	__u32 f_flags;     /* file->f_flags at entry (O_DIRECT, O_SYNC, ...) */
	__u64 blocked_ns;  /* off-CPU with in_iowait set */
	__u64 throttle_ns; /* in balance_dirty_pages (measured, or the kernel's pause sum) */
	__u64 max_pause_ns; /* longest single throttle pause */
	__u32 throttle_pauses;
	__u32 dirtied_pages;
	__u32 other_dirtied; /* pages of other inodes dirtied during the call (atime, metadata) */
	__u32 pages_added;
	__u32 pages_in_range; /* of pages_added, pages inside [offset, offset+count) */
	__u32 out_dev;
	__u64 out_ino;        /* in-kernel copies: the output file whose pages the call dirtied */
	__u32 bios_queued;
	__u32 bio_bytes;   /* bytes of bios queued by this call (at queue time) */
	__u64 lookup_first; /* first page index looked up */
	__u64 lookup_last;  /* last page index looked up */
	__u32 lookups;     /* filemap_get_pages calls */
	__u32 ranges_lost;
	__u32 nr_ra;
	__u32 nr_ranges;
	__u32 path_seq;    /* this record's path is the thread's EV_PATH of this number (0: none) */
	__u32 sys_flags;   /* sync_file_range: its flags (SYNC_FILE_RANGE_*); 0 for other calls */
	char comm[16];
	struct ra_decision ra[MAX_RA];
	struct page_range ranges[MAX_RANGES]; /* sent up to nr_ranges */

	/* EV_PATH record: the file's dentry names, deepest first */
	__u32 path_type;  /* EV_PATH */
	__u32 path_tid;
	__u32 path_no;    /* per-thread number of this EV_PATH (EV_OP's path_seq) */
	__u32 path_gen;   /* the inode's i_generation: a new number for an inode reused after a delete */
	__u64 path_ino;
	__u32 path_dev;
	__u32 path_depth; /* names in path[] */
	__u32 path_done;  /* 1: the walk reached the root; 0: path[] is a suffix */
	__u32 path_trunc; /* bit j: path[j] was cut at PART_LEN - 1 bytes */
	char path[PATH_PARTS][PART_LEN]; /* sent up to path_depth */
};

struct issue_own {
	__u64 op_id;    /* 0: no traced call (see pid) */
	__u64 bio;      /* struct bio * */
	__u64 sector;   /* bio start, 512-byte sectors */
	__u64 queue_ns; /* block_bio_queue time */
	__u32 bytes;    /* bio size at issue */
	__u32 pid;
	__u32 tid;
	__u32 flags;    /* OWN_* */
};

#define OWN_WRITEBACK 1 /* bio carries tracked dirty pages */
#define OWN_JOURNAL   2 /* queued by jbd2 while a traced fsync-family call waited on its device */
#define OWN_FLUSH_SEQ 4 /* set at issue: the bio's request is in a flush sequence (flush.c) */

struct rq_issue_ev {
	__u32 type;     /* EV_RQ_ISSUE */
	__u32 dev;      /* kernel dev_t of the disk */
	__u64 rq;       /* struct request * (a recycled tag: pair issue/complete in order) */
	__u64 ts;
	__u64 sector;   /* request start, 512-byte sectors */
	__u32 bytes;    /* request bytes at issue */
	__u32 cmd_flags;
	__u32 nr_bios;  /* bios in the request (walked) */
	__u32 nr_own;   /* entries in own[] */
	__u32 issuer_tid;
	__u32 pad;
	struct issue_own own[MAX_ISSUE_OWN];
};

struct rq_done_ev {
	__u32 type;  /* EV_RQ_COMPLETE or EV_RQ_REQUEUE */
	__u32 error; /* blk_status_t */
	__u64 rq;
	__u64 ts;
	__u32 bytes; /* nr_bytes completed */
	__u32 pad;
};

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

struct wb_match {
	__u64 op_id;
	__u64 dirtied_ns;
	__u64 index;
	__u32 nr;        /* pages of the dirty folios (the kernel's dirty accounting) */
	__u32 pid;
	__u32 bio_pages; /* of those, pages this bio carries (a large folio may be written in part) */
	__u32 pad;
};

struct wb_bio_ev {
	__u32 type;      /* EV_WB_BIO */
	__u32 dev;       /* file's s_dev */
	__u64 bio;
	__u64 ino;
	__u64 ts;
	__u64 op_id;     /* op of the submitting task (fsync, O_SYNC write), or 0 */
	__u32 tid;       /* submitter */
	__u32 nr_match;
	__u32 pages;     /* pages walked in the bio */
	__u32 part;      /* 0: first event of this bio; n: n-th continuation (more than MAX_WB_MATCH matches) */
	__u32 sys;       /* enum op_sys of op_id's call (the writeback's reason: fsync, sync_file_range...) */
	__u32 pad;
	char comm[16];
	struct wb_match match[MAX_WB_MATCH];
};

struct wb_start_ev {
	__u32 type; /* EV_WB_START */
	__u32 tid;
	__u64 ts;
	__s64 nr_pages;
	__u32 sb_dev;
	__u32 reason;    /* enum wb_reason, decoded from BTF in userspace */
	__u32 sync_mode;
	__u32 for_kupdate;
	__u32 for_background;
	__u32 for_sync;
	char comm[16];
};

struct wb_inode_ev {
	__u32 type; /* EV_WB_INODE */
	__u32 tid;
	__u64 ts;
	__u64 ino;
	__u32 dev;
	__u32 sync_mode;
	__u64 dirtied_when; /* jiffies */
	__s64 nr_to_write;
	__u32 for_kupdate;
	__u32 for_background;
	__u32 for_sync;
	__u32 pad;
	char comm[16];
};

struct dirty_gone_ev {
	__u32 type; /* EV_DIRTY_GONE */
	__u32 dev;
	__u64 ino;
	__u64 index;
	__u64 op_id;
	__u64 ts;
	__u32 nr;
	__u32 pid;
};

struct bio_split_ev {
	__u32 type; /* EV_BIO_SPLIT */
	__u32 pad;
	__u64 split;  /* the new bio: the front part */
	__u64 parent; /* the original bio: the remainder */
	__u64 ts;
};

struct bio_owner {
	__u64 op_id;
	__u64 queue_ns;
	__u32 pid;
	__u32 tid;
	__u32 flags; /* OWN_* */
	__u32 pad;
};

struct stat_key {
	__u64 ino;
	__u32 pid;
	__u32 dev;
	__u32 write; /* 0 read family, 1 write family */
	__u32 pad;
};

/* Aggregate of calls not streamed (cache hits with no IO and no wait). */
struct stat_val {
	__u64 calls;
	__u64 bytes_requested;
	__u64 bytes_returned;
	__u64 pages; /* pages covered by the returned bytes, all hits */
	char comm[16]; /* of the first call counted on this CPU */
	char name[PART_LEN]; /* the file's name (last path component), for the summary */
};

/* Configuration, set by the loader before load (spec.Variables). */
const volatile __u32 self_tgid = 0;
const volatile __u8 emit_all = 0;      /* stream every call, not only interesting ones */
const volatile __u8 filter_comm = 0;   /* trace tasks whose comm equals target_comm */
const volatile char target_comm[16] = {};
const volatile __u8 track_dirty = 1;   /* follow dirtied pages to writeback */

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

/* Number of live entries in dirty_pages (approximate under races); gates the
 * bio page walk so that untraced write bios cost one load. */
__s64 dirty_tracked = 0;

static __always_inline void count_event(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += 1;
}

/* Wake the reader only once wakeup_bytes are queued: each wakeup is a
 * cross-CPU interrupt, expensive in VMs (measured: a cold 4 KiB read's BPF
 * time fell from 23.6 to 5.6 µs). The reader also polls every 100 ms. */
const volatile __u64 wakeup_bytes = 256 << 10; /* set by the loader: min(256 KiB, ring / 4) */

static __always_inline int emit(void *data, __u64 size)
{
	__u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, data, size, flags)) {
		count_event(CNT_RINGBUF_LOST);
		return -1;
	}
	return 0;
}

static __always_inline bool comm_matches(void)
{
	char comm[16];
	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < 16; i++) {
		if (comm[i] != target_comm[i])
			return false;
		if (comm[i] == 0)
			break;
	}
	return true;
}

/* is_traced says whether the current task belongs to a traced process. */
static __always_inline bool is_traced(__u32 tgid)
{
	if (tgid == self_tgid)
		return false;
	if (bpf_map_lookup_elem(&targets, &tgid))
		return true;
	if (filter_comm && comm_matches())
		return true;
	return false;
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

/* current_op returns the running call of the current task, ready to record
 * into (touched), or NULL. */
static __always_inline struct op *current_op(void)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
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

#endif /* IOPATH_COMMON_H */
