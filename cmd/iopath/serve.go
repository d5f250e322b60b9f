package main

import (
	"fmt"

	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/session"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newServeCmd) }

type serveFlags struct {
	listen    string
	pids      []int
	comm      string
	perComm   []string
	readyFile string
}

func newServeCmd() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve [--listen HOST:PORT] [--per-comm NAME,...]",
		Short: "Expose IO metrics for Prometheus, aggregated in the kernel",
		Long: `Serve Prometheus metrics (/metrics) of every process's read, write and fsync-family
calls, page-cache hits and misses, readahead, dirty pages and throttling, and of
every disk's requests with their D2C/Q2C latency histograms. The numbers are
counters and log2 histograms kept in BPF maps and read at each scrape; no
per-call record leaves the kernel. /healthz answers "ok".

Labels stay bounded: per-process series only for the command names given to
--per-comm, never per pid or file. SIGINT or SIGTERM stops the server and
unloads every BPF program and map (exit status 130 or 143). Metric names and help texts:
README.md, "iopath serve"; a scrape config and queries: docs/prometheus.md.`,
		Example: `  iopath serve
  iopath serve --listen :9465 --per-comm postgres,nginx`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runServe(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9465", "serve on `HOST:PORT`")
	fl.IntSliceVarP(&f.pids, "pid", "p", nil, "count only this process and its children (repeatable)")
	fl.StringVar(&f.comm, "comm", "", "count only tasks with this command name")
	fl.StringSliceVar(&f.perComm, "per-comm", nil, "command names that get per-process series (label comm)")
	fl.StringVar(&f.readyFile, "ready-file", "", "create this file once serving")
	return cmd
}

func runServe(cmd *cobra.Command, f *serveFlags) error {
	sig := session.Catch()
	defer sig.Stop()
	var err error
	if f.pids, err = session.CheckPids(f.pids); err != nil {
		return err
	}
	if f.comm != "" {
		if err := session.CheckComm(f.comm); err != nil {
			return err
		}
	}
	if err := session.CheckReadyFile(f.readyFile); err != nil {
		return err
	}
	for _, c := range f.perComm {
		if c == "" || len(c) > 15 {
			return fmt.Errorf("--per-comm %q: give command names of 1 to 15 bytes (the kernel's comm), separated by commas", c)
		}
	}
	// Listen before loading anything: a bad address or a port in use
	// leaves nothing behind.
	ln, err := metrics.Listen(f.listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	errw := cmd.ErrOrStderr()
	s, err := session.OpenAggregates(sig, errw, f.pids, f.comm, false)
	if err != nil {
		return err
	}
	defer s.Close()
	return metrics.Serve(ln, s, sig, metrics.ServeOptions{PerComm: f.perComm, Notes: errw, ReadyFile: f.readyFile})
}
