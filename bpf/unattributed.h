/* SPDX-License-Identifier: GPL-2.0 */
/* Why a traced task queued a bio outside any traced call (block.c). The
 * cause goes in bits 8-11 of the bio owner's flags, a syscall number in
 * bits 16-27 (enum own_flag, events.h); userspace names them. */
#ifndef IOPATH_UNATTRIBUTED_H
#define IOPATH_UNATTRIBUTED_H

#include "events.h" /* enum unattributed_cause, OWN_CAUSE_SHIFT */

static __always_inline __u32 unattributed_cause(struct bio *bio)
{
#ifdef IOPATH_COMPAT
	/* 5.10: no bpf_get_current_task_btf (5.11), no bpf_task_pt_regs
	 * (5.15): exec and metadata only, the rest stays unknown. */
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	if (BPF_CORE_READ_BITFIELD_PROBED(t, in_execve))
		return CAUSE_EXEC << OWN_CAUSE_SHIFT;
	if (BPF_CORE_READ(bio, bi_opf) & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
		return CAUSE_META << OWN_CAUSE_SHIFT;
	return CAUSE_UNKNOWN;
#else
	struct task_struct *t = bpf_get_current_task_btf();
	if (BPF_CORE_READ_BITFIELD(t, in_execve))
		return CAUSE_EXEC << OWN_CAUSE_SHIFT;
	if (BPF_CORE_READ(bio, bi_opf) & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
		return CAUSE_META << OWN_CAUSE_SHIFT;
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
		return (CAUSE_SYSCALL << OWN_CAUSE_SHIFT) | ((__u32)nr << OWN_SYSNR_SHIFT);
	return CAUSE_FAULT << OWN_CAUSE_SHIFT;
#endif
}

#endif /* IOPATH_UNATTRIBUTED_H */
