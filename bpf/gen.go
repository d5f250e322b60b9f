// Package bpf holds iopath's BPF programs (C sources in this directory) and
// the Go bindings bpf2go generates from them. Regenerate with `go generate
// ./bpf` (needs clang and libbpf headers); the generated files are committed
// so that `go build` needs no compiler.
package bpf

//go:generate go tool bpf2go -cc clang -target amd64 -type op -type rq_issue_ev -type rq_done_ev -type wb_bio_ev -type wb_start_ev -type wb_inode_ev -type dirty_gone_ev -type stat_key -type stat_val -type counter -type op_sys -type ev_type -type bio_owner -type bio_split_ev -type flush_done_ev -type issue_own -type page_range Iopath iopath.bpf.c -- -I. -O2 -g -Wall -Werror
