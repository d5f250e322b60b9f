/* SPDX-License-Identifier: GPL-2.0 */
/* The contract between iopath's BPF programs and its Go decoder: exactly
 * the types bpf/gen.go exports with bpf2go -type (Go: bpf.Iopath*). The
 * ring-buffer records (enum ev_type), their flag sets (enums, so that their
 * values reach Go through BTF, never copied by hand), the loss counters and
 * the hit-aggregation keys and values userspace reads from maps.
 *
 * Internal state lives in maps.h (maps, configuration, map values only BPF
 * reads), slots.h (the per-thread slot allocator) and helpers.h. */
#ifndef IOPATH_EVENTS_H
#define IOPATH_EVENTS_H

#include "vmlinux.h"

#define MAX_RANGES 24    /* page-cache ranges (added or dirtied) kept per call */
#define MAX_RA 4         /* readahead decisions kept per call */
#define MAX_ISSUE_OWN 32 /* owned bios reported per request issue */
#define MAX_WB_MATCH 16  /* dirty-page matches reported per writeback bio */
#define PATH_PARTS 8     /* dentry names kept per call (deepest first) */
#define PART_LEN 48

/* struct op.path_done (bits) */
enum path_done_flag {
	PATH_ROOT = 1,      /* the walk reached the root; else path[] is a suffix */
	PATH_NAME_ONLY = 2, /* an EV_PATH naming path_ino only (a copy's output), not the thread's file */
};

/* Syscalls (and function hooks) that start an operation. */
enum op_sys {
	SYS_READ = 1, SYS_PREAD64, SYS_READV, SYS_PREADV, SYS_PREADV2,
	SYS_WRITE, SYS_PWRITE64, SYS_WRITEV, SYS_PWRITEV, SYS_PWRITEV2,
	SYS_FSYNC, SYS_FDATASYNC, SYS_SYNC_FILE_RANGE, SYS_SYNC, SYS_SYNCFS,
	SYS_VFS_READ, SYS_VFS_WRITE, /* vfs_read/vfs_write reached from another syscall */
	SYS_SENDFILE, SYS_SPLICE, SYS_COPY_FILE_RANGE, /* in-kernel copies: read side traced, pages dirtied on the output followed */
	SYS_RENAME, /* rename, renameat, renameat2: no record, counted in rename_gen (hook "rename") */
	/* issue 14 (bpf/fault.c): a page fault on a file mapping, and the calls
	 * that change what faults do or read ahead themselves */
	SYS_FAULT, SYS_MSYNC, SYS_MADVISE, SYS_FADVISE64, SYS_READAHEAD,
	/* issue 13 (bpf/aio.c): libaio. io_submit and io_getevents/io_pgetevents
	 * send EV_AIO_SUBMIT / EV_AIO_REAP; each iocb io_submit processed is an
	 * EV_OP of its own (a request), sys SYS_AIO_READ or SYS_AIO_WRITE. */
	SYS_IO_SUBMIT, SYS_IO_GETEVENTS, SYS_AIO_READ, SYS_AIO_WRITE,
	/* issue 13 (bpf/uring.c): io_uring. A request's IO in one thread (the
	 * submitter inline, an io-wq worker, the SQPOLL thread) is an EV_OP
	 * SYS_URING_READ / SYS_URING_WRITE whose req_id names the request. */
	SYS_IO_URING_ENTER, SYS_URING_READ, SYS_URING_WRITE,
	/* issue 14 (bpf/sched.c): execve/execveat, with what the kernel read
	 * to load the program (the binary's headers, its interpreter's, a
	 * kernel-mode fault on its data): the file is the binary loaded,
	 * named at sched_process_exec. */
	SYS_EXECVE,
	SYS_MAX,    /* raw_sys_mask has a bit per value: at most 64 */
};
_Static_assert(SYS_MAX <= 64, "raw_sys_mask is a u64 bitmask of enum op_sys");

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
	EV_AIO_SUBMIT,    /* struct aio_submit_ev (aio.c): an io_submit call and its iocbs */
	EV_AIO_REAP,      /* struct aio_reap_ev (aio.c): events an io_getevents/io_pgetevents call returned */
	EV_URING_SUBMIT,  /* struct uring_submit_ev (uring.c): io_uring_submit_req */
	EV_URING_PUNT,    /* struct uring_punt_ev: io_uring_queue_async_work (to io-wq) */
	EV_URING_COMPLETE, /* struct uring_complete_ev: io_uring_complete (its CQE posted) */
	EV_URING_ENTER,   /* struct uring_enter_ev (uring.c): an io_uring_enter call at its exit */
};

/* Programs with a spare copy (bpf/spare.h), the index of their run counts. */
enum spared {
	SPARED_SYS_ENTER = 0, /* raw_sys_enter */
	SPARED_SYS_EXIT,      /* raw_sys_exit */
	SPARED_BIO_QUEUE,     /* tp_block_bio_queue */
	SPARED_RQ_ISSUE,      /* tp_block_rq_issue */
	SPARED_AIO_DIO,       /* aio_dio_begin */
	SPARED_URING_DIO,     /* uring_dio_begin */
	SPARED_URING_FILE,    /* uring_file_get */
	SPARED_FLUSH_ISSUE,   /* tp_flush_issue */
	SPARED_MAX,
};

/* Counters in the `counters` per-CPU array; summed by userspace. */
enum counter {
	CNT_RINGBUF_LOST = 0,   /* ring buffer full: an event was dropped */
	CNT_OPS_FULL,           /* hit_stats refused a file: its hits counted in hit_other */
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
	CNT_HIT_OTHER_FULL,     /* hit_other full too: hits counted in hit_unowned (no process) */
	/* issue 14 (bpf/fault.c) */
	CNT_FAULT_UNENDED,      /* a fault whose end (page-fault perf event, or a signal's delivery) was never seen */
	CNT_FAULT_STATS_FULL,   /* fault_stats full: a fault not streamed was not counted */
	CNT_FLUSH_FULL,         /* flush_issued map full: a flush request was not remembered; or a flush list longer than MAX_FLUSH_WAITERS (flush.c): bios beyond were not named */
	/* issue 13 (bpf/aio.c) */
	CNT_AIO_IOCB_TRUNC,     /* iocbs of io_submit calls beyond AIO_MAX_IOCBS: not reported (adds iocbs, not calls) */
	CNT_AIO_REAP_TRUNC,     /* io_events of io_getevents calls beyond AIO_MAX_IOCBS: not reported (adds events) */
	CNT_URING_FULL,         /* uring_reqs map full: an io_uring request was not followed */
	CNT_FAULT_VMA_BUSY,     /* a user fault not traced: bpf_find_vma's trylock of the mmap lock failed (another thread held it) */
	CNT_OPS_NOMEM,          /* hit_stats had room but could not allocate the entry (-ENOMEM: not
	                         * preallocated, the kernel's BPF allocator had none free then); hits
	                         * counted in hit_other like a full map's */
	CNT_FAULT_VMA_RECOVERED, /* of CNT_FAULT_VMA_BUSY: faults opened later, at mm_filemap_fault (6.11+), from
	                          * the page cache's inode: traced, without a path */
	CNT_EXEC_MOVING_FULL,    /* exec_moving full (bpf/slots.h): a non-leader execve's reads after de_thread
	                          * gave it the leader's tid are unattributed (cause exec) */
	/* bpf/spare.h: events a spare program handled because the kernel
	 * skipped its primary's run (a thread preempted inside the primary on
	 * that CPU), one counter per spared program, in enum spared order */
	CNT_SPARE_SYS_ENTER,
	CNT_SPARE_SYS_EXIT,
	CNT_SPARE_BIO_QUEUE,
	CNT_SPARE_RQ_ISSUE,
	CNT_SPARE_AIO_DIO,
	CNT_SPARE_URING_DIO,
	CNT_SPARE_URING_FILE,
	CNT_SPARE_FLUSH_ISSUE,
	CNT_MAX,
};

/* struct op.fault_flags (bpf/fault.c) */
enum fault_rec_flag {
	FAULT_WRITE = 1,        /* a store: error_code X86_PF_WRITE, or FAULT_FLAG_WRITE */
	FAULT_MAJOR = 2,        /* ended as a major fault */
	FAULT_RETRIED = 4,      /* the kernel redid the fault after filemap_fault (VM_FAULT_RETRY) */
	FAULT_FILEMAP = 8,      /* filemap_fault ran */
	FAULT_ENDED = 16,       /* the end was seen: FAULT_MAJOR is known */
	FAULT_FILEMAP_SEEN = 32, /* a filemap_fault hook is attached: FAULT_RETRIED is known */
	FAULT_SIGNAL = 64,      /* ended at a signal's delivery (op.ret: its number), not at the perf event */
	FAULT_UNENDED = 128,    /* no end seen: closed at the thread's next fault or its exit (end_ns: then, an upper bound) */
};

/* struct page_range.flags */
enum range_flag {
	RANGE_ADDED = 1,   /* folios inserted into the page cache during the call */
	RANGE_DIRTIED = 2, /* folios turned dirty (clean->dirty) by the call */
};

struct page_range {
	__u64 index; /* first page index (units of 4 KiB pages) */
	__u32 nr;    /* pages */
	__u32 flags; /* enum range_flag */
};

/* struct ra_decision.kind */
enum ra_kind {
	RA_SYNC = 1,
	RA_ASYNC = 2,
	RA_ORDER = 3, /* window seen only at page_cache_ra_order: kind unknown */
};

struct ra_decision {
	__u64 index;      /* page index the readahead was triggered at */
	__u64 start;      /* first page of the window (fexit) or index (tracepoint) */
	__u32 size;       /* window in pages, after sizing; 0 if not seen */
	__u32 async_size; /* pages left when the next async readahead triggers */
	__u32 req_count;  /* pages the caller asked for */
	__u32 kind;       /* enum ra_kind */
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
	__u64 c_path_hash_len; /* ... name hash/len xor the inode's i_generation << 32 ... */
	__u64 c_path_renames;  /* ... and rename_gen (a directory above renamed) */
	__u64 out_file;        /* in-kernel copies: the output's struct file * (syscall hooks), for its name */
	/* issue 13 (bpf/aio.c): the io_submit call in progress (aio_nr 0: none) */
	__u64 aio_iocbpp;      /* its struct iocb ** (user memory) */
	__u32 aio_nr;          /* iocbs passed */
	__u32 aio_cur;         /* the iocb whose request is the running op (index) */
	__u32 aio_call_seq;    /* seq of the call: iocb k's request is seq aio_call_seq + 1 + k */
	__u32 aio_dio;         /* 1 once the running request started its direct IO (iomap_dio_rw_begin) */
	__u64 aio_start_ns;    /* io_submit entry */
	/* issue 13 (bpf/uring.c) */
	__u64 uring_req;       /* struct io_kiocb * of the running request's segment (0: not known yet) */
	__u64 uring_call;      /* op_id of the io_uring_enter call in progress (0: none) */
	__u32 uring_thread;    /* 1: an io-wq worker or SQPOLL thread (PF_IO_WORKER): its op stays active */
	/* The io_uring_enter / io_getevents call in progress: its entry time and
	 * arguments (to_submit, min_complete, flags; io_getevents: min_nr). */
	__u64 call_start_ns;
	__u32 call_arg1;
	__u32 call_arg2;
	__u32 call_arg3;
	__u32 slot;            /* this entry's index in task_ops (the compat build's path walk looks it up) */
	__u32 aio_fn;          /* io_submit_one calls seen in the running io_submit (function hooks) */
	__u32 path_reuse;   /* records since the last EV_PATH */
	__u32 seq;          /* per-thread op counter */
	__u32 owner;        /* tgid the slot was given to (a stale slot is noticed) */
	__u32 exec_comm;    /* 1: an execve under --comm loading a program of --comm's name (bpf/syscalls.c exec_names_target): traced before the rename */
	__u32 active;       /* 1 between entry and exit */
	__u32 touched;      /* 1 once a hook has zeroed the per-call counters (op_touch) */
	/* Cache hits are summed here per thread and file, and folded into
	 * hit_stats only when the thread moves to another file or exits (or by
	 * userspace at the end): no map lookup per hit. */
	__u64 agg_ino;
	__u32 agg_dev;
	__u32 agg_write;
	__u32 agg_gen;      /* the inode's i_generation: a reused inode number is another file */
	__u32 agg_pad;
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
	/* issue 14: faults (sys SYS_FAULT, bpf/fault.c); offset is the page's
	 * file offset, count one page */
	__u64 fault_addr;   /* user address that faulted */
	__u64 around_index; /* first page fault-around (filemap_map_pages) tried to map from the cache */
	__u32 around_pages; /* pages of that window (0: no fault-around) */
	__u32 fault_flags;  /* enum fault_rec_flag bits (bpf/fault.c) */
	__u32 advice;       /* madvise/fadvise64: the advice argument */
	__u32 map_pending; /* msync/madvise whose file find_vma's fexit will give: its op_sys (bpf/fault.c) */
	__u32 fault_busy;  /* FAULT_BUSY*: the user fault at fault_addr found the mmap lock taken (bpf/fault.c) */
	__u64 req_id;       /* issue 13: SYS_AIO_* / SYS_URING_*: the request this op is (part of) */
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
	__u32 path_done;  /* enum path_done_flag bits (PATH_ROOT: the walk reached the root) */
	__u32 path_trunc; /* bit j: path[j] was cut at PART_LEN - 1 bytes */
	char path[PATH_PARTS][PART_LEN]; /* sent up to path_depth */
	/* The dentry walk's state between bpf_loop steps (op.h, path_step):
	 * never sent. In the map value, not the loop's stack context: kernels
	 * before 6.7 verified a callback once with the context's initial
	 * constants (see struct wb_work). */
	__u64 walk_dentry; /* struct dentry * to name next */
	__u64 walk_mount;  /* struct mount * it is on */
};

struct issue_own {
	__u64 op_id;    /* 0: no traced call (see pid) */
	__u64 bio;      /* struct bio * */
	__u64 sector;   /* bio start, 512-byte sectors */
	__u64 queue_ns; /* block_bio_queue time */
	__u32 bytes;    /* bio size at issue */
	__u32 pid;
	__u32 tid;
	__u32 flags;    /* enum own_flag bits */
};

/* struct issue_own.flags, struct bio_owner.flags (bits) */
enum own_flag {
	OWN_WRITEBACK = 1, /* bio carries tracked dirty pages */
	OWN_JOURNAL = 2,   /* queued by jbd2 while a traced fsync-family call waited on its device */
	OWN_FLUSH_SEQ = 4, /* set at issue: the bio's request is in a flush sequence (flush.c) */
	/* EV_FLUSH_DONE with no bio: the flush request flush_rq (issued at
	 * flush_issue_ns) completed, but no BPF program saw its completion: the
	 * kernel issued it again (flush.c, flush_issue). */
	OWN_FLUSH_UNSEEN = 8,
	/* EV_FLUSH_DONE at a flush request's issue, one per owned bio waiting
	 * for it (flush.c, flush_issue): flush_rq issued at flush_issue_ns
	 * serves bio (bytes: its request's data, 0 for an empty flush). In a
	 * bio_owners entry: such events were sent for the bio. */
	OWN_FLUSH_SERVES = 16,
	/* EV_FLUSH_DONE: a flush request that served an owned bio completed. */
	OWN_FLUSH_END = 32,
	/* EV_FLUSH_DONE: the call op_id was woken by the jbd2 thread flush_tid
	 * after the end of its commit of transaction commit_tid (flush.c,
	 * sched_waking). */
	OWN_COMMIT_WAIT = 64,
	/* A journal commit record (jbd2's PREFLUSH/FUA block) of commit
	 * bio_owner.commit, owned even with no call (op_id 0) so that its
	 * flushes can be given to the calls that waited for the commit. */
	OWN_COMMIT_REC = 128,
	/* EV_FLUSH_DONE at the end of ext4's fsync (ext4_sync_file_exit): the
	 * call op_id (started at queue_ns) needed transaction commit_tid of the
	 * journal whose jbd2 thread is flush_tid: the inode's i_datasync_tid
	 * (fdatasync, msync) or i_sync_tid (fsync), what jbd2_complete_transaction
	 * waited for (flush.c, tp_ext4_sync_file_exit). */
	OWN_COMMIT_NEED = 4096,
	/* Bits 8-11: enum unattributed_cause of a bio queued outside any
	 * traced call; bits 16-27: the syscall number for CAUSE_SYSCALL. */
	OWN_CAUSE_SHIFT = 8,
	OWN_SYSNR_SHIFT = 16,
};

/* Why a traced task queued a bio outside any traced call (unattributed.h). */
enum unattributed_cause {
	CAUSE_UNKNOWN = 0,
	CAUSE_EXEC = 1,    /* during execve (current->in_execve): the binary and its interpreter */
	CAUSE_META = 2,    /* REQ_META: filesystem metadata (inode tables, directories, journal reads) */
	CAUSE_SYSCALL = 3, /* inside a system call iopath does not trace (its number follows) */
	CAUSE_FAULT = 4,   /* not in a system call: a page fault (mmap'ed file, executable pages) */
	CAUSE_AIO_TRUNC = 5, /* in io_submit, processing an iocb beyond AIO_MAX_IOCBS (not reported, bpf/aio.c) */
};

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
	__u32 own_flags;    /* enum own_flag bits of the bio */
	__u32 flush_tid;    /* the task that issued the flush request (OWN_COMMIT_WAIT: the jbd2 thread) */
	__u32 commit_tid;   /* OWN_COMMIT_REC, OWN_COMMIT_WAIT, OWN_COMMIT_NEED: a jbd2 transaction id (its commit: flush.c) */
};

struct stat_key {
	__u64 ino;
	__u32 pid;
	__u32 dev;
	__u32 write; /* 0 read family, 1 write family */
	__u32 gen; /* i_generation of the inode (a reused inode number is another file) */
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

/* Hits of files hit_stats had no room for, per process and direction: they
 * stay in the process's totals (summary: hits_not_itemized). */
struct other_key {
	__u32 pid;
	__u32 write; /* 0 read family, 1 write family */
};

#define AIO_PER_EV 16     /* iocbs or io_events per EV_AIO_SUBMIT / EV_AIO_REAP */
/* iocbs (io_events) reported per io_submit (io_getevents) call: bpf_loop
 * walks them in AIO_PER_EV chunks (4096: four times the workload's deepest
 * --iodepth); the compat build's bounded loops stop at 128. */
enum aio_limit {
	AIO_MAX_IOCBS_MAIN = 4096,
	AIO_MAX_IOCBS_COMPAT = 128,
};
#ifdef IOPATH_COMPAT
#define AIO_MAX_IOCBS AIO_MAX_IOCBS_COMPAT
#else
#define AIO_MAX_IOCBS AIO_MAX_IOCBS_MAIN
#endif

/* One iocb of an io_submit (struct iocb, include/uapi/linux/aio_abi.h). */
struct aio_iocb {
	__u64 iocb;      /* its user address: the io_event's obj */
	__u64 user_data; /* aio_data: the io_event's data */
	__s64 offset;
	__u64 nbytes;
	__u32 opcode;    /* aio_lio_opcode: IOCB_CMD_PREAD 0, PWRITE 1, FSYNC 2, FDSYNC 3, POLL 5, NOOP 6, PREADV 7, PWRITEV 8 */
	__u32 fd;
	__u32 flags;     /* aio_flags (IOCB_FLAG_RESFD 1, IOCB_FLAG_IOPRIO 2) */
	__u32 rw_flags;  /* aio_rw_flags (RWF_*) */
};

struct aio_submit_ev {
	__u32 type;     /* EV_AIO_SUBMIT */
	__u32 pid;
	__u32 tid;
	__u32 nr;       /* iocbs passed */
	__u64 op_id;    /* the call's: iocb k's request is op_id + 1 + k */
	__u64 ctx;      /* aio_context_t */
	__u64 start_ns;
	__u64 end_ns;
	__s64 ret;      /* iocbs submitted, or -errno */
	__u32 first;    /* index of iocb[0] in the call (several records per call) */
	__u32 n;        /* entries in iocb[] */
	char comm[16];
	struct aio_iocb iocb[AIO_PER_EV];
};

/* One struct io_event a reap returned. */
struct aio_event {
	__u64 user_data; /* data */
	__u64 iocb;      /* obj */
	__s64 res;       /* bytes or -errno */
	__s64 res2;
};

struct aio_reap_ev {
	__u32 type;     /* EV_AIO_REAP */
	__u32 pid;
	__u32 tid;
	__u32 n;        /* entries in ev[] */
	__u64 ctx;
	__u64 ts;       /* the call's exit */
	__s64 ret;      /* events returned, or -errno */
	__u32 first;    /* index of ev[0] among the call's events */
	__u32 min_nr;   /* the call's min_nr */
	__u64 start_ns; /* the call's entry (0: not seen) */
	__u64 op_id;    /* the call's (0: its entry was not seen) */
	struct aio_event ev[AIO_PER_EV];
};

/* An io_uring request (io_uring_submit_req): its SQE's fields as the
 * request holds them after prep. */
struct uring_submit_ev {
	__u32 type;      /* EV_URING_SUBMIT */
	__u32 pid;
	__u32 tid;       /* the submitting thread (an SQPOLL thread for SQPOLL rings) */
	__u32 opcode;    /* IORING_OP_* */
	__u64 req;       /* struct io_kiocb * */
	__u64 ctx;       /* struct io_ring_ctx * */
	__u64 user_data;
	__u64 op_id;     /* the request's */
	__u64 submit_op_id; /* the io_uring_enter call's (0: SQPOLL) */
	__u64 ts;
	__s64 offset;    /* sqe->off (-1: the file position) */
	__u64 len;       /* bytes (vectored: the sum of the iovecs) */
	__s32 fd;        /* sqe->fd (a registered file's index with IOSQE_FIXED_FILE) */
	__u32 sqe_flags; /* req->flags' low byte: IOSQE_* */
	__u32 sq_thread; /* 1: submitted by the SQPOLL thread */
	__u32 owner_tid; /* SQPOLL: the thread that set up the ring (0: unknown); else tid */
	char comm[16];   /* SQPOLL: the process's (its group leader's), not the iou-sqp thread's */
};

struct uring_punt_ev {
	__u32 type;   /* EV_URING_PUNT */
	__u32 pid;
	__u64 req;
	__u64 op_id;
	__u64 ts;
	__u32 hashed; /* 1: the hashed queue (buffered writes of one inode, serialized) */
	__u32 tid;
};

struct uring_complete_ev {
	__u32 type;   /* EV_URING_COMPLETE */
	__u32 pid;
	__u32 tid;    /* the thread that posted the CQE */
	__u32 segs;   /* EV_OP records of the request (one per thread that ran it) */
	__u64 req;
	__u64 op_id;
	__u64 user_data;
	__u64 ts;
	__s64 res;    /* bytes or -errno */
	__u32 cflags;
	__u32 pad;
};

/* An io_uring_enter call of a traced thread, at its exit. */
struct uring_enter_ev {
	__u32 type;         /* EV_URING_ENTER */
	__u32 pid;
	__u32 tid;
	__u32 to_submit;
	__u64 op_id;        /* the call's: its requests' submit_op_id */
	__u64 start_ns;
	__u64 end_ns;
	__s64 ret;          /* SQEs submitted, or -errno */
	__u32 min_complete;
	__u32 flags;        /* IORING_ENTER_* */
	char comm[16];
};

/* contract keeps every type above in the object's BTF, so that bpf2go can
 * export it: a type used only in casts, sizes or as constants leaves none.
 * iopath.bpf.c defines one unused pointer to it. */
struct contract {
	enum op_sys sys;
	enum ev_type ev;
	enum counter counter;
	enum range_flag range;
	enum fault_rec_flag fault;
	enum ra_kind ra;
	enum own_flag own;
	enum path_done_flag path_done;
	enum unattributed_cause cause;
	enum aio_limit aio_limit;
	struct op op;
	struct rq_issue_ev rq_issue;
	struct rq_done_ev rq_done;
	struct wb_bio_ev wb_bio;
	struct wb_start_ev wb_start;
	struct wb_inode_ev wb_inode;
	struct dirty_gone_ev dirty_gone;
	struct bio_split_ev bio_split;
	struct flush_done_ev flush_done;
	struct stat_key stat_key;
	struct stat_val stat_val;
	struct other_key other_key;
	struct aio_submit_ev aio_submit;
	struct aio_reap_ev aio_reap;
	struct uring_submit_ev uring_submit;
	struct uring_punt_ev uring_punt;
	struct uring_complete_ev uring_complete;
	struct uring_enter_ev uring_enter;
};

#endif /* IOPATH_EVENTS_H */
