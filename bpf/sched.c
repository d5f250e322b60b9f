//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Scheduler hooks (tp_btf).
 * "iowait" (sched_switch): time a traced call spends off-CPU with
 *   in_iowait set (io_schedule: folio lock/uptodate waits, bio waits,
 *   balance_dirty_pages pauses) is added to op->blocked_ns. prev and next are
 *   args 1 and 2 in every version (5.18 appended prev_state).
 * "follow" (sched_process_fork / sched_process_exit / sched_process_exec):
 *   children of traced processes are traced; per-thread state is dropped when
 *   a thread exits or execs, and reset when a tid is given to a new thread.
 *   task_rename: the aggregates follow a process's comm (agg.h agg_renamed). */
#include "op.h"

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct op *op = op_of(prev->pid);
	if (op && op->active && BPF_CORE_READ_BITFIELD(prev, in_iowait)) {
		op_touch(op);
		op->sleep_start = bpf_ktime_get_ns();
	}
	if (op && op->uring_thread && !preempt)
		uring_switch_out(op, prev); /* issue 13 (bpf/uring.c) */
	op = op_of(next->pid);
	if (op && op->active && op->touched && op->sleep_start) {
		__u64 slept = bpf_ktime_get_ns() - op->sleep_start;
		op->blocked_ns += slept;
		op->sleep_start = 0;
		if (op->bdp_start) {
			/* A sleep inside balance_dirty_pages (fentry/kprobe mechanism). */
			op->throttle_pauses++;
			if (slept > op->max_pause_ns)
				op->max_pause_ns = slept;
		}
	}
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(tp_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	/* A new thread starts with a clean tid_slot field (its tid may have
	 * been marked untraced, or left a slot, in an earlier life). The
	 * child does not run yet: nobody else writes its field. */
	op_release(child->pid);
	__u32 ptgid = parent->tgid;
	if (!bpf_map_lookup_elem(&targets, &ptgid))
		return 0;
	__u32 ctgid = child->tgid;
	__u8 one = 1;
	if (bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY))
		count_event(CNT_TARGETS_FULL);
	return 0;
}

/* Before 5.16 de_thread's task was signal->group_exit_task. */
struct signal_struct___old {
	struct task_struct *group_exit_task;
} __attribute__((preserve_access_index));

/* exec_winner names in exec_moving the slot of the thread whose exec is
 * killing leader (signal->group_exec_task, set by de_thread), if that
 * thread has an open execve call. */
static __always_inline void exec_winner(struct task_struct *leader, __u32 tgid)
{
	struct signal_struct *sig = BPF_CORE_READ(leader, signal);
	struct task_struct *x;
	if (bpf_core_field_exists(sig->group_exec_task))
		x = BPF_CORE_READ(sig, group_exec_task);
	else
		x = BPF_CORE_READ((struct signal_struct___old *)sig, group_exit_task);
	if (!x || x == leader)
		return;
	__u32 xtid = BPF_CORE_READ(x, pid);
	__u64 *w = slot_word(xtid);
	if (!w)
		return;
	__u32 slot = slot_field(*w, xtid);
	if (slot && slot <= MAX_SLOTS && exec_call(slot, tgid))
		exec_moving_set(tgid, slot);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(tp_sched_process_exit, struct task_struct *task)
{
	/* A fault still open when its thread exits (killed during it) is
	 * recorded, not dropped with the slot (bpf/fault.c). The exiting
	 * thread is the current task. */
	struct op *op = op_of(task->pid);
	if (op)
		fault_unended(op);
	__u32 tgid = task->tgid;
	__u64 *w = slot_word(task->pid);
	__u32 own = w ? slot_field(*w, task->pid) : 0;
	/* A thread killed in its execve (another thread's won). Only a real
	 * slot: a thread without one (0: the Go runtime's threads, killed by
	 * the same exec on one vCPU after the leader) deleted the winner's
	 * entry (27 of 40 racing execs on 6.12). */
	if (own && own <= MAX_SLOTS)
		exec_moving_del(tgid, own);
	op_release(task->pid);
	/* A leader killed by another thread's exec (de_thread): that thread
	 * takes this tid next, inside its execve call (exec_moving). */
	if (task->pid == tgid)
		exec_winner(task, tgid);
	/* The process's last thread (do_exit has dropped signal->live): its
	 * pid may be reused by a process nobody asked to trace. */
	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

/* exec_kept names the binary an execve call loaded (its record's file)
 * and keeps the call's state under the thread's tid, which exec from a
 * non-leader thread changes to the leader's (old_pid: the tid it had).
 * The call ends at its sys_exit, which then releases the slot. Returns
 * false when the thread has no execve call open (its state is reset). */
static __always_inline bool exec_kept(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct op *op = op_of(old_pid);
	if (!op || !op->active || op->sys != SYS_EXECVE)
		return false;
	__u32 tid = p->pid, tgid = p->tgid;
	if (tid != (__u32)old_pid) {
		__u64 *from = slot_word(old_pid);
		__u64 *to = slot_word(tid);
		if (!from || !to)
			return false;
		__u32 slot = slot_field(*from, old_pid);
		exec_moving_del(tgid, 0);
		/* The leader's field: released at its exit (else its exit's
		 * run was skipped: released here); the slot moves to it. */
		op_release(tid);
		slot_set(to, tid, slot_field(*to, tid), slot);
		slot_set(from, old_pid, slot, 0);
		/* op->tid stays the caller's (its op_id's): the record says
		 * which thread called execve; the new program runs as tid. */
	}
	struct file *file = BPF_CORE_READ(bprm, file);
	struct inode *inode = BPF_CORE_READ(file, f_inode);
	__u64 ino = BPF_CORE_READ(inode, i_ino);
	__u32 dev = BPF_CORE_READ(inode, i_sb, s_dev);
	/* The page cache counted the first regular file read (bpf/filemap.c):
	 * a script (#!) is read before its interpreter, the program loaded
	 * and named here. Its pages are not the interpreter's: not itemized
	 * (the bios of both stay the call's). */
	/* No file adopted (the classic add tracepoint, before 5.16, names no
	 * inode's mode): the pages counted are of every file read (header,
	 * interpreter, lookup blocks), not itemized either. */
	if (op->ino != ino || op->dev != dev) {
		op->pages_added = 0;
		op->pages_in_range = 0;
		op->nr_ranges = 0;
		op->ranges_lost = 0;
		op->nr_ra = 0;
	}
	op->file = (__u64)file;
	op->ino = ino;
	op->dev = dev;
	op->fs_magic = BPF_CORE_READ(inode, i_sb, s_magic);
	op->f_flags = BPF_CORE_READ(file, f_flags);
	return true;
}

/* exec from a non-leader thread takes the leader's tid (de_thread,
 * exchange_tids): the thread's old tid (old_pid) never sees
 * sched_process_exit, so its field is cleared here. Both fields are reset:
 * comm changes at exec, which matters under --comm. A traced execve call
 * keeps its state until its exit (exec_kept). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(tp_sched_process_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	if (!exec_kept(p, old_pid, bprm)) {
		op_release(old_pid);
		if (p->pid != old_pid)
			op_release(p->pid);
	}
	agg_exec(p->tgid); /* agg.h */
	return 0;
}

/* prctl(PR_SET_NAME), a write to /proc/PID/comm, and exec's (every kernel:
 * __set_task_comm, before the change). */
SEC("tp_btf/task_rename")
int BPF_PROG(tp_task_rename, struct task_struct *task, const char *comm)
{
	agg_renamed(task, comm); /* agg.h */
	return 0;
}
