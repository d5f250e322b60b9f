/* SPDX-License-Identifier: GPL-2.0 */
/* The life of one traced call: op_begin at entry, op_end at exit.
 *
 * Used by every mechanism of the call hooks (fentry/fexit, kprobe/kretprobe,
 * syscall tracepoints) so they produce identical records.
 */
#ifndef IOPATH_OP_H
#define IOPATH_OP_H

#include "helpers.h"
#include "compat.h" /* FETCH_INC, LOOP: the compat build for 5.10+ (issue 16) */
#include "spare.h"  /* take_turn: programs with a spare copy */

#define S_IFMT 00170000
#define S_IFREG 0100000
#define S_IFBLK 0060000
#define S_IFDIR 0040000

/* How a program may read a struct file: FILE_BTF for a BTF pointer (an fentry
 * argument, or a pointer given a type by bpf_rdonly_cast), read with plain
 * loads; FILE_PROBE for a plain address (kprobe argument, classic
 * tracepoint), read with bpf_probe_read_kernel, one helper call per field.
 * Passed as a constant so each program gets only its own variant. */
#define FILE_PROBE 0
#define FILE_BTF 1

/* bpf_rdonly_cast (kernel 6.2+) turns an address into a read-only typed
 * pointer, so struct file fields are plain loads (faults read as 0).
 * Weak: programs using it are loaded only where the kernel has it. */
extern void *bpf_rdonly_cast(const void *obj__ign, __u32 btf_id) __ksym __weak;

/* fd_file resolves fd in the current task's file table (RCU-protected in the
 * kernel; a racing close can at worst give us a stale pointer we only read).
 * The task's BTF pointer is walked with plain loads; the fd slot, at a
 * variable index, is read with bpf_probe_read_kernel (FILE_PROBE) or, with
 * FILE_BTF, as the first member of a struct kiocb cast onto it (ki_filp is
 * a struct file *; CO-RE gives its offset): a plain load, and a typed file
 * pointer. */
static __always_inline struct file *fd_file(int fd, const int access)
{
#ifdef IOPATH_COMPAT
	if (access == FILE_PROBE) {
		/* No bpf_get_current_task_btf before 5.11 (compat.h): the
		 * task's file table is read with probe reads too. */
		struct task_struct *cur = (void *)bpf_get_current_task();
		struct fdtable *cfdt = BPF_CORE_READ(cur, files, fdt);
		if (!cfdt || fd < 0 || (unsigned int)fd >= BPF_CORE_READ(cfdt, max_fds))
			return NULL;
		struct file **cfds = BPF_CORE_READ(cfdt, fd);
		struct file *cf = NULL;
		bpf_probe_read_kernel(&cf, sizeof(cf), &cfds[fd]);
		return cf;
	}
#endif
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files = task->files;
	if (!files || fd < 0)
		return NULL;
	struct fdtable *fdt = files->fdt;
	if (!fdt || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	if (access == FILE_BTF) {
		void *slot = (void *)&fdt->fd[fd] - bpf_core_field_offset(struct kiocb, ki_filp);
		struct kiocb *k = bpf_rdonly_cast(slot, bpf_core_type_id_kernel(struct kiocb));
		return k->ki_filp;
	}
	struct file **fds = fdt->fd;
	struct file *f = NULL;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

static __always_inline bool is_sync_sys(__u32 sys)
{
	return (sys >= SYS_FSYNC && sys <= SYS_SYNCFS) || sys == SYS_MSYNC;
}

static __always_inline bool is_write_sys(__u32 sys)
{
	return (sys >= SYS_WRITE && sys <= SYS_PWRITEV2) || sys == SYS_VFS_WRITE;
}

#define O_DSYNC_FLAG 010000    /* O_DSYNC; O_SYNC is __O_SYNC | O_DSYNC */
#define O_SYNC_FLAG 04000000   /* __O_SYNC: the inode's metadata too */
#define RWF_DSYNC_FLAG 2       /* pwritev2 flags: RWF_DSYNC, RWF_SYNC (include/uapi/linux/fs.h) */
#define RWF_SYNC_FLAG 4
#define S_SYNC_FLAG 1          /* inode->i_flags S_SYNC (chattr +S) */
#define SB_SYNCHRONOUS_FLAG 16 /* sb->s_flags SB_SYNCHRONOUS (mount -o sync) */
#define BDEVFS_MAGIC 0x62646576

/* syncs_device: a call that makes its data durable before it returns,
 * and so may wait for a jbd2 commit and a device flush: the fsync family,
 * and a write to a file opened O_DSYNC or O_SYNC (generic_write_sync runs
 * vfs_fsync_range inside the write: PostgreSQL's open_datasync, SQLite's
 * and many loggers' synchronous files). */
static __always_inline bool syncs_device(__u32 sys, __u32 f_flags)
{
	return is_sync_sys(sys) || (is_write_sys(sys) && (f_flags & O_DSYNC_FLAG));
}

/* op_slot returns the current thread's call state, creating it if the
 * thread belongs to a traced process; NULL if not traced. The answer
 * "untraced" is remembered in tid_slot until userspace adds a pid (except
 * under --comm: a thread's comm changes at exec). */
static __always_inline void flush_hits(struct op *op);

static __always_inline struct op *op_slot_as(__u32 tid, __u32 tgid, bool force);

static __always_inline struct op *op_slot(__u32 tid, __u32 tgid)
{
	return op_slot_as(tid, tgid, false);
}

/* op_slot_as is op_slot; force gives the thread a slot even when its
 * process is not traced (yet): an execve that makes it so (exec_comm). */
static __always_inline struct op *op_slot_as(__u32 tid, __u32 tgid, bool force)
{
	__u64 *w = slot_word(tid);
	if (!w) {
		count_event(CNT_TASK_OPS_FULL); /* a tid beyond PID_MAX_LIMIT: cannot happen */
		return NULL;
	}
	__u32 slot = slot_field(*w, tid);
	if (slot && slot <= MAX_SLOTS) {
		struct op *op = bpf_map_lookup_elem(&task_ops, &slot);
		/* Under --comm a thread stops being traced when its comm
		 * changes (prctl, exec), except in the execve that gives it
		 * the name (exec_comm); the owner check catches a slot left by
		 * a thread whose exit was not seen. */
		if (op && op->owner == tgid && (!filter_comm || op->exec_comm || is_traced(tgid)))
			return op;
		if (op && op->agg_calls)
			flush_hits(op);
		slot_set(w, tid, slot, 0);
		bpf_map_push_elem(&free_slots, &slot, 0);
		slot = 0;
	}
	__u32 untraced = SLOT_UNTRACED | (targets_gen & SLOT_GEN_MASK);
	if (slot == untraced)
		return NULL;
	if (!force && !is_traced(tgid)) {
		if (!filter_comm)
			slot_set(w, tid, slot, untraced);
		return NULL;
	}
	__u32 fresh = 0;
	if (bpf_map_pop_elem(&free_slots, &fresh)) {
		fresh = FETCH_INC(next_slot, 0) + 1; /* compat.h */
		if (fresh > MAX_SLOTS) {
			count_event(CNT_TASK_OPS_FULL);
			return NULL;
		}
	}
	static const struct op zero = {};
	if (bpf_map_update_elem(&task_ops, &fresh, &zero, BPF_ANY))
		return NULL;
	struct op *op = bpf_map_lookup_elem(&task_ops, &fresh);
	if (!op)
		return NULL;
	op->owner = tgid;
	op->slot = fresh;
	/* The thread's op_ids start at a base of their own (slot_gen): the
	 * generation times an odd constant (2^32/phi) spreads consecutive
	 * ones over the 32-bit space, so a later thread with this tid starts
	 * far from where this one's calls went. */
	op->seq = (__u32)(FETCH_INC(slot_gen, 2) * 0x9E3779B1ULL); /* compat.h */
	slot_set(w, tid, slot, fresh);
	return op;
}

/* op_start writes a call's identity into op and makes it active: sys on the
 * file (NULL: a sync, or a fault known only by its inode) of inode number
 * ino on dev. */
static __always_inline struct op *op_start(struct op *op, __u32 sys, struct file *file, __s64 fd, __s64 offset,
					   __u64 count, __u64 ino, __u32 dev, __u32 f_flags, __u64 magic)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	/* A call starting over a fault whose end never came (bpf/fault.c
	 * fault_unended): counted, its record lost with its slot's state. */
	if (op->active && op->sys == SYS_FAULT && sys != SYS_FAULT)
		count_event(CNT_FAULT_UNENDED);
	/* pwritev2's RWF_DSYNC / RWF_SYNC (its entry hook put its flags in
	 * sys_flags): the write syncs itself, as on an O_DSYNC / O_SYNC file
	 * (kiocb_set_rw_flags sets IOCB_DSYNC / IOCB_SYNC). */
	if (sys == SYS_PWRITEV2 && (op->sys_flags & (RWF_DSYNC_FLAG | RWF_SYNC_FLAG)))
		f_flags |= O_DSYNC_FLAG | ((op->sys_flags & RWF_SYNC_FLAG) ? O_SYNC_FLAG : 0);
	op->type = EV_OP;
	op->sys = sys;
	op->pid = tgid;
	op->tid = tid;
	op->seq++;
	op->op_id = ((__u64)tid << 32) | op->seq;
	op->start_ns = bpf_ktime_get_ns();
	op->fd = fd;
	op->offset = offset < 0 ? 0 : offset;
	op->count = count;
	op->ino = ino;
	op->dev = dev;
	op->f_flags = f_flags;
	op->file = (__u64)file;
	op->fs_magic = magic;
	op->touched = 0;
	op->active = 1;
	if (sys != SYS_SYNC_FILE_RANGE)
		op->sys_flags = 0; /* sync_file_range's are set by its entry hook (pwritev2's: read above) */
	/* sync(2) names no device (dev 0) but waits for every journal's
	 * commit (ext4_sync_fs): it counts in syncs_active, so that the jbd2
	 * hooks report the commits and their wakes (flush.c), without a
	 * device's sync_waiters entry (the commit records stay unowned). */
	if (syncs_device(sys, f_flags) && (dev || sys == SYS_SYNC)) {
		if (dev)
			bpf_map_update_elem(&sync_waiters, &dev, &op->op_id, BPF_ANY);
		__sync_fetch_and_add(&syncs_active, 1);
	}
	return op;
}

/* op_begin starts a call for the current task if it is traced and the file is
 * a regular file or block device (or the call is sync/syncfs). offset < 0
 * means "the file position" (read/write, or preadv2 with -1). access is
 * FILE_BTF or FILE_PROBE (how file may be read). Only the call's identity is
 * written here; its counters are zeroed by the first hook that records
 * (op_touch). */
static __always_inline struct op *op_begin_in(struct op *op, __u32 sys, struct file *file, __s64 fd,
					      __s64 offset, __u64 count, const int access)
{
	if (!file && sys != SYS_SYNC && sys != SYS_EXECVE)
		return NULL;
	__u64 ino = 0, magic = 0;
	__u32 dev = 0, f_flags = 0;
	if (file) {
		/* The inode's identity is cached per thread (inode pointer plus
		 * i_ino, so a recycled struct inode is not mistaken): repeated
		 * calls on one file read 4 fields instead of 9. */
		struct inode *inode;
		if (access == FILE_BTF) {
			inode = file->f_inode;
			ino = inode->i_ino;
		} else {
			inode = BPF_CORE_READ(file, f_inode);
			ino = BPF_CORE_READ(inode, i_ino);
		}
		if ((__u64)inode != op->c_inode || ino != op->c_ino) {
			op->c_inode = (__u64)inode;
			op->c_ino = ino;
			if (access == FILE_BTF) {
				op->c_mode = inode->i_mode;
				op->c_dev = inode->i_sb->s_dev;
				op->c_magic = inode->i_sb->s_magic;
			} else {
				op->c_mode = BPF_CORE_READ(inode, i_mode);
				op->c_dev = BPF_CORE_READ(inode, i_sb, s_dev);
				op->c_magic = BPF_CORE_READ(inode, i_sb, s_magic);
			}
			/* A block device node (/dev/loop1): its IO is the device's,
			 * not that of the filesystem holding the node (devtmpfs,
			 * which would read as tmpfs: "never written back"). */
			if ((op->c_mode & S_IFMT) == S_IFBLK) {
				op->c_dev = access == FILE_BTF ? inode->i_rdev : BPF_CORE_READ(inode, i_rdev);
				op->c_magic = BDEVFS_MAGIC;
			}
		}
		/* Directories only for the fsync family: a database's fsync of
		 * its directory makes a create or rename durable. */
		__u32 fmt = op->c_mode & S_IFMT;
		if (fmt != S_IFREG && fmt != S_IFBLK && !(fmt == S_IFDIR && is_sync_sys(sys)))
			return NULL;
		dev = op->c_dev;
		magic = op->c_magic;
		if (access == FILE_BTF) {
			f_flags = file->f_flags;
			if (offset < 0)
				offset = file->f_pos;
		} else {
			f_flags = BPF_CORE_READ(file, f_flags);
			if (offset < 0)
				offset = BPF_CORE_READ(file, f_pos);
		}
		/* A synchronous inode or mount (chattr +S, mount -o sync:
		 * IS_SYNC) makes every write sync itself as O_SYNC would
		 * (iocb_flags: IOCB_DSYNC | IOCB_SYNC). */
		if (is_write_sys(sys) && !(f_flags & O_SYNC_FLAG)) {
			__u32 i_flags, s_flags;
			if (access == FILE_BTF) {
				i_flags = inode->i_flags;
				s_flags = inode->i_sb->s_flags;
			} else {
				i_flags = BPF_CORE_READ(inode, i_flags);
				s_flags = BPF_CORE_READ(inode, i_sb, s_flags);
			}
			if ((i_flags & S_SYNC_FLAG) || (s_flags & SB_SYNCHRONOUS_FLAG))
				f_flags |= O_DSYNC_FLAG | O_SYNC_FLAG;
		}
		/* O_APPEND: the kernel writes at the end of the file
		 * (generic_write_checks), whatever f_pos says, and on Linux
		 * even where pwrite(2) gives an offset: the inode's size now. */
		if ((f_flags & 02000 /* O_APPEND */) && is_write_sys(sys))
			offset = access == FILE_BTF ? inode->i_size : BPF_CORE_READ(inode, i_size);
	}
	return op_start(op, sys, file, fd, offset, count, ino, dev, f_flags, magic);
}

/* op_begin: op_begin_in for the current thread, if traced. */
static __always_inline struct op *op_begin(__u32 sys, struct file *file, __s64 fd, __s64 offset, __u64 count,
					   const int access)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (!file && sys != SYS_SYNC && sys != SYS_EXECVE)
		return NULL;
	struct op *op = op_slot((__u32)id, id >> 32);
	if (!op)
		return NULL;
	return op_begin_in(op, sys, file, fd, offset, count, access);
}

/* path_step names one dentry of the walk fill_path_of started in op
 * (walk_dentry on walk_mount), crossing to the parent mount at a mount's
 * root the way d_path does. Returns 1 when the walk is done: the root
 * reached (PATH_ROOT), or PATH_PARTS names taken. */
struct path_walk {
	struct op *op;
};

static __always_inline long path_step_op(struct op *op)
{
	if (!op)
		return 1;
	struct dentry *d = (struct dentry *)op->walk_dentry;
	struct mount *mnt = (struct mount *)op->walk_mount;
	struct dentry *mnt_root = BPF_CORE_READ(mnt, mnt.mnt_root);
	if (d == mnt_root) {
		struct mount *parent = BPF_CORE_READ(mnt, mnt_parent);
		if (parent == mnt || !parent) {
			op->path_done = PATH_ROOT;
			return 1;
		}
		op->walk_dentry = (__u64)BPF_CORE_READ(mnt, mnt_mountpoint);
		op->walk_mount = (__u64)parent;
		return 0;
	}
	struct dentry *up = BPF_CORE_READ(d, d_parent);
	if (up == d) {
		op->path_done = PATH_ROOT;
		return 1;
	}
	__u32 j = op->path_depth;
	if (j >= PATH_PARTS)
		return 1;
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	if (bpf_probe_read_kernel_str(op->path[j], PART_LEN, name) == PART_LEN && BPF_CORE_READ(d, d_name.len) >= PART_LEN)
		op->path_trunc |= 1U << j;
	op->path_depth = j + 1;
	op->walk_dentry = (__u64)up;
	return 0;
}

#ifdef IOPATH_COMPAT
/* The compat build's step: a global function (verified once), which finds
 * op by its task_ops slot (global functions take scalars only on 5.10). */
__noinline long path_step_slot(__u32 slot)
{
	return path_step_op(bpf_map_lookup_elem(&task_ops, &slot));
}
#else
static long path_step(__u32 i, struct path_walk *w)
{
	return path_step_op(w->op);
}
#endif

/* fill_path records the file's dentry names, deepest first, crossing mounts
 * the way d_path does; only for streamed calls. At most PATH_PARTS + 4
 * steps (names plus mount crossings). A global function in both builds,
 * checked once per program instead of at each inlined copy: inlined, the
 * walk made ~50,000 of the instructions the verifier processed per copy
 * (1.19 M in all on 6.18; in the compat build 0.9 of its 1.9 M), most of
 * iopath's start-up and of every trace start under qemu's TCG. The file is
 * a scalar (global functions take no kernel pointers before 6.8's
 * __arg_trusted; it is read with BPF_CORE_READ anyway).
 *  - main build: op is a pointer to memory (5.12+); the walk is a bpf_loop
 *    (5.17+), so the verifier checks one step instead of every iteration.
 *  - compat build (5.10): global functions take scalars only, so the walk
 *    and its step (path_step_slot) find op by its task_ops slot; a bounded
 *    loop (no bpf_loop) over the step, checked once. */
#ifdef IOPATH_COMPAT
__noinline int fill_path_slot(__u32 slot, __u64 file_ptr, __u64 ino, __u32 dev)
{
	struct op *op = bpf_map_lookup_elem(&task_ops, &slot);
#else
__noinline int fill_path_of(struct op *op, __u64 file_ptr, __u64 ino, __u32 dev)
{
#endif
	struct file *file = (struct file *)file_ptr;
	if (!op)
		return 0;
	op->path_type = EV_PATH;
	op->path_tid = op->tid;
	op->path_ino = ino;
	op->path_dev = dev;
	op->path_gen = file ? BPF_CORE_READ(file, f_inode, i_generation) : 0;
	op->path_depth = 0;
	op->path_done = 0;
	op->path_trunc = 0;
	if (!file)
		return 0;
	struct vfsmount *vm = BPF_CORE_READ(file, f_path.mnt);
	op->walk_dentry = (__u64)BPF_CORE_READ(file, f_path.dentry);
	op->walk_mount = (__u64)container_of(vm, struct mount, mnt);
#ifdef IOPATH_COMPAT
	for (__u32 i = 0; i < PATH_PARTS + 4; i++)
		if (path_step_slot(slot))
			break;
#else
	struct path_walk w = {.op = op};
	bpf_loop(PATH_PARTS + 4, path_step, &w, 0);
#endif
	return 0;
}

#ifdef IOPATH_COMPAT
static __always_inline int fill_path_of(struct op *op, __u64 file_ptr, __u64 ino, __u32 dev)
{
	return op ? fill_path_slot(op->slot, file_ptr, ino, dev) : 0;
}
#endif

static __always_inline void fill_path(struct op *op)
{
	fill_path_of(op, op->file, op->ino, op->dev);
}

/* emit_path sends the path fields of op as an EV_PATH. */
static __always_inline int emit_path(struct op *op)
{
	__u32 depth = op->path_depth;
	if (depth > PATH_PARTS)
		depth = PATH_PARTS;
	return emit(&op->path_type, offsetof(struct op, path) - offsetof(struct op, path_type) + depth * PART_LEN);
}

/* name_copy_output sends the name of the file an in-kernel copy dirtied
 * pages of (its output), once per call: an EV_PATH with PATH_NAME_ONLY,
 * which names out_ino and leaves the thread's path numbering alone. The
 * call's own file is walked again the next time (its path fields now hold
 * the output's). */
static __always_inline void name_copy_output(struct op *op)
{
	struct file *out = (struct file *)op->out_file;
	op->out_file = 0;
	if (!out || !op->out_ino || op->sys < SYS_SENDFILE || op->sys > SYS_COPY_FILE_RANGE)
		return;
	if (BPF_CORE_READ(out, f_inode, i_ino) != op->out_ino)
		return; /* the pages dirtied are not the output fd's (a race with close/dup2) */
	__u32 no = op->path_no;
	fill_path_of(op, (__u64)out, op->out_ino, op->out_dev);
	op->path_done |= PATH_NAME_ONLY;
	op->path_no = 0;
	emit_path(op);
	op->path_no = no;
	op->c_path_dentry = 0;
}

#define PATH_RESEND 256

#define TMPFS_MAGIC 0x01021994
#define RAMFS_MAGIC 0x858458f6

/* interesting_untouched: what streams a call whose counters are all zero. */
static __always_inline bool interesting_untouched(struct op *op)
{
	/* A write to tmpfs/ramfs is streamed so the user learns it will never
	 * be written back (no dirty-page event fires for shmem). */
	if (is_write_sys(op->sys) && op->ret > 0 && (op->fs_magic == TMPFS_MAGIC || op->fs_magic == RAMFS_MAGIC))
		return true;
	/* madvise/fadvise64/readahead (issue 14) are rare and change what
	 * later reads and faults do: always streamed. */
	return emit_all || op->ret < 0 || syncs_device(op->sys, op->f_flags) || (op->sys >= SYS_MADVISE && op->sys <= SYS_READAHEAD);
}

static __always_inline bool interesting(struct op *op)
{
	return interesting_untouched(op) || op->pages_added || op->bios_queued || op->blocked_ns ||
	       op->throttle_ns || op->throttle_pauses || op->dirtied_pages;
}

#define O_DIRECT_FLAG 040000

#include "agg.h" /* issue 17: the aggregates of top/serve (agg_call) */

/* other_hits returns the bucket for a thread's hits that hit_stats had no
 * room for: its process's entry in hit_other, or, if that map is full too,
 * hit_unowned (never full). */
static __always_inline struct stat_val *other_hits(struct op *op)
{
	struct other_key k = {.pid = op->pid, .write = op->agg_write};
	struct stat_val *v = bpf_map_lookup_elem(&hit_other, &k);
	if (v)
		return v;
	struct stat_val zero = {};
	bpf_get_current_comm(zero.comm, sizeof(zero.comm));
	long err = bpf_map_update_elem(&hit_other, &k, &zero, BPF_NOEXIST);
	if (err && err != -EEXIST)
		count_event(CNT_HIT_OTHER_FULL);
	v = bpf_map_lookup_elem(&hit_other, &k);
	if (v)
		return v;
	__u32 idx = op->agg_write ? 1 : 0;
	return bpf_map_lookup_elem(&hit_unowned, &idx);
}

/* flush_hits folds a thread's summed cache hits into hit_stats, or into
 * its process's "other files" bucket when hit_stats refuses the file (full,
 * or no memory): every sum is reset either way, so nothing carries over to
 * the thread's next file. Atomic adds: another task on this CPU may flush
 * into the same per-CPU value if this program is preempted. */
static __always_inline void flush_hits(struct op *op)
{
	struct stat_key k = {
		.ino = op->agg_ino, .pid = op->pid, .dev = op->agg_dev, .write = op->agg_write, .gen = op->agg_gen,
	};
	struct stat_val *v = bpf_map_lookup_elem(&hit_stats, &k);
	if (!v) {
		struct stat_val zero = {};
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
		__builtin_memcpy(zero.name, op->agg_name, sizeof(zero.name));
		long err = bpf_map_update_elem(&hit_stats, &k, &zero, BPF_NOEXIST);
		/* -EEXIST: another CPU inserted it. -E2BIG is a full map;
		 * anything else (-ENOMEM) an allocation that failed with room
		 * left, which is not a full map and is said apart. */
		if (err == -E2BIG)
			count_event(CNT_OPS_FULL);
		else if (err && err != -EEXIST)
			count_event(CNT_OPS_NOMEM);
		v = bpf_map_lookup_elem(&hit_stats, &k);
		if (!v)
			v = other_hits(op);
	}
	if (v) {
		__sync_fetch_and_add(&v->calls, op->agg_calls);
		__sync_fetch_and_add(&v->bytes_requested, op->agg_bytes_requested);
		__sync_fetch_and_add(&v->bytes_returned, op->agg_bytes_returned);
		__sync_fetch_and_add(&v->pages, op->agg_pages);
	}
	op->agg_calls = 0;
	op->agg_bytes_requested = 0;
	op->agg_bytes_returned = 0;
	op->agg_pages = 0;
}

/* op_release gives tid's slot back at thread exit, after folding its
 * summed hits into hit_stats. */
static __always_inline void op_release(__u32 tid)
{
	__u64 *w = slot_word(tid);
	if (!w)
		return;
	__u32 slot = slot_field(*w, tid);
	if (!slot)
		return;
	slot_set(w, tid, slot, 0);
	if (slot > MAX_SLOTS)
		return;
	struct op *op = bpf_map_lookup_elem(&task_ops, &slot);
	if (op && op->agg_calls)
		flush_hits(op);
	if (op)
		op->active = 0;
	bpf_map_push_elem(&free_slots, &slot, 0);
}

/* exec_begun: a non-leader thread began an execve call while its leader
 * had already exited (pthread_exit): no leader's exit will name its slot
 * as the one taking the leader's tid (exec_moving, bpf/slots.h). */
static __always_inline void exec_begun(__u32 tid, __u32 tgid)
{
	if (tid == tgid)
		return;
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	if (!BPF_CORE_READ(t, group_leader, exit_state))
		return;
	__u64 *w = slot_word(tid);
	if (!w)
		return;
	__u32 slot = slot_field(*w, tid);
	if (slot && slot <= MAX_SLOTS)
		exec_moving_set(tgid, slot);
}

/* path_key reads what tells the file's name apart from the one the
 * thread's last EV_PATH sent (op_stream): the mount, the dentry, its parent
 * and grandparent, and the name's hash and length xor the inode's
 * generation. access is FILE_BTF where the kernel has bpf_rdonly_cast (the
 * file's pointers walked with plain loads, faults read as 0) or FILE_PROBE
 * (a bpf_probe_read_kernel per field: seven helper calls, ~150 ns of each
 * streamed call's exit here). */
static __always_inline struct dentry *path_key(struct file *file, const int access, __u64 *mnt, __u64 *parent,
					       __u64 *up2, __u64 *hash_len)
{
	struct dentry *d;
	if (access == FILE_BTF) {
		struct file *f = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
		d = f->f_path.dentry;
		struct dentry *p = d->d_parent;
		*mnt = (__u64)f->f_path.mnt;
		*parent = (__u64)p;
		*up2 = (__u64)p->d_parent;
		*hash_len = d->d_name.hash_len ^ ((__u64)f->f_inode->i_generation << 32);
		return d;
	}
	*mnt = (__u64)BPF_CORE_READ(file, f_path.mnt);
	d = BPF_CORE_READ(file, f_path.dentry);
	struct dentry *p = BPF_CORE_READ(d, d_parent);
	*parent = (__u64)p;
	*up2 = (__u64)BPF_CORE_READ(p, d_parent);
	*hash_len = BPF_CORE_READ(d, d_name.hash_len) ^ ((__u64)BPF_CORE_READ(file, f_inode, i_generation) << 32);
	return d;
}

/* op_stream sends a finished call's record (EV_OP), preceded by its file's
 * EV_PATH when the thread's last one named another file. */
static __always_inline void op_stream_in(struct op *op, const int access)
{
	op_touch(op);
	op->end_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(op->comm, sizeof(op->comm));
	/* The dentry walk costs ~25 helper calls: a thread's records
	 * on the name its last EV_PATH sent get none (userspace reuses
	 * it, matched by number), except every PATH_RESEND records (a
	 * directory above may have been renamed). */
	op->path_seq = 0;
	struct file *file = (struct file *)op->file;
	if (file) {
		/* Freed dentries and inodes come back at the same
		 * addresses: the grandparent and the inode's generation
		 * (new for every new inode) tell a recreated tree apart. */
		__u64 mnt, parent, up2, hash_len;
		struct dentry *d = path_key(file, access, &mnt, &parent, &up2, &hash_len);
		__u64 renames = rename_gen;
		if (op->c_path_mnt == mnt && op->c_path_dentry == (__u64)d && op->c_path_parent == (__u64)parent &&
		    op->c_path_up2 == up2 && op->c_path_hash_len == hash_len && op->c_path_renames == renames &&
		    ++op->path_reuse < PATH_RESEND) {
			op->path_seq = op->path_no;
		} else {
			fill_path(op);
			/* Numbers unique across threads and slots: a path
			 * record of a tid's earlier life (a reused tid)
			 * never matches. */
			op->path_no = FETCH_INC(path_serial, 1) + 1; /* compat.h */
			__u32 depth = op->path_depth;
			if (depth > PATH_PARTS)
				depth = PATH_PARTS;
			if (emit(&op->path_type, offsetof(struct op, path) - offsetof(struct op, path_type) +
							 depth * PART_LEN) == 0) {
				op->path_seq = op->path_no;
				op->c_path_mnt = mnt;
				op->c_path_dentry = (__u64)d;
				op->c_path_parent = (__u64)parent;
				op->c_path_up2 = up2;
				op->c_path_hash_len = hash_len;
				op->c_path_renames = renames;
				op->path_reuse = 0;
			} else {
				/* Lost (counted): userspace counts the record's
				 * path as missing; sent again next time. */
				op->path_seq = op->path_no;
				op->c_path_dentry = 0;
			}
		}
	}
	__u32 n = op->nr_ranges;
	if (n > MAX_RANGES)
		n = MAX_RANGES;
	name_copy_output(op); /* before the record, which then finds the name */
	emit(&op->type, offsetof(struct op, ranges) - offsetof(struct op, type) + n * sizeof(struct page_range));
}

static __always_inline void op_stream(struct op *op)
{
	op_stream_in(op, FILE_PROBE);
}

/* op_end closes the current call: stream it if it touched the disk, waited,
 * dirtied pages or failed; otherwise fold it into the thread's hit sums.
 * access: how op_stream may read the call's struct file (FILE_BTF only in
 * programs loaded where the kernel has bpf_rdonly_cast). */
static __always_inline void op_end_in(__s64 ret, const int access)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op || !op->active)
		return;
	op->active = 0;
	op->ret = ret;
	if (syncs_device(op->sys, op->f_flags) && (op->dev || op->sys == SYS_SYNC)) {
		__u64 *w = op->dev ? bpf_map_lookup_elem(&sync_waiters, &op->dev) : NULL;
		if (w && *w == op->op_id)
			bpf_map_delete_elem(&sync_waiters, &op->dev);
		__sync_fetch_and_add(&syncs_active, -1);
	}
	if (agg_on) {
		agg_call(); /* agg.h */
		if (agg_only)
			return;
	}
	/* An execve that read nothing is not interesting (a shell's PATH
	 * search fails once per directory: a user saw 13 ENOENT records for
	 * one missing command), nor a call of any file's to sum with its
	 * hits. Untouched, its counters are an earlier call's. */
	if (op->sys == SYS_EXECVE && !emit_all &&
	    (!op->touched || (!op->pages_added && !op->bios_queued && !op->blocked_ns)))
		return;
	/* An untouched call saw no page-cache, block, sched or writeback
	 * event: only its result can make it interesting. */
	if (op->touched ? interesting(op) : interesting_untouched(op)) {
		op_stream_in(op, access);
		return;
	}
	__u32 w = is_write_sys(op->sys);
	struct file *file = (struct file *)op->file;
	/* Two loads: an inode number reused after a delete is another file,
	 * whose hits must not be summed with the deleted one's. */
	__u32 gen = BPF_CORE_READ(file, f_inode, i_generation);
	if (op->agg_calls && (op->agg_ino != op->ino || op->agg_dev != op->dev || op->agg_write != w || op->agg_gen != gen))
		flush_hits(op);
	if (op->agg_calls == 0) {
		op->agg_ino = op->ino;
		op->agg_dev = op->dev;
		op->agg_write = w;
		op->agg_gen = gen;
		bpf_probe_read_kernel_str(op->agg_name, sizeof(op->agg_name), BPF_CORE_READ(file, f_path.dentry, d_name.name));
	}
	op->agg_calls++;
	if (op->sys >= SYS_SENDFILE && op->sys <= SYS_COPY_FILE_RANGE)
		op->agg_bytes_requested += ret > 0 ? ret : 0; /* cp asks for up to SSIZE_MAX */
	else
		op->agg_bytes_requested += op->count;
	if (ret > 0) {
		op->agg_bytes_returned += ret;
		if (!(op->f_flags & O_DIRECT_FLAG)) {
			__u64 first = op->offset >> PAGE_SHIFT;
			__u64 last = (op->offset + ret - 1) >> PAGE_SHIFT;
			op->agg_pages += last - first + 1;
		}
	}
}

static __always_inline void op_end(__s64 ret)
{
	op_end_in(ret, FILE_PROBE);
}

/* syscall_from_regs maps the x86-64 syscall number of the current task to
 * op_sys for the vfs_read/vfs_write function hooks. */
static __always_inline __u32 syscall_from_regs(bool write, __s64 *fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long nr = BPF_CORE_READ(regs, orig_ax);
	*fd = BPF_CORE_READ(regs, di);
	switch (nr) {
	case 0: return SYS_READ;
	case 1: return SYS_WRITE;
	case 17: return SYS_PREAD64;
	case 18: return SYS_PWRITE64;
	}
	*fd = -1;
	return write ? SYS_VFS_WRITE : SYS_VFS_READ;
}

/* vfs_enter is the entry of the vfs_read/vfs_write function hooks, shared
 * by their fentry (access FILE_BTF) and kprobe (FILE_PROBE) programs. */
static __always_inline void vfs_enter(bool write, struct file *file, size_t count, loff_t *pos, const int access)
{
	__s64 fd;
	__u32 sys = syscall_from_regs(write, &fd);
	__s64 off = -1;
	if (pos)
		bpf_probe_read_kernel(&off, sizeof(off), pos);
	op_begin(sys, file, fd, off, count, access);
}

#define UIO_MAXIOV 1024 /* the kernel's bound on iovecs per call (include/uapi/linux/uio.h) */
#define COMPAT_IOVS 8    /* iovecs the compat build sums (a bounded loop the verifier walks) */

#ifndef IOPATH_COMPAT
/* iov_sum is iov_step's context (bpf_loop's: values only). */
struct iov_sum {
	__u64 iov;   /* const struct iovec * (user memory) */
	__u64 total; /* bytes */
};

static long iov_step(__u32 i, struct iov_sum *s)
{
	struct iovec v = {};
	bpf_probe_read_user(&v, sizeof(v), (const void *)(s->iov + (__u64)i * sizeof(struct iovec)));
	s->total += v.iov_len;
	return 0;
}
#endif

/* iov_total sums the lengths of a call's iovecs: all of them (up to the
 * kernel's UIO_MAXIOV) in the main build; the first COMPAT_IOVS in the
 * compat build (5.10–5.16), where a vectored call or iocb with more
 * reports less than it asked for (README). With 8 in both, a preadv of 9
 * iovecs said 32768 requested bytes and returned 36864 (a breaker);
 * PostgreSQL writes its WAL with up to 32. */
static __always_inline __u64 iov_total(const struct iovec *iov, unsigned long vlen)
{
#ifdef IOPATH_COMPAT
	__u64 total = 0;
	for (int i = 0; i < COMPAT_IOVS; i++) {
		if (i >= vlen)
			break;
		struct iovec v = {};
		bpf_probe_read_user(&v, sizeof(v), &iov[i]);
		total += v.iov_len;
	}
	return total;
#else
	struct iov_sum s = {.iov = (__u64)iov};
	bpf_loop(vlen < UIO_MAXIOV ? vlen : UIO_MAXIOV, iov_step, &s, 0);
	return s.total;
#endif
}

/* struct page's index (renamed __folio_index in 6.18; only read on kernels
 * without folios or whose tracepoints pass pages, kernels/issue 16). */
struct page___index {
	unsigned long index;
} __attribute__((preserve_access_index));

/* folio_mapping_of and folio_index_of read a folio's mapping and index, or
 * those of the (head) page on kernels without struct folio (before 5.16). */
static __always_inline struct address_space *folio_mapping_of(struct folio *folio)
{
	if (bpf_core_type_exists(struct folio))
		return BPF_CORE_READ(folio, mapping);
	return BPF_CORE_READ((struct page *)folio, mapping);
}

static __always_inline __u64 folio_index_of(struct folio *folio)
{
	if (bpf_core_type_exists(struct folio))
		return BPF_CORE_READ(folio, index);
	return BPF_CORE_READ((struct page___index *)folio, index);
}

struct page___compound {
	unsigned char compound_order; /* up to 5.17, in the first tail page */
} __attribute__((preserve_access_index));

struct folio___old {
	unsigned char _folio_order; /* 5.17 - 6.5: the order had its own byte */
} __attribute__((preserve_access_index));

/* folio_pages returns the number of 4 KiB pages in a folio (folio_nr_pages). */
static __always_inline __u32 folio_pages(struct folio *folio)
{
	/* flags is the first member of struct folio/page in every version; its
	 * type changed (unsigned long -> memdesc_flags_t in 6.18), so read it by
	 * address instead of through a CO-RE field access. */
	unsigned long flags = 0;
	bpf_probe_read_kernel(&flags, sizeof(flags), folio);
	int head = bpf_core_enum_value(enum pageflags, PG_head);
	if (!(flags & (1UL << head)))
		return 1;
	unsigned int order = 0;
	struct folio___old *old = (void *)folio;
	if (!bpf_core_type_exists(struct folio)) {
		/* Before 5.16 (no folios; kernels/issue 16): a compound page's
		 * order is in its first tail page. */
		struct page___compound *tail = (void *)((char *)folio + bpf_core_type_size(struct page));
		order = BPF_CORE_READ(tail, compound_order);
	} else if (bpf_core_field_exists(old->_folio_order)) {
		order = BPF_CORE_READ(old, _folio_order);
	} else {
		unsigned long f1 = BPF_CORE_READ(folio, _flags_1);
		order = f1 & 0xff; /* 6.6+: folio_order() is the low byte of _flags_1 */
	}
	return 1U << (order & 15);
}

#endif /* IOPATH_OP_H */
