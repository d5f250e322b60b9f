/* SPDX-License-Identifier: GPL-2.0 */
/* Why a traced task queued a bio outside any traced call (block.c). The
 * cause goes in bits 8-11 of the bio owner's flags, a syscall number in
 * bits 16-27; userspace names them (tracer/unattributed.go). */
#ifndef IOPATH_UNATTRIBUTED_H
#define IOPATH_UNATTRIBUTED_H

#include "common.h"

#define CAUSE_EXEC    1 /* during execve (current->in_execve): the binary and its interpreter */
#define CAUSE_META    2 /* REQ_META: filesystem metadata (inode tables, directories, journal reads) */
#define CAUSE_SYSCALL 3 /* inside a system call iopath does not trace (its number follows) */
#define CAUSE_FAULT   4 /* not in a system call: a page fault (mmap'ed file, executable pages) */

static __always_inline __u32 unattributed_cause(struct bio *bio)
{
	struct task_struct *t = bpf_get_current_task_btf();
	if (BPF_CORE_READ_BITFIELD(t, in_execve))
		return CAUSE_EXEC << 8;
	if (BPF_CORE_READ(bio, bi_opf) & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
		return CAUSE_META << 8;
	/* The task's user registers: after a syscall instruction (0f 05 on
	 * x86-64) the task is in that syscall (orig_ax is its number); else it
	 * entered the kernel by an exception, a page fault for file IO. */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	unsigned long ip = BPF_CORE_READ(regs, ip);
	long nr = BPF_CORE_READ(regs, orig_ax);
	unsigned char ins[2] = {};
	if (bpf_probe_read_user(ins, sizeof(ins), (void *)(ip - 2)))
		return 0; /* unknown */
	if (ins[0] == 0x0f && ins[1] == 0x05 && nr >= 0 && nr < 4096)
		return (CAUSE_SYSCALL << 8) | ((__u32)nr << 16);
	return CAUSE_FAULT << 8;
}

#endif /* IOPATH_UNATTRIBUTED_H */
