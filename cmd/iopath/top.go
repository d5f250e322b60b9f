package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/timeline"
	"github.com/iopath/iopath/topview"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() { subcommands = append(subcommands, newTopCmd) }

type topFlags struct {
	pids      []int
	comm      string
	interval  time.Duration
	duration  time.Duration
	json      bool
	by, sort  string
	rows      int
	readyFile string
	output    string
}

func newTopCmd() *cobra.Command {
	f := &topFlags{}
	cmd := &cobra.Command{
		Use:   "top [-p PID]... [--comm NAME] [-- CMD ARGS...]",
		Short: "Live IO per process or file, aggregated in the kernel",
		Long: `Show, every --interval, what the read, write and fsync-family calls did per
process or per file: calls and bytes, page-cache hit ratio, disk bytes read and
written (the calls' own bios and the writeback of the pages they dirtied),
amplification, readahead pages, dirty pages pending, throttle time and p50/p99
call latency per op (read, write, sync); and per disk the request rate, bytes
and D2C/Q2C p50/p99. A process is named by its main thread's comm, followed
through prctl(PR_SET_NAME) and exec; a file by its latest name.

The numbers are counters and log2 histograms kept in BPF maps: no per-call
record leaves the kernel. Percentiles come from log2 buckets (within a factor
of 2). Without -p, --comm or -- CMD every process but iopath is counted.

On a terminal: f or tab switches processes/files, s cycles the sort (d disk,
c calls, l p99 latency of the slowest op, t throttle), q quits. Without a
terminal, or with --json, one JSON object per interval ("type":"interval") and
one for the whole run at the end ("type":"total"). With -o FILE the JSON goes to FILE and stdout
stays the command's; without it a command's output shares stdout, each JSON
object on a line of its own.`,
		Example: `  iopath top
  iopath top -p 1234 --by file --sort latency
  iopath top --json --interval 5s -o top.jsonl -- pg_bench ...`,
		RunE: func(cmd *cobra.Command, args []string) error { return runTop(cmd, f, args) },
	}
	fl := cmd.Flags()
	fl.IntSliceVarP(&f.pids, "pid", "p", nil, "count this process and its threads (repeatable)")
	fl.StringVar(&f.comm, "comm", "", "count tasks with this command name")
	fl.DurationVar(&f.interval, "interval", time.Second, "refresh every `DURATION`")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (0: until the command exits or Ctrl-C)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object per interval, even on a terminal")
	fl.StringVar(&f.by, "by", "process", "rows: process or file")
	fl.StringVar(&f.sort, "sort", "disk", "sort rows by disk, calls, latency (p99) or throttle")
	fl.IntVar(&f.rows, "rows", 20, "rows per kind (0: all); the total counts every row")
	fl.StringVar(&f.readyFile, "ready-file", "", "create this file once every hook is attached")
	fl.StringVarP(&f.output, "output", "o", "", "write the JSON intervals to `FILE` instead of stdout (stdout stays the command's)")
	return cmd
}

// checkTopFlags refuses values that would show nothing or wrongly.
func checkTopFlags(f *topFlags) (topview.By, topview.SortKey, error) {
	by, err := topview.ParseBy(f.by)
	if err != nil {
		return "", "", err
	}
	k, err := topview.ParseSort(f.sort)
	if err != nil {
		return "", "", err
	}
	if f.interval < minInterval {
		return "", "", fmt.Errorf("--interval %s is too short: give %s or more, e.g. --interval 1s", f.interval, minInterval)
	}
	if f.duration < 0 {
		return "", "", fmt.Errorf("--duration %s is negative: give 0 (no limit) or more, e.g. --duration 10s", f.duration)
	}
	if err := session.CheckReadyFile(f.readyFile); err != nil {
		return "", "", err
	}
	if f.rows < 0 {
		return "", "", fmt.Errorf("--rows %d is negative: give 0 (all rows) or more", f.rows)
	}
	if f.pids, err = session.CheckPids(f.pids); err != nil {
		return "", "", err
	}
	if f.comm != "" {
		if err := session.CheckComm(f.comm); err != nil {
			return "", "", err
		}
	}
	return by, k, nil
}

func runTop(cmd *cobra.Command, f *topFlags, args []string) (err error) {
	sig := session.Catch()
	defer sig.Stop()
	by, k, err := checkTopFlags(f)
	if err != nil {
		return err
	}
	if err := timeline.CheckOutputs(cmd.OutOrStdout(), cmd.ErrOrStderr(), outputFlag(cmd, "output", f.output), outputFlag(cmd, "ready-file", f.readyFile)); err != nil {
		return err
	}
	var cmdPath string
	if len(args) > 0 {
		if cmdPath, err = session.LookCommand(args[0]); err != nil {
			return err
		}
	}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	tty := false
	if of, ok := out.(*os.File); ok && !f.json && f.output == "" {
		tty = term.IsTerminal(int(of.Fd()))
	}
	var shared *session.SharedStdout
	var jsonOut *session.Out
	if !tty {
		// JSON: to -o, or to stdout shared with the command (as trace
		// does), so that each object starts on a line of its own.
		var closeOut func(error) error
		if jsonOut, shared, closeOut, err = session.Output(sig, f.output, cmd.OutOrStdout(), errw, len(args) > 0); err != nil {
			return err
		}
		out = jsonOut
		defer func() { err = closeOut(err) }()
	}
	s, err := session.OpenAggregates(sig, errw, f.pids, f.comm, len(args) > 0)
	if err != nil {
		return err
	}
	defer s.Close()
	removeReady, err := session.ReadyFile(f.readyFile, errw)
	if err != nil {
		return err
	}
	defer removeReady()

	tr := session.Trace{Pids: f.pids, Duration: f.duration}
	if f.comm != "" {
		tr.Pids = nil
	}
	if len(args) > 0 {
		c := &session.Command{Path: cmdPath, Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, DeathSignal: syscall.SIGTERM}
		if tty {
			c.Stdin = nil // the terminal's keys are top's
		}
		if shared != nil {
			c.Stdout = shared.CommandStdout()
			tr.Started = func(*session.Child) { shared.Started() }
		}
		tr.Command, tr.Pids = c, nil
	}
	res, err := topview.Run(s, tr, topview.Options{Out: out, TTY: tty, Notes: errw, By: by, Sort: k, Rows: f.rows,
		Interval: f.interval, Title: topTitle(f, args)})
	if err != nil {
		return err
	}
	if err := jsonOut.Err(); err != nil {
		return err
	}
	return exitWith(errw, res.Code, res.Note())
}

func topTitle(f *topFlags, args []string) string {
	switch {
	case len(args) > 0:
		return strings.Join(args, " ")
	case len(f.pids) > 0:
		return fmt.Sprintf("pid %v", f.pids)
	case f.comm != "":
		return "comm " + f.comm
	}
	return "every process"
}
