// Package bpf holds iopath's BPF programs (C sources in this directory) and
// the Go bindings bpf2go generates from them. Regenerate with `go generate
// ./bpf` (needs clang and libbpf headers); the generated files are committed
// so that `go build` needs no compiler.
package bpf

//go:generate go tool bpf2go -cc clang -target amd64 -type op -type ev_type -type op_sys -type counter -type range_flag -type fault_rec_flag -type ra_kind -type own_flag -type page_range -type issue_own -type rq_issue_ev -type rq_done_ev -type wb_bio_ev -type wb_start_ev -type wb_inode_ev -type dirty_gone_ev -type bio_split_ev -type flush_done_ev -type path_done_flag -type unattributed_cause -type stat_key -type stat_val -type other_key -type fault_key -type fault_stat -type agg_op -type agg_rq_op -type agg_overflow -type agg_file_key -type agg_io -type agg_dev_key -type agg_dev -type agg_rq -type agg_global -type aio_submit_ev -type aio_reap_ev -type aio_iocb -type aio_event -type uring_submit_ev -type uring_punt_ev -type uring_complete_ev -type uring_enter_ev -type aio_limit Iopath iopath.bpf.c -- -I. -O2 -g -Wall -Werror

// The compat build for kernels without bpf_loop (5.17) or atomic
// fetch-and-add (5.12), down to 5.10: see compat.h. Same programs and maps.
//go:generate go tool bpf2go -cc clang -target amd64 IopathCompat iopath.bpf.c -- -I. -O2 -g -Wall -Werror -DIOPATH_COMPAT
