//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Stand-in for the call hooks (vfs_read, readv, vfs_write, writev, fsync):
 * BTF raw tracepoints raw_syscalls:sys_enter / sys_exit, filtered first by
 * syscall number. Preferred over the per-syscall classic tracepoints
 * (syscalls:sys_enter_read, ...): two links instead of thirty, and a classic
 * tracepoint's perf link takes ~85 ms to detach on 6.18 (measured), which
 * made iopath's exit take seconds.
 *
 * Syscall numbers are x86-64's (arch/x86/entry/syscalls/syscall_64.tbl);
 * the object is built for amd64 only. The loader sets raw_sys_mask to the
 * op_sys values this mechanism serves, so a call hooked by fentry is not
 * counted twice. */
#include "op.h"

const volatile __u64 raw_sys_mask = 0; /* bit (1 << enum op_sys) */

static __always_inline __u32 sys_from_nr(long nr)
{
	switch (nr) {
	case 0: return SYS_READ;
	case 1: return SYS_WRITE;
	case 17: return SYS_PREAD64;
	case 18: return SYS_PWRITE64;
	case 19: return SYS_READV;
	case 20: return SYS_WRITEV;
	case 74: return SYS_FSYNC;
	case 75: return SYS_FDATASYNC;
	case 162: return SYS_SYNC;
	case 277: return SYS_SYNC_FILE_RANGE;
	case 295: return SYS_PREADV;
	case 296: return SYS_PWRITEV;
	case 306: return SYS_SYNCFS;
	case 327: return SYS_PREADV2;
	case 328: return SYS_PWRITEV2;
	case 40: return SYS_SENDFILE;
	case 275: return SYS_SPLICE;
	case 326: return SYS_COPY_FILE_RANGE;
	case 82:  /* rename */
	case 264: /* renameat */
	case 316: return SYS_RENAME; /* renameat2 */
	case 26: return SYS_MSYNC; /* issue 14 */
	case 28: return SYS_MADVISE;
	case 221: return SYS_FADVISE64;
	case 187: return SYS_READAHEAD;
	case 209: return SYS_IO_SUBMIT; /* issue 13 (bpf/aio.c) */
	case 208: /* io_getevents */
	case 333: return SYS_IO_GETEVENTS; /* io_pgetevents */
	case 426: return SYS_IO_URING_ENTER; /* bpf/uring.c */
	case 59:  /* execve */
	case 322: return SYS_EXECVE; /* execveat (bpf/sched.c) */
	}
	return 0;
}

/* compat_call: the current system call is a 32-bit one (int $0x80, or a
 * 32-bit program: TS_COMPAT in the thread's status, arch/x86), whose
 * numbers are not sys_from_nr's (32-bit 322 is timerfd_create, not
 * execveat): not traced. */
#define TS_COMPAT 0x0002
static __always_inline bool compat_call(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	return BPF_CORE_READ(t, thread_info.status) & TS_COMPAT;
}

/* user_off reads a loff_t the caller passed by pointer; -1 (the file
 * position) when the pointer is NULL. */
static __always_inline __s64 user_off(const void *p)
{
	__s64 off = -1;
	if (p)
		bpf_probe_read_user(&off, sizeof(off), p);
	return off;
}

/* The filename an execve is given, for exec_names_target. */
struct exec_name {
	char s[256];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exec_name);
} exec_name_buf SEC(".maps");

/* exec_names_target says whether an execve of filename (user memory) makes
 * the task --comm's target: begin_new_exec names the task after the
 * filename's last component, cut to 15 bytes (__set_task_comm of
 * kbasename(bprm->filename); a #! script's own name, not its
 * interpreter's). Under --comm the calling task (a shell, a Go runtime) has
 * another name until then, and the reads of the load would go untraced.
 * The filename must end in "/" + the target, or be it: a last component
 * longer than 15 bytes (which the kernel cuts) is not matched (no search
 * for the last '/': a loop over the name is too much for the verifier
 * inlined here). */
static __always_inline bool exec_names_target(const char *filename)
{
	__u32 zero = 0;
	struct exec_name *b = bpf_map_lookup_elem(&exec_name_buf, &zero);
	if (!b)
		return false;
	long n = bpf_probe_read_user_str(b->s, sizeof(b->s), filename);
	__u32 len = 0; /* the target's length */
	for (__u32 k = 0; k < 15; k++) {
		if (target_comm[k] == 0)
			break;
		len++;
	}
	if (len == 0 || n < 1 + len || n > sizeof(b->s))
		return false;
	__u32 off = n - 1 - len; /* where the last component starts, if it is the target */
	for (__u32 k = 0; k < 15; k++) {
		if (k >= len)
			break;
		if (b->s[(off + k) & (sizeof(b->s) - 1)] != target_comm[k])
			return false;
	}
	return off == 0 || b->s[(off - 1) & (sizeof(b->s) - 1)] == '/';
}

/* raw_sys_enter and raw_sys_exit have spares (bpf/spare.h): a thread
 * preempted inside one (7.2) made the kernel skip it for every other
 * thread's system call on that CPU. */

static __always_inline int sys_enter(struct pt_regs *regs, long id, const int access, const int copy)
{
	__u32 sys = sys_from_nr(id);
	if (!sys || sys == SYS_RENAME || !(raw_sys_mask & (1ULL << sys)))
		return 0;
	/* Untraced processes stop here, before any fd lookup. */
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct op *op = op_slot((__u32)pid_tgid, pid_tgid >> 32);
	if (!op && sys == SYS_EXECVE && filter_comm && !compat_call() &&
	    exec_names_target((const char *)(id == 322 ? regs->si : regs->di))) {
		op = op_slot_as((__u32)pid_tgid, pid_tgid >> 32, true);
		if (op)
			op->exec_comm = 1; /* until the call's exit (sys_exit) */
	}
	if (!op || compat_call() || !take_turn(SPARED_SYS_ENTER, copy, 0))
		return 0;
	/* regs is a typed tp_btf argument: direct loads, no helper calls.
	 * The switch only picks the arguments, so that op_begin_in is
	 * inlined once (a smaller program verifies faster at start-up). */
	long a0 = regs->di, a1 = regs->si, a2 = regs->dx, a3 = regs->r10, a4 = regs->r8;
	/* fds are unsigned int in the syscalls' prototypes: the kernel
	 * ignores the register's upper half, and so do we. */
	int fd = (int)a0;
	__s64 off = -1;
	__u64 count = 0;
	switch (sys) {
	case SYS_READ:
	case SYS_WRITE:
		count = a2;
		break;
	case SYS_PREAD64:
	case SYS_PWRITE64:
		off = a3;
		count = a2;
		break;
	case SYS_READV:
	case SYS_WRITEV:
		count = iov_total((void *)a1, a2);
		break;
	case SYS_PWRITEV2: /* (fd, iov, iovcnt, pos_l, pos_h, flags) */
		op->sys_flags = regs->r9; /* RWF_*: read by op_start (RWF_DSYNC, RWF_SYNC) */
		off = a3;
		count = iov_total((void *)a1, a2);
		break;
	case SYS_PREADV:
	case SYS_PWRITEV:
	case SYS_PREADV2:
		off = a3;
		count = iov_total((void *)a1, a2);
		break;
	case SYS_FSYNC:
	case SYS_FDATASYNC:
	case SYS_SYNCFS:
		off = 0;
		break;
	case SYS_SYNC_FILE_RANGE:
		off = a1;
		count = a2;
		op->sys_flags = a3;
		break;
	case SYS_SYNC:
		op_begin_in(op, sys, NULL, -1, 0, 0, access);
		return 0;
	case SYS_EXECVE: /* the binary is named at sched_process_exec (bpf/sched.c) */
		if (op_begin_in(op, sys, NULL, -1, 0, 0, access))
			exec_begun((__u32)pid_tgid, pid_tgid >> 32);
		return 0;
	case SYS_MSYNC: /* (addr, len, flags): the file mapped at addr (bpf/fault.c) */
	case SYS_MADVISE: /* (addr, len, advice) */
		map_call_begin(op, sys, a0, a1, a2);
		return 0;
	case SYS_FADVISE64: /* (fd, offset, len, advice) */
		off = a1;
		count = a2;
		if (op_begin_in(op, sys, fd_file(fd, access), fd, off, count, access))
			op->advice = a3;
		return 0;
	case SYS_IO_SUBMIT: /* (ctx, nr, iocbpp) */
		aio_submit_enter(op, a1, a2);
		return 0;
	case SYS_IO_GETEVENTS: /* (ctx, min_nr, nr, events, timeout): reported at exit */
		op->seq++;
		op->call_start_ns = bpf_ktime_get_ns();
		op->call_arg1 = a1;
		op->call_arg2 = op->seq;
		return 0;
	case SYS_IO_URING_ENTER: /* (fd, to_submit, min_complete, flags, ...) */
		uring_enter(op, a1, a2, a3);
		return 0;
	case SYS_READAHEAD: /* (fd, offset, count) */
		off = a1;
		count = a2;
		break;
	case SYS_SENDFILE: /* (out_fd, in_fd, loff_t *offset, count) */
		op->out_file = (__u64)fd_file(fd, access); /* named at exit if the call dirtied it */
		fd = (int)a1;
		off = user_off((void *)a2);
		count = a3;
		break;
	case SYS_COPY_FILE_RANGE: /* (fd_in, loff_t *off_in, fd_out, loff_t *off_out, len, flags) */
		op->out_file = (__u64)fd_file((int)a2, access);
		off = user_off((void *)a1);
		count = a4;
		break;
	case SYS_SPLICE: /* (fd_in, off_in*, fd_out, off_out*, len, flags): one side is a pipe */
		count = a4;
		/* The file side: fd_in unless it is a pipe (not a regular file). */
		struct file *in = fd_file(fd, access);
		if (in && op_begin_in(op, sys, in, fd, user_off((void *)a1), count, access))
			return 0;
		fd = (int)a2;
		off = user_off((void *)a3);
		break;
	default:
		return 0;
	}
	op_begin_in(op, sys, fd_file(fd, access), fd, off, count, access);
	return 0;
}

/* Two builds of one program; the loader keeps raw_sys_enter where the
 * kernel has bpf_rdonly_cast (6.2+) and renames raw_sys_enter_probe to it
 * elsewhere. */
SEC("tp_btf/sys_enter")
int BPF_PROG(raw_sys_enter, struct pt_regs *regs, long id)
{
	return sys_enter(regs, id, FILE_BTF, PRIMARY);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(raw_sys_enter_probe, struct pt_regs *regs, long id)
{
	return sys_enter(regs, id, FILE_PROBE, PRIMARY);
}

/* Where spares are needed the kernel has bpf_rdonly_cast (7.2): no probe
 * build of them. */
SEC("tp_btf/sys_enter")
int BPF_PROG(raw_sys_enter_spare, struct pt_regs *regs, long id)
{
	return sys_enter(regs, id, FILE_BTF, SPARE);
}

static __always_inline int sys_exit(struct pt_regs *regs, long ret, const int access, const int copy)
{
	__u32 sys = sys_from_nr(regs->orig_ax);
	if (!sys || !(raw_sys_mask & (1ULL << sys)))
		return 0;
	if (sys == SYS_RENAME) { /* any process's: a traced file's directory may be renamed by anyone */
		if (copy == PRIMARY)
			renamed(ret); /* no thread state to take turns on: not spared */
		return 0;
	}
	/* The exits that act without their entry's state (a 32-bit call's
	 * entry was not traced: compat_call). */
	if ((sys == SYS_IO_SUBMIT || sys == SYS_IO_GETEVENTS || sys == SYS_IO_URING_ENTER || sys == SYS_EXECVE) &&
	    compat_call())
		return 0;
	/* Every exit below needs the thread's state: an untraced thread stops
	 * here before taking turns (no spare_turns entry for it). io_getevents'
	 * gives a thread its state (aio_reap: op_slot), as its reap must be
	 * reported even by a thread that entered the call before the trace
	 * began (with op_of here, such reaps were lost while the spares were
	 * on: a reviewer's 16 of 16). */
	if (copy == SPARE || spares_on) {
		__u64 id = bpf_get_current_pid_tgid();
		struct op *st = sys == SYS_IO_GETEVENTS ? op_slot((__u32)id, id >> 32) : op_of((__u32)id);
		if (!st || !take_turn(SPARED_SYS_EXIT, copy, 0))
			return 0;
	}
	if (sys == SYS_IO_SUBMIT) { /* issue 13 (bpf/aio.c) */
		aio_submit_exit(regs, ret);
		return 0;
	}
	if (sys == SYS_IO_GETEVENTS) {
		aio_reap(regs, ret);
		return 0;
	}
	if (sys == SYS_IO_URING_ENTER) {
		uring_exit(ret);
		return 0;
	}
	if (sys == SYS_MSYNC || sys == SYS_MADVISE)
		map_call_exit(); /* bpf/fault.c */
	op_end_in(ret, access);
	if (sys == SYS_EXECVE) {
		__u64 id = bpf_get_current_pid_tgid();
		__u32 tid = (__u32)id, tgid = id >> 32;
		__u64 *w = slot_word(tid);
		__u32 own = w ? slot_field(*w, tid) : 0;
		if (ret != 0 && own && own <= MAX_SLOTS)
			exec_moving_del(tgid, own); /* a failed exec's */
		struct op *o = ret != 0 ? op_of(tid) : NULL;
		if (o)
			o->exec_comm = 0; /* failed: the task keeps its name */
		/* A new program starts with fresh thread state, as it did
		 * when sched_process_exec released the slot (exec_kept). */
		if (ret == 0)
			op_release((__u32)id);
	}
	return 0;
}

/* Two builds, as for sys_enter: raw_sys_exit_probe replaces raw_sys_exit
 * where the kernel has no bpf_rdonly_cast. */
SEC("tp_btf/sys_exit")
int BPF_PROG(raw_sys_exit, struct pt_regs *regs, long ret)
{
	return sys_exit(regs, ret, FILE_BTF, PRIMARY);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(raw_sys_exit_probe, struct pt_regs *regs, long ret)
{
	return sys_exit(regs, ret, FILE_PROBE, PRIMARY);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(raw_sys_exit_spare, struct pt_regs *regs, long ret)
{
	return sys_exit(regs, ret, FILE_BTF, SPARE);
}
