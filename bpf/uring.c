//go:build ignore

/* SPDX-License-Identifier: GPL-2.0 */
/* Hook "io_uring" (issue 13): io_uring requests from the io_uring
 * tracepoints (tp_btf, shapes of 6.4+: io_uring_submit_req(req),
 * io_uring_queue_async_work(req, rw), io_uring_complete(ctx, req, cqe),
 * io_uring_file_get(req, fd)), for every thread that runs a request:
 *
 *  - inline: io_uring_submit_req fires in the submitting thread (inside
 *    io_uring_enter, or in the SQPOLL thread) right before the request is
 *    issued there; what the thread's op collects from then on (page-cache
 *    inserts, readahead, bios, dirtied pages) is the request's, until the
 *    next request, its punt to io-wq, its completion, task work or the
 *    io_uring_enter's exit closes it (EV_OP, sys SYS_URING_*, req_id).
 *  - io-wq workers and the SQPOLL thread (PF_IO_WORKER threads of the
 *    ring's owner, iou-wrk-* / iou-sqp-*) keep an op active from their fork
 *    on: an item's IO collects there and is named by the request it turns
 *    out to be: io_uring_file_get (a request's first issue in the worker),
 *    iomap_dio_rw_begin (the kiocb is the request: struct io_rw's kiocb is
 *    the first member of struct io_kiocb), or io_uring_complete in that
 *    thread (a worker completes what it ran synchronously, e.g. a buffered
 *    write on ext4). So the IO is charged to the owner (the op's pid is the
 *    tgid) and to its request.
 *
 * uring_reqs (request pointer -> its op_id and SQE fields) lives from
 * submission to completion; EV_URING_SUBMIT, EV_URING_PUNT and
 * EV_URING_COMPLETE (with the number of EV_OPs to wait for) go to
 * userspace. A request's completion never uses `current` to find its
 * request: the request pointer does. */
#include "op.h"

#define IORING_OP_READV 1
#define IORING_OP_WRITEV 2
#define IORING_OP_READ_FIXED 4
#define IORING_OP_WRITE_FIXED 5
#define IORING_OP_READ 22
#define IORING_OP_WRITE 23
#define IOSQE_FIXED_FILE 1
#define PF_IO_WORKER 0x10

struct uring_req {
	__u64 op_id;
	__s64 offset;
	__u64 len;
	__s32 fd;
	__u32 sys;  /* SYS_URING_READ / SYS_URING_WRITE, 0 for other opcodes */
	__u32 segs; /* EV_OPs named after it so far */
	__u32 pid;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct io_kiocb * */
	__type(value, struct uring_req);
} uring_reqs SEC(".maps");

static __always_inline __u32 uring_sys(__u32 opcode)
{
	switch (opcode) {
	case IORING_OP_READV:
	case IORING_OP_READ_FIXED:
	case IORING_OP_READ:
		return SYS_URING_READ;
	case IORING_OP_WRITEV:
	case IORING_OP_WRITE_FIXED:
	case IORING_OP_WRITE:
		return SYS_URING_WRITE;
	}
	return 0;
}

static __always_inline bool uring_seg(struct op *op)
{
	return op->active && (op->sys == SYS_URING_READ || op->sys == SYS_URING_WRITE);
}

/* uring_lazy starts a PF_IO_WORKER thread's op for IO not named yet. */
static __always_inline void uring_lazy(struct op *op, __u32 tgid, __u32 tid)
{
	op->type = EV_OP;
	op->sys = SYS_URING_READ;
	op->pid = tgid;
	op->tid = tid;
	op->seq++;
	op->op_id = ((__u64)tid << 32) | op->seq;
	op->start_ns = bpf_ktime_get_ns();
	op->fd = -1;
	op->offset = 0;
	op->count = 0;
	op->ino = 0;
	op->dev = 0;
	op->f_flags = 0;
	op->file = 0;
	op->fs_magic = 0;
	op->sys_flags = 0;
	op->req_id = 0;
	op->uring_req = 0;
	op->touched = 0;
	op->uring_thread = 1;
	op->active = 1;
}

/* uring_name makes op the segment of request req (counted in its segs). */
static __always_inline struct uring_req *uring_name(struct op *op, __u64 req)
{
	struct uring_req *v = bpf_map_lookup_elem(&uring_reqs, &req);
	if (!v)
		return NULL;
	op->uring_req = req;
	op->req_id = v->op_id;
	__sync_fetch_and_add(&v->segs, 1);
	return v;
}

/* uring_is: op's segment is request v, at address key. The address alone
 * is not enough: io_uring reuses a completed request's memory for the next
 * one at once (its request cache), so an io-wq worker whose segment still
 * names a direct read that completed elsewhere can run the next request at
 * the same address (seen on 6.18 with IOSQE_ASYNC: its bio charged to the
 * completed one). */
static __always_inline bool uring_is(struct op *op, __u64 key, struct uring_req *v)
{
	return v && op->uring_req == key && op->req_id == v->op_id;
}

/* uring_set_file gives a segment its file and the request's range. */
static __always_inline void uring_set_file(struct op *op, struct file *f, struct uring_req *v)
{
	struct inode *inode = BPF_CORE_READ(f, f_inode);
	op->file = (__u64)f;
	op->fd = v->fd;
	op->offset = v->offset < 0 ? 0 : v->offset;
	op->count = v->len;
	op->ino = BPF_CORE_READ(inode, i_ino);
	op->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	op->fs_magic = BPF_CORE_READ(inode, i_sb, s_magic);
	op->f_flags = BPF_CORE_READ(f, f_flags);
}

/* uring_file fills a segment's file from the request once its issue
 * assigned it (req->file), when the segment did not find it at its start. */
static __always_inline void uring_file(struct op *op, struct uring_req *v)
{
	if (!v)
		return;
	if (v->sys)
		op->sys = v->sys;
	if (op->file)
		return;
	/* The range first: the pages the segment inserts from now on are
	 * counted against it (io_uring_file_get fires before req->file is set). */
	op->fd = v->fd;
	op->offset = v->offset < 0 ? 0 : v->offset;
	op->count = v->len;
	struct io_kiocb *req = (struct io_kiocb *)op->uring_req;
	struct file *f = BPF_CORE_READ(req, file);
	if (f)
		uring_set_file(op, f, v);
}

/* The registered-file table (IORING_REGISTER_FILES) in two shapes, told
 * apart by CO-RE: 6.13+ has ctx->file_table.data.nodes[i]->file_ptr (the
 * running kernel's vmlinux.h); 5.10 to 6.12 ctx->file_table.files[i].file_ptr
 * with ctx->nr_user_files entries (flavors below). file_ptr's low bits are
 * flags (FFS_*: at most 3 of them, 5.10). */
struct io_fixed_file___files {
	unsigned long file_ptr;
} __attribute__((preserve_access_index));

struct io_file_table___files {
	struct io_fixed_file___files *files;
} __attribute__((preserve_access_index));

struct io_ring_ctx___files {
	struct io_file_table___files file_table;
	unsigned int nr_user_files;
} __attribute__((preserve_access_index));

#define URING_FFS_MASK (~7UL)

/* uring_fixed_file is the file at index idx of req's ring's registered
 * files (an IOSQE_FIXED_FILE request's sqe->fd, in req->cqe.fd), NULL if
 * out of range. Read at submission: the file is assigned to req->file only
 * when it is issued (io_assign_file), and no event names it then. */
static __always_inline struct file *uring_fixed_file(struct io_kiocb *req, __u32 idx)
{
	struct io_ring_ctx *ctx = BPF_CORE_READ(req, ctx);
	unsigned long ptr = 0;
	if (bpf_core_field_exists(ctx->file_table.data)) {
		if (idx >= BPF_CORE_READ(ctx, file_table.data.nr))
			return NULL;
		struct io_rsrc_node **nodes = BPF_CORE_READ(ctx, file_table.data.nodes);
		struct io_rsrc_node *node = NULL;
		if (!nodes || bpf_probe_read_kernel(&node, sizeof(node), &nodes[idx]) || !node)
			return NULL;
		ptr = BPF_CORE_READ(node, file_ptr);
	} else {
		struct io_ring_ctx___files *old = (void *)ctx;
		if (idx >= BPF_CORE_READ(old, nr_user_files))
			return NULL;
		struct io_fixed_file___files *files = BPF_CORE_READ(old, file_table.files);
		if (!files || bpf_probe_read_kernel(&ptr, sizeof(ptr), &files[idx].file_ptr))
			return NULL;
	}
	return (struct file *)(ptr & URING_FFS_MASK);
}

/* uring_req_file is the file req will run on: its registered file, or the
 * submitting task's fd. */
static __always_inline struct file *uring_req_file(struct io_kiocb *req, struct uring_req *v)
{
	if (BPF_CORE_READ(req, flags) & IOSQE_FIXED_FILE)
		return uring_fixed_file(req, (__u32)v->fd);
	return fd_file(v->fd, FILE_PROBE);
}

/* uring_close sends the thread's running segment (if it is one and is
 * named), then, in a PF_IO_WORKER thread, starts a new unnamed one. */
static __always_inline void uring_close(struct op *op)
{
	if (!uring_seg(op))
		return;
	if (op->uring_req) {
		struct uring_req *v = bpf_map_lookup_elem(&uring_reqs, &op->uring_req);
		uring_file(op, v && v->op_id == op->req_id ? v : NULL); /* not a new request at its address */
		op->active = 0;
		op->ret = op->count;
		op_stream(op);
	} else if (op->uring_thread) {
		return; /* nothing named: keep collecting */
	}
	op->active = 0;
	if (op->uring_thread)
		uring_lazy(op, op->pid, op->tid);
}

/* uring_begin starts req's inline segment in the submitting thread. */
static __always_inline void uring_begin(struct op *op, struct io_kiocb *req, struct uring_req *v)
{
	if (op->uring_thread) {
		/* The SQPOLL thread: its unnamed op becomes the request's. */
		if (op->uring_req || op->touched)
			uring_close(op);
		uring_name(op, (__u64)req);
		uring_file(op, v);
		if (!op->file) {
			struct file *f = uring_req_file(req, v);
			if (f)
				uring_set_file(op, f, v);
		}
		return;
	}
	if (!v->sys)
		return;
	/* op_begin_in numbers the op seq + 1: the request's own op_id. */
	op->seq = (__u32)v->op_id - 1;
	if (!op_begin_in(op, v->sys, uring_req_file(req, v), v->fd, v->offset, v->len, FILE_PROBE))
		return;
	op->uring_req = 0;
	op->uring_thread = 0;
	uring_name(op, (__u64)req);
}

/* uring_sq_owner is the thread that set up an SQPOLL ring, from the
 * SQPOLL thread's name: io_sq_thread names itself "iou-sqp-<sq_data's
 * task_pid>" (5.12+) before it resets task_pid to its own pid (for
 * fdinfo), so the name is where the owner's tid stays; 0 if it is not
 * that shape. */
static __always_inline __u32 uring_sq_owner(void)
{
	char c[16];
	__u32 n = 0;
	if (bpf_get_current_comm(c, sizeof(c)) || c[0] != 'i' || c[1] != 'o' || c[2] != 'u' || c[3] != '-' ||
	    c[4] != 's' || c[5] != 'q' || c[6] != 'p' || c[7] != '-')
		return 0;
#pragma unroll
	for (int i = 8; i < 16; i++) {
		if (c[i] < '0' || c[i] > '9')
			break;
		n = n * 10 + (c[i] - '0');
	}
	return n;
}

static __always_inline int uring_submitted(struct io_kiocb *req)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct op *op = op_slot(tid, tgid);
	if (!op)
		return 0;
	uring_close(op); /* the request before it in this thread */
	struct io_rw *rw = (struct io_rw *)req;
	struct uring_req v = {.pid = tgid};
	__u32 opcode = BPF_CORE_READ(req, opcode);
	v.sys = uring_sys(opcode);
	v.fd = BPF_CORE_READ(req, cqe.fd);
	v.offset = BPF_CORE_READ(rw, kiocb.ki_pos);
	v.len = BPF_CORE_READ(rw, len);
	if (opcode == IORING_OP_READV || opcode == IORING_OP_WRITEV)
		v.len = iov_total((const struct iovec *)BPF_CORE_READ(rw, addr), v.len);
	op->seq++;
	v.op_id = ((__u64)tid << 32) | op->seq;
	__u64 key = (__u64)req;
	if (bpf_map_update_elem(&uring_reqs, &key, &v, BPF_ANY)) {
		count_event(CNT_URING_FULL);
		return 0;
	}
	struct uring_submit_ev *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_event(CNT_RINGBUF_LOST);
	} else {
		ev->type = EV_URING_SUBMIT;
		ev->pid = tgid;
		ev->tid = tid;
		ev->opcode = opcode;
		ev->req = key;
		ev->ctx = (__u64)BPF_CORE_READ(req, ctx);
		ev->user_data = BPF_CORE_READ(req, cqe.user_data);
		ev->op_id = v.op_id;
		ev->submit_op_id = op->uring_call;
		ev->ts = bpf_ktime_get_ns();
		ev->offset = v.offset;
		ev->len = v.len;
		ev->fd = v.fd;
		ev->sqe_flags = BPF_CORE_READ(req, flags) & 0xff;
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();
		ev->sq_thread = (BPF_CORE_READ(task, flags) & PF_IO_WORKER) != 0;
		ev->owner_tid = tid;
		if (ev->sq_thread) {
			/* The SQPOLL thread submits for the ring's owner: charge
			 * the owner's thread and name. */
			ev->owner_tid = uring_sq_owner();
			BPF_CORE_READ_STR_INTO(&ev->comm, task, group_leader, comm);
		} else {
			bpf_get_current_comm(ev->comm, sizeof(ev->comm));
		}
		bpf_ringbuf_submit(ev, aio_wakeup());
	}
	struct uring_req *pv = bpf_map_lookup_elem(&uring_reqs, &key);
	if (pv)
		uring_begin(op, req, pv);
	return 0;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(uring_submit_req, struct io_kiocb *req)
{
	return uring_submitted(req);
}

/* Before ~6.4 the event was io_uring_submit_sqe(req, force_nonblock)
 * (5.15 to 6.3: the request is its first argument; probed by shape). */
SEC("tp_btf/io_uring_submit_sqe")
int BPF_PROG(uring_submit_sqe, struct io_kiocb *req)
{
	return uring_submitted(req);
}

SEC("tp_btf/io_uring_queue_async_work")
int BPF_PROG(uring_queue_async_work, struct io_kiocb *req, int rw)
{
	__u64 key = (__u64)req;
	struct uring_req *v = bpf_map_lookup_elem(&uring_reqs, &key);
	if (!v)
		return 0;
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (op && uring_seg(op) && uring_is(op, key, v))
		uring_close(op); /* its inline attempt is over */
	struct uring_punt_ev *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_event(CNT_RINGBUF_LOST);
		return 0;
	}
	ev->type = EV_URING_PUNT;
	ev->pid = v->pid;
	ev->req = key;
	ev->op_id = v->op_id;
	ev->ts = bpf_ktime_get_ns();
	ev->hashed = rw != 0;
	ev->tid = (__u32)bpf_get_current_pid_tgid();
	bpf_ringbuf_submit(ev, aio_wakeup());
	return 0;
}

/* uring_worker_names: in a PF_IO_WORKER thread, the request req is being
 * run: its unnamed op is the request's (a named one for another request is
 * sent first). */
static __always_inline void uring_worker_names(__u64 req)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op || !op->uring_thread || !uring_seg(op) || uring_is(op, req, bpf_map_lookup_elem(&uring_reqs, &req)))
		return;
	if (op->uring_req) {
		uring_close(op);
	} else if (op->touched && op->bios_queued) {
		/* Both naming events (io_uring_file_get, iomap_dio_rw_begin)
		 * come before the request's IO: bios already in the unnamed
		 * segment are an earlier item's that no event named (a
		 * registered file's request on a block device, or buffered):
		 * sent unnamed (counted unattributed, cause io_uring_worker),
		 * not given to this request (a breaker's raw-device run: 999
		 * of 1000 such bios in the next named request). */
		op->active = 0;
		op->ret = 0;
		op_stream(op);
		uring_lazy(op, op->pid, op->tid);
	}
	uring_file(op, uring_name(op, req));
}

static __always_inline int file_get(struct io_kiocb *req, const int copy)
{
	__u64 key = (__u64)req;
	if (bpf_map_lookup_elem(&uring_reqs, &key) && take_turn(SPARED_URING_FILE, copy, key))
		uring_worker_names(key);
	return 0;
}

SEC("tp_btf/io_uring_file_get")
int BPF_PROG(uring_file_get, struct io_kiocb *req, int fd)
{
	return file_get(req, PRIMARY);
}

/* Its spares (bpf/spare.h): 7.2 skipped it for io-wq workers (a request
 * then unnamed in its worker: its bios unattributed). */
SEC("tp_btf/io_uring_file_get")
int BPF_PROG(uring_file_get_spare, struct io_kiocb *req, int fd)
{
	return file_get(req, SPARE);
}

SEC("tp_btf/io_uring_file_get")
int BPF_PROG(uring_file_get_spare2, struct io_kiocb *req, int fd)
{
	return file_get(req, SPARE2);
}

/* Direct IO's begin: the kiocb is the request (io_rw's first member).
 * Its file is the kiocb's: taken now, since the request may complete, and
 * leave uring_reqs, before the worker's segment closes (then uring_file
 * finds nothing, and a segment without its file's O_DIRECT looks
 * buffered). */
/* uring_issued_inline starts req's inline segment where its direct IO
 * begins in a thread that is not an io thread, if that thread's running
 * segment is another's: a request issued after its submission there, not
 * right at it. IOSQE_IO_LINK: a chain's head is issued after its last
 * member's submission (io_submit_sqe queues the head then), and each
 * member from task work once the one before it completed. Only when no
 * call other than a segment is running: a segment's op_id is fresh, its
 * req_id the request's. */
static __always_inline void uring_issued_inline(struct op *op, struct kiocb *iocb, struct uring_req *v, __u64 key)
{
	if (!v->sys || (op->active && !uring_seg(op)) || (uring_seg(op) && uring_is(op, key, v)))
		return;
	if (uring_seg(op))
		uring_close(op);
	if (!op_begin_in(op, v->sys, BPF_CORE_READ(iocb, ki_filp), v->fd, v->offset, v->len, FILE_PROBE))
		return;
	op->uring_req = 0;
	op->uring_thread = 0;
	uring_name(op, key);
}

static __always_inline int uring_dio(struct kiocb *iocb, const int copy);

SEC("tp_btf/iomap_dio_rw_begin")
int BPF_PROG(uring_dio_begin, struct kiocb *iocb)
{
	return uring_dio(iocb, PRIMARY);
}

/* Its spare (bpf/spare.h). */
SEC("tp_btf/iomap_dio_rw_begin")
int BPF_PROG(uring_dio_begin_spare, struct kiocb *iocb)
{
	return uring_dio(iocb, SPARE);
}

SEC("tp_btf/iomap_dio_rw_begin")
int BPF_PROG(uring_dio_begin_spare2, struct kiocb *iocb)
{
	return uring_dio(iocb, SPARE2);
}

/* uring_dio_names: the current thread runs request v's direct IO (kiocb
 * iocb = the request, at key): its segment becomes the request's. */
static __always_inline void uring_dio_names(struct kiocb *iocb, __u64 key, struct uring_req *v)
{
	struct op *cur = op_of((__u32)bpf_get_current_pid_tgid());
	if (cur && !cur->uring_thread) {
		uring_issued_inline(cur, iocb, v, key);
		return;
	}
	uring_worker_names(key);
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (op && op->uring_thread && uring_is(op, key, v) && !op->file) {
		struct file *f = BPF_CORE_READ(iocb, ki_filp);
		if (f) {
			if (v->sys)
				op->sys = v->sys;
			uring_set_file(op, f, v);
		}
	}
}

static __always_inline int uring_dio(struct kiocb *iocb, const int copy)
{
	__u64 key = (__u64)iocb;
	struct uring_req *v = bpf_map_lookup_elem(&uring_reqs, &key);
	if (!v || !take_turn(SPARED_URING_DIO, copy, (__u64)iocb))
		return 0;
	uring_dio_names(iocb, key, v);
	return 0;
}

static __always_inline int uring_completed(void *req, __u64 user_data, __s64 res, __u32 cflags)
{
	__u64 key = (__u64)req;
	struct uring_req *v = bpf_map_lookup_elem(&uring_reqs, &key);
	if (!v)
		return 0;
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (op && uring_seg(op) && (uring_is(op, key, v) || (op->uring_thread && !op->uring_req))) {
		/* Run by this thread: an io-wq worker completes what it ran
		 * synchronously; the submitter or SQPOLL thread what it ran
		 * inline. */
		if (!op->uring_req)
			uring_name(op, key);
		uring_close(op);
	}
	struct uring_complete_ev *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_event(CNT_RINGBUF_LOST);
	} else {
		ev->type = EV_URING_COMPLETE;
		ev->pid = v->pid;
		ev->tid = (__u32)bpf_get_current_pid_tgid();
		ev->segs = v->segs;
		ev->req = key;
		ev->op_id = v->op_id;
		ev->user_data = user_data;
		ev->ts = bpf_ktime_get_ns();
		ev->res = res;
		ev->cflags = cflags;
		ev->pad = 0;
		bpf_ringbuf_submit(ev, aio_wakeup());
	}
	bpf_map_delete_elem(&uring_reqs, &key);
	return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(uring_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
	return uring_completed(req, BPF_CORE_READ(cqe, user_data), BPF_CORE_READ(cqe, res), BPF_CORE_READ(cqe, flags));
}

/* 5.19 to 6.3: io_uring_complete(ctx, req, user_data, res, cflags, extra1, extra2). */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(uring_complete_fields, struct io_ring_ctx *ring, void *req, __u64 user_data, int res, unsigned cflags)
{
	return uring_completed(req, user_data, res, cflags);
}

/* Task work (completions, retries) runs after what the thread submitted:
 * the running segment ends there. Fires at the end of the run. */
static __always_inline void uring_tw(void)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (op && uring_seg(op))
		uring_close(op);
}

SEC("tp_btf/io_uring_task_work_run")
int BPF_PROG(uring_task_work_run)
{
	uring_tw();
	return 0;
}

SEC("tp_btf/io_uring_local_work_run")
int BPF_PROG(uring_local_work_run)
{
	uring_tw();
	return 0;
}

/* io_uring_enter at raw_syscalls sys_enter / sys_exit (syscalls.c): the
 * call's number, for its requests' submit_op_id; the last inline request
 * ends at the exit. */
static __always_inline void uring_enter(struct op *op, __u32 to_submit, __u32 min_complete, __u32 flags)
{
	op->seq++;
	op->uring_call = ((__u64)(__u32)bpf_get_current_pid_tgid() << 32) | op->seq;
	op->call_start_ns = bpf_ktime_get_ns();
	op->call_arg1 = to_submit;
	op->call_arg2 = min_complete;
	op->call_arg3 = flags;
}

/* uring_exit ends an io_uring_enter: its last inline request's segment,
 * then the call's own record (EV_URING_ENTER). */
static __always_inline void uring_exit(long ret)
{
	struct op *op = op_of((__u32)bpf_get_current_pid_tgid());
	if (!op)
		return;
	if (uring_seg(op) && !op->uring_thread)
		uring_close(op);
	if (op->uring_call) {
		struct uring_enter_ev *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
		if (ev) {
			ev->type = EV_URING_ENTER;
			ev->pid = op->owner;
			ev->tid = (__u32)bpf_get_current_pid_tgid();
			ev->to_submit = op->call_arg1;
			ev->op_id = op->uring_call;
			ev->start_ns = op->call_start_ns;
			ev->end_ns = bpf_ktime_get_ns();
			ev->ret = ret;
			ev->min_complete = op->call_arg2;
			ev->flags = op->call_arg3;
			bpf_get_current_comm(ev->comm, sizeof(ev->comm));
			bpf_ringbuf_submit(ev, aio_wakeup());
		} else {
			count_event(CNT_RINGBUF_LOST);
		}
	}
	op->uring_call = 0;
}

/* uring_forked starts the op of a new PF_IO_WORKER thread (io-wq worker,
 * SQPOLL thread) of a traced process. create_io_thread calls copy_process
 * itself, not kernel_clone: no sched_process_fork, but sched_wakeup_new. */
static __always_inline void uring_forked(struct task_struct *child)
{
	if (!(BPF_CORE_READ(child, flags) & PF_IO_WORKER))
		return;
	__u32 tgid = BPF_CORE_READ(child, tgid), tid = BPF_CORE_READ(child, pid);
	if (!is_traced(tgid))
		return;
	struct op *op = op_slot(tid, tgid);
	if (op)
		uring_lazy(op, tgid, tid);
}

/* The task's state before 5.14 (task_struct.state, renamed __state). */
struct task_struct___state {
	volatile long state;
} __attribute__((preserve_access_index));

#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2

/* task_waits_for_work: t is going to sleep interruptibly, as an idle io
 * thread does (io-wq's io_wq_worker and the SQPOLL thread's io_sq_thread
 * wait in TASK_INTERRUPTIBLE). A sleep inside a request's issue is
 * uninterruptible or killable (a mutex, a journal handle, the first direct
 * IO of a filesystem creating its dio workqueue: sb_init_dio_done_wq ->
 * kthread_create waits killable, seen on 6.18 on a fresh mount). */
static __always_inline bool task_waits_for_work(struct task_struct *t)
{
	unsigned long state;
	if (bpf_core_field_exists(t->__state))
		state = BPF_CORE_READ(t, __state);
	else
		state = BPF_CORE_READ((struct task_struct___state *)t, state);
	return (state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)) == TASK_INTERRUPTIBLE;
}

/* uring_switch_out ends the named segment of a PF_IO_WORKER thread that
 * goes to sleep waiting for work (sched_switch, not preempted, not in
 * iowait, interruptible): an io-wq worker between items, the SQPOLL thread
 * idle. The request it ran went on without it (a direct IO in flight). A
 * sleep inside the request's issue keeps the segment: the request's bio
 * comes after it (before: the SQPOLL thread's first direct read on a fresh
 * mount, asleep in sb_init_dio_done_wq before its bio, ended its segment
 * and the bio went to the next request). */
static __always_inline void uring_switch_out(struct op *op, struct task_struct *prev)
{
	if (BPF_CORE_READ_BITFIELD(prev, in_iowait) || !uring_seg(op) || !task_waits_for_work(prev))
		return;
	if (op->uring_req) {
		uring_close(op);
	} else if (op->touched && op->bios_queued) {
		/* IO no event named (e.g. a direct IO punted where no
		 * iomap_dio_rw_begin fires): sent unnamed (req_id 0), so that
		 * userspace counts its bios as unattributed, not lost. */
		op->active = 0;
		op->ret = 0;
		op_stream(op);
		uring_lazy(op, op->pid, op->tid);
	}
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(uring_wakeup_new, struct task_struct *p)
{
	uring_forked(p);
	return 0;
}
