//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Hook "vfs_read": read(2) and pread64(2) calls.
 * Mechanisms, best first: fentry/fexit vfs_read, kprobe/kretprobe vfs_read,
 * syscalls:sys_{enter,exit}_{read,pread64} tracepoints. The loader keeps one.
 * Hook "readv": readv/preadv/preadv2 never reach vfs_read (fs/read_write.c:
 * do_readv -> vfs_readv), so they always use their syscall tracepoints. */
#include "op.h"

SEC("fentry/vfs_read")
int BPF_PROG(fentry_vfs_read, struct file *file, char *buf, size_t count, loff_t *pos)
{
	vfs_enter(false, file, count, pos, FILE_BTF);
	return 0;
}

SEC("fexit/vfs_read")
int BPF_PROG(fexit_vfs_read, struct file *file, char *buf, size_t count, loff_t *pos, ssize_t ret)
{
	op_end(ret);
	return 0;
}

SEC("kprobe/vfs_read")
int BPF_KPROBE(kprobe_vfs_read, struct file *file, char *buf, size_t count, loff_t *pos)
{
	vfs_enter(false, file, count, pos, FILE_PROBE);
	return 0;
}

SEC("kretprobe/vfs_read")
int BPF_KRETPROBE(kretprobe_vfs_read, ssize_t ret)
{
	op_end(ret);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_read")
int tp_enter_read(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_READ, fd_file(fd, FILE_PROBE), fd, -1, ctx->args[2], FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_pread64")
int tp_enter_pread64(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_PREAD64, fd_file(fd, FILE_PROBE), fd, ctx->args[3], ctx->args[2], FILE_PROBE);
	return 0;
}

/* One exit program serves every read and write syscall tracepoint: the
 * call's identity is already in the per-thread state. */
SEC("tracepoint/syscalls/sys_exit_read")
int tp_exit_op(struct trace_event_raw_sys_exit *ctx)
{
	op_end(ctx->ret);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_readv")
int tp_enter_readv(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_READV, fd_file(fd, FILE_PROBE), fd, -1, iov_total((void *)ctx->args[1], ctx->args[2]), FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_preadv")
int tp_enter_preadv(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_PREADV, fd_file(fd, FILE_PROBE), fd, ctx->args[3], iov_total((void *)ctx->args[1], ctx->args[2]), FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_preadv2")
int tp_enter_preadv2(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_PREADV2, fd_file(fd, FILE_PROBE), fd, ctx->args[3], iov_total((void *)ctx->args[1], ctx->args[2]), FILE_PROBE);
	return 0;
}
