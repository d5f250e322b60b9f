//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* iopath's BPF object: one compilation unit so all programs share maps.
 * Each hook lives in its own file; see docs/hooks.md for the mechanisms. */
#include "op.h"
#include "rename.c"
#include "vfs_read.c"
#include "vfs_write.c"
#include "fault.c" /* before syscalls.c: msync finds its file with vma_file */
#include "aio.c" /* before syscalls.c, filemap.c, readahead.c: their hooks mark libaio requests */
#include "uring.c" /* after aio.c; before syscalls.c and sched.c, which call it */
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
/* The fault aggregate (bpf/fault.c), for bpf2go -type. */
const struct fault_key *unused_fault_key __attribute__((unused));
const struct fault_stat *unused_fault_stat __attribute__((unused));
