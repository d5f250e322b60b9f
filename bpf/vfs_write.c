//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Hook "vfs_write": write(2) and pwrite64(2) calls (mechanisms as vfs_read).
 * Hook "writev": writev/pwritev/pwritev2 (tracepoints).
 * Hook "fsync": fsync, fdatasync, sync_file_range, sync, syncfs (tracepoints).
 * Exits use tp_exit_op from vfs_read.c, attached to each sys_exit_*. */
#include "op.h"

SEC("fentry/vfs_write")
int BPF_PROG(fentry_vfs_write, struct file *file, const char *buf, size_t count, loff_t *pos)
{
	vfs_enter(true, file, count, pos, FILE_BTF);
	return 0;
}

SEC("fexit/vfs_write")
int BPF_PROG(fexit_vfs_write, struct file *file, const char *buf, size_t count, loff_t *pos, ssize_t ret)
{
	op_end(ret);
	return 0;
}

SEC("kprobe/vfs_write")
int BPF_KPROBE(kprobe_vfs_write, struct file *file, const char *buf, size_t count, loff_t *pos)
{
	vfs_enter(true, file, count, pos, FILE_PROBE);
	return 0;
}

SEC("kretprobe/vfs_write")
int BPF_KRETPROBE(kretprobe_vfs_write, ssize_t ret)
{
	op_end(ret);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_write")
int tp_enter_write(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_WRITE, fd_file(fd, FILE_PROBE), fd, -1, ctx->args[2], FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_pwrite64")
int tp_enter_pwrite64(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_PWRITE64, fd_file(fd, FILE_PROBE), fd, ctx->args[3], ctx->args[2], FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_writev")
int tp_enter_writev(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_WRITEV, fd_file(fd, FILE_PROBE), fd, -1, iov_total((void *)ctx->args[1], ctx->args[2]), FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_pwritev")
int tp_enter_pwritev(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_PWRITEV, fd_file(fd, FILE_PROBE), fd, ctx->args[3], iov_total((void *)ctx->args[1], ctx->args[2]), FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_pwritev2")
int tp_enter_pwritev2(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_PWRITEV2, fd_file(fd, FILE_PROBE), fd, ctx->args[3], iov_total((void *)ctx->args[1], ctx->args[2]), FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_fsync")
int tp_enter_fsync(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_FSYNC, fd_file(fd, FILE_PROBE), fd, 0, 0, FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_fdatasync")
int tp_enter_fdatasync(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_FDATASYNC, fd_file(fd, FILE_PROBE), fd, 0, 0, FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_sync_file_range")
int tp_enter_sync_file_range(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	struct op *op = op_begin(SYS_SYNC_FILE_RANGE, fd_file(fd, FILE_PROBE), fd, ctx->args[1], ctx->args[2], FILE_PROBE);
	if (op)
		op->sys_flags = ctx->args[3];
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_sync")
int tp_enter_sync(struct trace_event_raw_sys_enter *ctx)
{
	op_begin(SYS_SYNC, NULL, -1, 0, 0, FILE_PROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_syncfs")
int tp_enter_syncfs(struct trace_event_raw_sys_enter *ctx)
{
	int fd = ctx->args[0];
	op_begin(SYS_SYNCFS, fd_file(fd, FILE_PROBE), fd, 0, 0, FILE_PROBE);
	return 0;
}
