/* SPDX-License-Identifier: GPL-2.0 */
/* In-kernel aggregates (issue 17): counters and log2 histograms for
 * `iopath top`, `iopath serve` and `iopath trace --interval`, kept per
 * process (tgid), per file (dev, ino), per disk and direction, and for the
 * whole run. Userspace reads the maps (package aggregate); with agg_only no
 * per-call or per-request record goes to the ring buffer at all.
 *
 * Hooks call in with one line each: op_end (agg_call), claim in block.c
 * (agg_written), dirty_gone in filemap.c (agg_dropped), block_rq_issue /
 * complete / requeue (agg_rq_*), sched_process_exec (agg_exec) and
 * task_rename (agg_renamed) in sched.c.
 *
 * Bounded: agg_procs and agg_files refuse new keys when full; the calls of
 * a refused key go to agg_other (so totals stay exact) and are counted in
 * agg_global.overflow. Values are updated with atomic adds: one entry is
 * shared by every CPU (a per-CPU value of ~1 KiB per key would cost
 * ncpu × entries of kernel memory). */
#ifndef IOPATH_AGG_H
#define IOPATH_AGG_H

#include "helpers.h"

#define AGG_BUCKETS 32 /* log2 ns buckets: [2^i, 2^(i+1)) ns; bucket 0 also holds 0; the last everything ≥ 2^31 ns */
#define AGG_KEYS 10240 /* processes and files kept at once */

/* Call classes (the families of record.ClassOf). */
enum agg_op {
	AGG_READ = 0,
	AGG_WRITE = 1,
	AGG_SYNC = 2,
	AGG_OPS = 3,
};

/* Block request classes by REQ_OP. */
enum agg_rq_op {
	AGG_RQ_READ = 0,
	AGG_RQ_WRITE = 1,
	AGG_RQ_FLUSH = 2,   /* REQ_OP_FLUSH */
	AGG_RQ_DISCARD = 3, /* discard, secure erase, write zeroes */
	AGG_RQ_OPS = 4,
};

/* agg_global.overflow */
enum agg_overflow {
	AGG_OV_PROCS = 0, /* a process agg_procs had no room for: its calls counted in agg_other[0] */
	AGG_OV_FILES = 1, /* a file agg_files had no room for: agg_other[1] */
	AGG_OV_RQS = 2,   /* a request agg_rqs had no room for: its D2C/Q2C not measured, its bytes still counted */
	AGG_OV_DEVS = 3,  /* a disk agg_devs had no room for: its requests not counted */
	AGG_OV_NODISK = 4, /* a request issued without a disk to name (no rq_disk / q->disk): not counted per disk */
	AGG_OV_MAX = 5,
};

/* A file: an inode number reused after a delete is another file (its
 * i_generation differs), which must not be summed with the deleted one's
 * calls nor shown under its name. Also fault_stats' file (fault.c). */
struct agg_file_key {
	__u64 ino;
	__u32 dev; /* the file's superblock s_dev (kernel dev_t) */
	__u32 gen; /* the inode's i_generation */
};

/* What the calls of one process or one file did. */
struct agg_io {
	__u64 calls[AGG_OPS];
	__u64 errors[AGG_OPS];     /* calls that returned < 0 */
	__u64 bytes[AGG_OPS];      /* bytes returned (reads) or written (writes) */
	__u64 latency_ns[AGG_OPS]; /* sum of call durations */
	__u64 hit_pages;           /* read pages found in the page cache */
	__u64 miss_pages;          /* read pages inserted during the call inside its range */
	__u64 ra_pages;            /* pages inserted beyond the call's range (readahead) */
	__u64 disk_read_bytes;     /* bytes of bios the calls queued, read calls */
	__u64 disk_write_bytes;    /* ... write and sync calls (O_SYNC, O_DIRECT, fsync) */
	__u64 wb_bytes;            /* bytes of pages they dirtied, written back outside any traced call (flusher) */
	__u64 dirtied_pages;       /* pages turned dirty (clean→dirty) by the calls */
	__u64 cleaned_pages;       /* of tracked dirty pages, written back or dropped since */
	__u64 throttle_ns;         /* time in balance_dirty_pages */
	__u64 nobdev_pages;        /* read pages of files without a block device (proc, sysfs, cgroup, tmpfs): not in hit/miss */
	__u64 direct_read_bytes;   /* bytes returned by O_DIRECT reads: no page-cache pages, not in hit/miss */
	__u64 lat[AGG_OPS][AGG_BUCKETS]; /* call duration, log2 ns */
	/* Not counters (agg_merge and agg_split stop at name). Processes: the
	 * comm of the process's main thread (/proc/PID/comm), followed
	 * through renames (agg_renamed) and exec; files: the last path
	 * component at the latest call after a rename anywhere. */
	char name[PART_LEN];
	__u64 named_renames; /* files: rename_gen + 1 when name was read */
	__u32 segments;      /* processes: parts ended so far (agg_split) */
	__u32 pad;
};

struct agg_dev_key {
	__u32 dev; /* the disk's kernel dev_t (major<<20 | first_minor) */
	__u32 op;  /* enum agg_rq_op */
};

/* Every request issued to one disk and direction (whoever queued it).
 * Requests and bytes are counted at block_rq_issue, not at completion: on
 * the 6.18 build host no BPF program runs for a block_rq_complete fired in
 * a softirq on top of some tasks (docs/kernel-notes.md, "Completions BPF
 * never sees"), and a total counted at completion came out short. */
struct agg_dev {
	__u64 requests; /* issued (a requeued request once) */
	__u64 bytes;    /* rq->__data_len at issue */
	__u64 errors;   /* requests completed with an error status */
	__u64 d2c_ns;   /* sum of issue→complete */
	__u64 q2c_ns;   /* sum of request start (rq->start_time_ns)→complete */
	__u64 q2c_unknown; /* requests without a start time (no io accounting on the queue) */
	__u64 unseen;   /* issued requests whose completion no BPF program saw (their address issued again): no D2C/Q2C */
	__u64 d2c[AGG_BUCKETS];
	__u64 q2c[AGG_BUCKETS];
};

/* A request issued and not completed (agg_rqs). */
struct agg_rq {
	__u64 issue_ns;
	__u64 bytes; /* counted in agg_devs at issue */
	__u32 dev;
	__u32 op;       /* enum agg_rq_op */
	__u32 requeued; /* block_rq_requeue since the issue: the next issue is the same request's */
	__u32 pad;
};

struct agg_global {
	__u64 syscall_lat[AGG_OPS][2][AGG_BUCKETS]; /* by op and cache (0 hit, 1 miss: inserted pages or queued bios) */
	__u64 syscall_lat_ns[AGG_OPS][2];           /* sums */
	__u64 dirty_to_disk[AGG_BUCKETS];           /* dirtied → its writeback bio queued */
	__u64 dirty_to_disk_ns;
	__u64 overflow[AGG_OV_MAX];
};

/* Set by the loader (spec.Variables). */
const volatile __u8 agg_on = 0;   /* keep the aggregates */
const volatile __u8 agg_only = 0; /* and send no per-call / per-request record (top, serve) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, AGG_KEYS);
	__type(key, __u32); /* tgid */
	__type(value, struct agg_io);
} agg_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, AGG_KEYS);
	__type(key, struct agg_file_key);
	__type(value, struct agg_io);
} agg_files SEC(".maps");

/* [0]: calls of processes agg_procs refused, [1]: of files agg_files refused
 * (and the cleaning of their dirty pages), [AGG_OTHER_GONE]: the cleaning
 * and writeback of dirty pages whose process has no entry any more (it
 * exited and userspace retired it, aggregate.Reader): without it, a writer
 * that exits before the flusher writes its pages left them pending in the
 * totals forever, and their writeback bytes out of them. */
#define AGG_OTHER_GONE 2
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct agg_io);
} agg_other SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct agg_dev_key);
	__type(value, struct agg_dev);
} agg_devs SEC(".maps");

/* Requests issued and not completed: struct request * → struct agg_rq. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct agg_rq);
} agg_rqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct agg_global);
} agg_g SEC(".maps");

static const struct agg_io agg_io_zero = {};
static const struct agg_dev agg_dev_zero = {};

/* agg_bucket returns floor(log2(ns)) capped at AGG_BUCKETS - 1 (0 for 0),
 * without a branch: each step's shift is 0 or its width, taken from the
 * sign bit of a subtraction (ns < 2^63: durations and delays). With a
 * branch per step, 5.10's verifier walked the rest of agg_call once per
 * bucket value (the bucket indexes a histogram, so it stays precise and
 * no two paths merge): past its 1M-instruction limit (measured, 5.10.223). */
/* One step: w (its width in bits) if ns has a bit at w or above, else 0. */
#define AGG_LOG2_STEP(w)                                                                           \
	do {                                                                                       \
		__u64 _s = ((((1ULL << (w)) - 1) - ns) >> 63) * (w);                              \
		ns >>= _s;                                                                         \
		b += _s;                                                                           \
	} while (0)

static __always_inline __u32 agg_bucket(__u64 ns)
{
	__u64 b = 0;
	AGG_LOG2_STEP(32);
	AGG_LOG2_STEP(16);
	AGG_LOG2_STEP(8);
	AGG_LOG2_STEP(4);
	AGG_LOG2_STEP(2);
	AGG_LOG2_STEP(1);
	/* b ≤ 63: cap at AGG_BUCKETS - 1 the same way */
	__u64 over = ((__u64)(AGG_BUCKETS - 1) - b) >> 63;
	return b ^ ((b ^ (AGG_BUCKETS - 1)) & -over);
}

static __always_inline void agg_overflow(__u32 which)
{
	__u32 zero = 0;
	struct agg_global *g = bpf_map_lookup_elem(&agg_g, &zero);
	if (g && which < AGG_OV_MAX)
		__sync_fetch_and_add(&g->overflow[which], 1);
}

/* agg_entry returns map's entry for key, created (name filled by the
 * caller when *fresh) if there is room; else agg_other[other], counted. */
static __always_inline struct agg_io *agg_entry(void *map, const void *key, __u32 other, bool *fresh)
{
	struct agg_io *v = bpf_map_lookup_elem(map, key);
	if (v)
		return v;
	long err = bpf_map_update_elem(map, key, &agg_io_zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (v) {
		*fresh = err == 0;
		return v;
	}
	agg_overflow(other);
	return bpf_map_lookup_elem(&agg_other, &other);
}

static __always_inline __u32 agg_class(__u32 sys)
{
	if (is_sync_sys(sys))
		return AGG_SYNC;
	if (is_write_sys(sys))
		return AGG_WRITE;
	if ((sys >= SYS_READ && sys <= SYS_PREADV2) || sys == SYS_VFS_READ ||
	    (sys >= SYS_SENDFILE && sys <= SYS_COPY_FILE_RANGE))
		return AGG_READ;
	return AGG_OPS; /* faults, madvise, fadvise64, readahead: not aggregated */
}

/* [0]: where agg_call adds what has no entry of its own (a call without a
 * file), never read; [1]: agg_split's copy of the part it ends. Per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct agg_io);
} agg_sink SEC(".maps");

/* agg_block_backed says whether the call's file lives on a block device
 * (its superblock's s_bdev). Reads of /proc, sysfs, cgroup or tmpfs files
 * are served from memory the kernel fills without a disk: counted as page
 * hits they would make the cache ratio of an O_DIRECT run (whose data
 * reads count no pages) 100%. */
static __always_inline bool agg_block_backed(struct op *op)
{
	struct file *file = (struct file *)op->file;
	return file && BPF_CORE_READ(file, f_inode, i_sb, s_bdev);
}

/* AGG_ADD2 adds val to field of both entries. */
#define AGG_ADD2(p, f, field, val)                                                                 \
	do {                                                                                       \
		__u64 _v = (val);                                                                  \
		__sync_fetch_and_add(&(p)->field, _v);                                             \
		__sync_fetch_and_add(&(f)->field, _v);                                             \
	} while (0)

/* agg_call folds the current thread's finished call into its process, its
 * file and the run's latency histogram. Counters of an untouched call are
 * stale (op_touch): such a call saw no page-cache insert, bio, sleep or
 * dirtying. Each number is added to both entries as soon as it is known,
 * with no branch per counter (an add of 0 costs less than the verifier's
 * paths through a dozen ifs), so few values stay live: agg_call's stack
 * plus the syscall exit's must fit 512 bytes, each rounded up to 32
 * (5.10's check_max_stack_depth refused 368 + 144 when the numbers were
 * computed first into a struct). A global function: the verifier checks
 * it once, apart from the many paths of the syscall exit (inlined, they
 * hit the verifier's 1M-instruction limit). Without pointer arguments:
 * 5.10's verifier takes none but the context in a global function, so it
 * finds the thread's op itself. */
__noinline int agg_call(void)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op)
		return 0;
	__u32 cls = agg_class(op->sys);
	if (cls >= AGG_OPS)
		return 0;
	__u32 zero = 0;
	struct agg_io *sink = bpf_map_lookup_elem(&agg_sink, &zero);
	if (!sink)
		return 0;
	bool fresh = false;
	struct agg_io *p = agg_entry(&agg_procs, &op->pid, 0, &fresh);
	if (!p) {
		p = sink;
	} else if (fresh) {
		/* The main thread's comm, as agg_renamed follows it (a thread's
		 * own name, prctl(PR_SET_NAME) in a worker, is not the process's). */
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();
		BPF_CORE_READ_STR_INTO(&p->name, task, group_leader, comm);
	}
	struct agg_io *f = sink;
	if (op->ino) {
		struct file *file = (struct file *)op->file;
		struct agg_file_key fk = {.ino = op->ino, .dev = op->dev, .gen = BPF_CORE_READ(file, f_inode, i_generation)};
		fresh = false;
		f = agg_entry(&agg_files, &fk, 1, &fresh);
		/* Named at its first call, and again at its next call after any
		 * rename (rename.c counts them): the name of its latest call. */
		__u64 renames = rename_gen + 1;
		if (!f) {
			f = sink;
		} else if (fresh || f->named_renames != renames) {
			bpf_probe_read_kernel_str(f->name, sizeof(f->name), BPF_CORE_READ(file, f_path.dentry, d_name.name));
			f->named_renames = renames;
		}
	}
	__u64 lat = bpf_ktime_get_ns() - op->start_ns;
	__u32 bucket = agg_bucket(lat) & (AGG_BUCKETS - 1);
	AGG_ADD2(p, f, calls[cls], 1);
	AGG_ADD2(p, f, latency_ns[cls], lat);
	AGG_ADD2(p, f, lat[cls][bucket], 1);
	__s64 ret = op->ret;
	AGG_ADD2(p, f, errors[cls], ret < 0);
	bool read = cls == AGG_READ, direct = op->f_flags & O_DIRECT_FLAG;
	if (ret > 0 && cls != AGG_SYNC)
		AGG_ADD2(p, f, bytes[cls], ret);
	if (read && ret > 0 && direct)
		AGG_ADD2(p, f, direct_read_bytes, ret);
	bool touched = op->touched;
	if (touched) {
		__u32 added = op->pages_added, in_range = op->pages_in_range;
		AGG_ADD2(p, f, ra_pages, added > in_range ? added - in_range : 0);
		if (read)
			AGG_ADD2(p, f, disk_read_bytes, op->bio_bytes);
		else
			AGG_ADD2(p, f, disk_write_bytes, op->bio_bytes);
		AGG_ADD2(p, f, dirtied_pages, op->dirtied_pages);
		AGG_ADD2(p, f, throttle_ns, op->throttle_ns);
	}
	if (read && ret > 0 && !direct) {
		__u64 covered = ((op->offset + ret - 1) >> PAGE_SHIFT) - (op->offset >> PAGE_SHIFT) + 1;
		__u64 misses = touched ? op->pages_in_range : 0;
		if (misses > covered)
			misses = covered; /* a short read (EOF) asked for more than it got */
		if (agg_block_backed(op)) {
			AGG_ADD2(p, f, hit_pages, covered - misses);
			AGG_ADD2(p, f, miss_pages, misses);
		} else {
			AGG_ADD2(p, f, nobdev_pages, covered);
		}
	}
	struct agg_global *g = bpf_map_lookup_elem(&agg_g, &zero);
	if (g) {
		__u32 miss = (touched && (op->pages_in_range || op->bios_queued)) ? 1 : 0;
		__sync_fetch_and_add(&g->syscall_lat[cls][miss][bucket], 1);
		__sync_fetch_and_add(&g->syscall_lat_ns[cls][miss], lat);
	}
	return 0;
}

/* agg_procs keys: bits 0-21 the tgid (pids are < 2^22, PID_MAX_LIMIT);
 * with AGG_ENDED, an ended part of the process (before an exec or a
 * rename), numbered in bits 22-30 (agg_io.segments modulo AGG_SEGMENTS). */
#define AGG_ENDED 0x80000000U
#define AGG_SEG_SHIFT 22
#define AGG_SEGMENTS 512

/* agg_merge adds every counter of src to dst (not the name). */
static __always_inline void agg_merge(struct agg_io *dst, const struct agg_io *src)
{
	__u64 *d = (__u64 *)dst;
	const __u64 *s = (const __u64 *)src;
	for (int i = 0; i < offsetof(struct agg_io, name) / 8; i++)
		__sync_fetch_and_add(&d[i], s[i]);
}

/* agg_split ends the part of process tgid counted so far in v (under the
 * comm in v->name): its counters move to a new entry, key tgid |
 * AGG_ENDED | its number, which userspace folds as ended (aggregate.Reader)
 * under that comm; v goes on from 0. The entry is inserted whole (copied
 * per CPU first), so userspace never reads it half made; then exactly the
 * copied values are subtracted from v, so calls that other threads end
 * meanwhile stay in v: nothing is lost. Without an entry of its own the
 * part goes to agg_other[0] (counted in AGG_OV_PROCS). */
static __always_inline void agg_split(struct agg_io *v, __u32 tgid)
{
	__u32 one = 1;
	struct agg_io *c = bpf_map_lookup_elem(&agg_sink, &one);
	if (!c)
		return;
	__u32 seg = v->segments;
	__u32 key = tgid | AGG_ENDED | ((seg % AGG_SEGMENTS) << AGG_SEG_SHIFT);
	__builtin_memcpy(c, v, sizeof(*c));
	c->segments = seg;
	if (bpf_map_update_elem(&agg_procs, &key, c, BPF_NOEXIST)) {
		/* No room, or AGG_SEGMENTS parts of the process ended since
		 * userspace last read (their keys wrap): an entry still there may
		 * be being removed by userspace, so the part goes to the totals
		 * only, counted. */
		__u32 other = 0;
		struct agg_io *o = bpf_map_lookup_elem(&agg_other, &other);
		if (!o)
			return;
		agg_overflow(AGG_OV_PROCS);
		agg_merge(o, c);
	}
	v->segments = seg + 1;
	__u64 *d = (__u64 *)v;
	const __u64 *s = (const __u64 *)c;
	for (int i = 0; i < offsetof(struct agg_io, name) / 8; i++)
		__sync_fetch_and_add(&d[i], -s[i]);
}

/* agg_exec: process tgid ran execve (sched_process_exec, in the new
 * program), so its counts so far are the old program's, under the old
 * comm: they end (agg_split), the new program's go on under its comm. */
static __always_inline void agg_exec(__u32 tgid)
{
	if (!agg_on)
		return;
	struct agg_io *v = bpf_map_lookup_elem(&agg_procs, &tgid);
	if (!v)
		return;
	agg_split(v, tgid);
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	BPF_CORE_READ_STR_INTO(&v->name, task, group_leader, comm);
}

/* agg_renamed: task's comm becomes comm (task_rename: prctl(PR_SET_NAME),
 * a write to /proc/PID/comm; fired before the change). A process is named
 * by its main thread: the rename of another thread changes nothing. The
 * counts so far end under the old comm, the next calls count under the new
 * one. An exec's rename is left to agg_exec (the program changes too). */
static __always_inline void agg_renamed(struct task_struct *task, const char *comm)
{
	if (!agg_on)
		return;
	__u32 tgid = BPF_CORE_READ(task, tgid);
	if (BPF_CORE_READ(task, pid) != tgid)
		return;
	/* A kernel without the bit: the exec's rename ends the part, and
	 * agg_exec ends an empty one (no row: nothing counted). */
	if (bpf_core_field_exists(task->in_execve) && BPF_CORE_READ_BITFIELD_PROBED(task, in_execve))
		return;
	struct agg_io *v = bpf_map_lookup_elem(&agg_procs, &tgid);
	if (!v)
		return;
	char name[16] = {};
	bpf_probe_read_kernel_str(name, sizeof(name), comm);
	__u64 *n = (__u64 *)name, *o = (__u64 *)v->name;
	if (n[0] == o[0] && n[1] == o[1])
		return; /* the same name (both NUL-padded: comm is 16 bytes) */
	agg_split(v, tgid);
	__builtin_memcpy(v->name, name, sizeof(name));
}

/* agg_cleaned counts nr tracked dirty pages of file (dev, ino, gen: its
 * inode's i_generation), dirtied by process pid, as cleaned: written back
 * (bytes > 0: outside any traced call, so no call counted the bio) or
 * dropped (truncated, evicted). */
static __always_inline void agg_cleaned(__u32 pid, __u32 dev, __u64 ino, __u32 gen, __u32 nr, __u64 bytes)
{
	struct agg_io *p = bpf_map_lookup_elem(&agg_procs, &pid);
	if (!p) {
		__u32 gone = AGG_OTHER_GONE;
		p = bpf_map_lookup_elem(&agg_other, &gone);
	}
	if (p) {
		__sync_fetch_and_add(&p->cleaned_pages, nr);
		if (bytes)
			__sync_fetch_and_add(&p->wb_bytes, bytes);
	}
	struct agg_file_key fk = {.ino = ino, .dev = dev, .gen = gen};
	struct agg_io *f = bpf_map_lookup_elem(&agg_files, &fk);
	if (!f) {
		__u32 other = 1; /* a file agg_files had no room for */
		f = bpf_map_lookup_elem(&agg_other, &other);
	}
	if (f) {
		__sync_fetch_and_add(&f->cleaned_pages, nr);
		if (bytes)
			__sync_fetch_and_add(&f->wb_bytes, bytes);
	}
}

/* agg_written: a write bio carries tracked dirty folio (dev, ino, gen) of
 * nr pages, bio_pages of them in this bio, dirtied at dirtied_ns; traced
 * says whether a traced call queued the bio (its bio_bytes count it). */
static __always_inline void agg_written(__u32 pid, __u32 dev, __u64 ino, __u32 gen, __u32 nr, __u32 bio_pages,
					 __u64 dirtied_ns, bool traced)
{
	if (!agg_on)
		return;
	agg_cleaned(pid, dev, ino, gen, nr, traced ? 0 : (__u64)bio_pages << PAGE_SHIFT);
	__u32 zero = 0;
	struct agg_global *g = bpf_map_lookup_elem(&agg_g, &zero);
	if (g) {
		__u64 d = bpf_ktime_get_ns() - dirtied_ns;
		__sync_fetch_and_add(&g->dirty_to_disk[agg_bucket(d) & (AGG_BUCKETS - 1)], nr);
		__sync_fetch_and_add(&g->dirty_to_disk_ns, d * nr);
	}
}

static __always_inline void agg_dropped(__u32 pid, __u32 dev, __u64 ino, __u32 gen, __u32 nr)
{
	if (agg_on)
		agg_cleaned(pid, dev, ino, gen, nr, 0);
}

#define AGG_REQ_OP_MASK 0xff

static __always_inline __u32 agg_rq_op(__u32 cmd_flags)
{
	/* As the kernel's disk statistics group them (op_stat_group,
	 * include/linux/blkdev.h): discard alone is a discard; the other ops
	 * with the write bit (odd numbers: secure erase 5, write zeroes 9,
	 * zone append 13) are writes, the rest reads. */
	__u32 op = cmd_flags & AGG_REQ_OP_MASK;
	if (op == 2)
		return AGG_RQ_FLUSH;   /* REQ_OP_FLUSH */
	if (op == 3)
		return AGG_RQ_DISCARD; /* REQ_OP_DISCARD */
	return (op & 1) ? AGG_RQ_WRITE : AGG_RQ_READ;
}

/* agg_dev_of returns the entry of disk dev and direction op, created if
 * there is room (else counted in AGG_OV_DEVS). */
static __always_inline struct agg_dev *agg_dev_of(__u32 dev, __u32 op)
{
	struct agg_dev_key dk = {.dev = dev, .op = op};
	struct agg_dev *d = bpf_map_lookup_elem(&agg_devs, &dk);
	if (d)
		return d;
	bpf_map_update_elem(&agg_devs, &dk, &agg_dev_zero, BPF_NOEXIST);
	d = bpf_map_lookup_elem(&agg_devs, &dk);
	if (!d)
		agg_overflow(AGG_OV_DEVS);
	return d;
}

/* agg_rq_issue counts a request issued to disk dev (every request: the
 * per-disk numbers are the disk's, like iostat's) and remembers it until
 * its completion. The address still in agg_rqs without a requeue in
 * between means the previous request there ended without any of our
 * programs seeing its block_rq_complete: counted as unseen (its requests
 * and bytes were counted at its issue). */
static __always_inline void agg_rq_issue(struct request *rq, __u32 dev)
{
	if (!agg_on)
		return;
	if (!dev) {
		agg_overflow(AGG_OV_NODISK);
		return;
	}
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct agg_rq *old = bpf_map_lookup_elem(&agg_rqs, &key);
	if (old && old->requeued) {
		old->issue_ns = now; /* the same request again: counted at its first issue */
		old->requeued = 0;
		return;
	}
	if (old) {
		struct agg_dev *od = agg_dev_of(old->dev, old->op);
		if (od)
			__sync_fetch_and_add(&od->unseen, 1);
	}
	struct agg_rq r = {.issue_ns = now, .bytes = rq->__data_len, .dev = dev, .op = agg_rq_op(rq->cmd_flags)};
	struct agg_dev *d = agg_dev_of(dev, r.op);
	if (!d)
		return;
	__sync_fetch_and_add(&d->requests, 1);
	__sync_fetch_and_add(&d->bytes, r.bytes);
	if (bpf_map_update_elem(&agg_rqs, &key, &r, BPF_ANY))
		agg_overflow(AGG_OV_RQS);
}

/* agg_rq_requeue: the request goes back to the queue and will be issued
 * again as itself (counted once). */
static __always_inline void agg_rq_requeue(struct request *rq)
{
	if (!agg_on)
		return;
	__u64 key = (__u64)rq;
	struct agg_rq *r = bpf_map_lookup_elem(&agg_rqs, &key);
	if (r)
		r->requeued = 1;
}

/* agg_rq_done takes the completion of a request counted at issue: its
 * D2C/Q2C and error. A request ends with the completion that covers its
 * remaining bytes (blk_update_request reports before it advances
 * __data_len). A completion without an agg_rqs entry (issued before iopath
 * attached; a flush-sequence request that ends again after its post-flush,
 * or never issued: flush.c) adds nothing: its device work was counted, or
 * not, at issue. */
static __always_inline void agg_rq_done(struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	if (!agg_on)
		return;
	if (nr_bytes < rq->__data_len)
		return; /* a partial completion: the request goes on */
	__u64 key = (__u64)rq;
	struct agg_rq *r = bpf_map_lookup_elem(&agg_rqs, &key);
	if (!r)
		return;
	__u64 now = bpf_ktime_get_ns(), d2c = now - r->issue_ns;
	struct agg_dev *d = agg_dev_of(r->dev, r->op);
	bpf_map_delete_elem(&agg_rqs, &key);
	if (!d)
		return;
	if (error)
		__sync_fetch_and_add(&d->errors, 1);
	__sync_fetch_and_add(&d->d2c[agg_bucket(d2c) & (AGG_BUCKETS - 1)], 1);
	__sync_fetch_and_add(&d->d2c_ns, d2c);
	__u64 start = rq->start_time_ns;
	if (start && start <= now) {
		__u64 q2c = now - start;
		__sync_fetch_and_add(&d->q2c[agg_bucket(q2c) & (AGG_BUCKETS - 1)], 1);
		__sync_fetch_and_add(&d->q2c_ns, q2c);
	} else {
		__sync_fetch_and_add(&d->q2c_unknown, 1);
	}
}

/* Keeps the aggregate types in BTF for bpf2go -type. */
struct agg_contract {
	enum agg_op op;
	enum agg_rq_op rq_op;
	enum agg_overflow overflow;
	struct agg_file_key file_key;
	struct agg_io io;
	struct agg_dev_key dev_key;
	struct agg_dev dev;
	struct agg_rq rq;
	struct agg_global global;
};
const struct agg_contract *unused_agg_contract __attribute__((unused));

#endif /* IOPATH_AGG_H */
