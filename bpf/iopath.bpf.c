//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* iopath's BPF object: one compilation unit so all programs share maps.
 * Each hook lives in its own file; see docs/hooks.md for the mechanisms. */
#include "op.h"
#include "rename.c"
#include "vfs_read.c"
#include "vfs_write.c"
#include "syscalls.c"
#include "filemap.c"
#include "readahead.c"
#include "block.c"
#include "flush.c"
#include "sched.c"
#include "writeback.c"

char LICENSE[] SEC("license") = "GPL";

/* Keeps the contract's types in BTF for bpf2go -type (events.h). */
const struct contract *unused_contract __attribute__((unused));
