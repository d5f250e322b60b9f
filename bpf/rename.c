//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Hook "rename": counts completed renames (rename_gen), so that a thread's
 * next record walks its file's path again after a directory above the file
 * was renamed: the path key of op_end (dentry, parent, grandparent, name)
 * does not change when an ancestor's name does.
 * Mechanisms, best first: fexit/kretprobe vfs_rename (every VFS rename,
 * RENAME_EXCHANGE, overlayfs and nfsd included), then the rename syscalls
 * at raw_syscalls:sys_exit (syscalls.c). Counted after the rename: a path
 * walked while it ran is walked again. */
#include "op.h"

static __always_inline void renamed(long ret)
{
	if (ret == 0)
		__sync_fetch_and_add(&rename_gen, 1);
}

SEC("fexit/vfs_rename")
int BPF_PROG(fexit_vfs_rename, struct renamedata *rd, int ret)
{
	renamed(ret);
	return 0;
}

SEC("kretprobe/vfs_rename")
int BPF_KRETPROBE(kretprobe_vfs_rename, int ret)
{
	renamed(ret);
	return 0;
}
