//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* iopath's BPF object: one compilation unit so all programs share maps.
 * Each hook lives in its own file; see docs/hooks.md for the mechanisms. */
#include "common.h"
#include "op.h"
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

/* Keep these types in BTF so bpf2go emits Go declarations for them. */
const enum counter *unused_counter __attribute__((unused));
const enum op_sys *unused_op_sys __attribute__((unused));
const enum ev_type *unused_ev_type __attribute__((unused));
const struct dirty_gone_ev *unused_dirty_gone_ev __attribute__((unused));
const struct rq_done_ev *unused_rq_done_ev __attribute__((unused));
const struct wb_start_ev *unused_wb_start_ev __attribute__((unused));
const struct wb_inode_ev *unused_wb_inode_ev __attribute__((unused));
const struct bio_split_ev *unused_bio_split_ev __attribute__((unused));
const struct flush_done_ev *unused_flush_done_ev __attribute__((unused));
