package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracerun"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newTraceCmd) }

type traceFlags struct {
	pids          []int
	comm          string
	all           bool
	json          bool
	ringbuf       int
	maxDirty      int
	force         map[string]string
	mechanisms    map[string]tracer.Mechanism // --force-mechanism, converted by checkTraceFlags
	waitWriteback time.Duration
	duration      time.Duration
	readyFile     string
	settle        time.Duration
	noWriteback   bool
	quiet         bool
	workload      string // trace_workload.go
	output        string
	timeline      timelineFlags
	interval      time.Duration
	files         int // file rows of the text summary
}

func newTraceCmd() *cobra.Command {
	f := &traceFlags{}
	cmd := &cobra.Command{
		Use:   "trace [-p PID]... [--comm NAME] [-- CMD ARGS...]",
		Short: "Trace read/write calls through the page cache to the disk",
		Long: `Trace the read, write and fsync-family calls of processes and print, per call,
which pages hit or missed the page cache, what readahead the kernel decided,
which bios it caused with their device latency, which pages it dirtied and
when writeback carried them to disk. The same for libaio and io_uring
requests, page faults on mapped files, madvise/fadvise64/readahead/msync
calls, and execve (what the kernel read to load a program).

By default only calls that touched the disk, waited, dirtied pages or failed are
printed; pure cache hits are counted in the kernel and shown in the summary
(--all prints them too).

With -- CMD the command shares stdout with iopath's records: give -o FILE to
keep them apart. On a shared pipe or terminal each record starts on a new
line; on a shared regular file iopath checks the byte before each record, and
a write of the command in between can still put a record mid-line.

Signals and exit status: SIGINT, SIGTERM, SIGHUP or SIGQUIT ends the trace
after the summary with exit status 128+N (130, 143, 129, 131); the command
gets the same signal, and SIGKILL 5 s later if it is still running (said on
stderr). SIGINT and SIGHUP ignored by iopath's parent stay ignored for the
command. Otherwise iopath exits
with the command's status (128+N when signal N ended it: 137 after SIGKILL).
--duration sends the command SIGTERM (SIGKILL 5 s later). If iopath itself
is killed, the command gets SIGTERM (a workload child, SIGKILL).

A failed write of iopath's output (-o FILE or stdout: a full disk, a file
that takes no writes) stops the trace as --duration does (the command gets
SIGTERM), and iopath exits with status 1 after one line naming the output
and the error. When stdout's reader goes away (| head) iopath stops
quietly, with exit status 141 (128+SIGPIPE).`,
		Example: `  iopath trace -o trace.txt -- dd if=/var/log/syslog of=/dev/null bs=1 count=1
  iopath trace -p 1234 --json
  iopath trace --wait-writeback 40s -- sh -c 'echo x > /var/tmp/f'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	fl.IntSliceVarP(&f.pids, "pid", "p", nil, "trace this process and its threads (repeatable)")
	fl.StringVar(&f.comm, "comm", "", "trace tasks with this command name")
	fl.BoolVar(&f.all, "all", false, "print every call, cache hits included")
	fl.BoolVar(&f.json, "json", false, "print JSON Lines records (schema in README.md)")
	fl.IntVar(&f.ringbuf, "ringbuf-size", 8<<20, "ring buffer size in bytes (a power of two from 4096 to 1073741824: kernel memory, taken at load)")
	fl.IntVar(&f.maxDirty, "max-dirty-pages", 262144, "dirty folios tracked at once (bounded map, 112 B of kernel memory each: at most 8388608; overflow is counted)")
	fl.StringToStringVar(&f.force, "force-mechanism", nil, "prefer a mechanism for a hook: HOOK=fentry|kprobe|tracepoint|tp_btf (HOOK * for all)")
	fl.DurationVar(&f.waitWriteback, "wait-writeback", 0, "after the command exits, keep tracing until its dirty pages reach the disk or this much time passes")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (0: until the command exits or Ctrl-C); the command then gets SIGTERM")
	fl.StringVar(&f.readyFile, "ready-file", "", "create this file once every hook is attached")
	fl.DurationVar(&f.settle, "settle", 2*time.Second, "after the end, wait this long for bios still in flight")
	fl.BoolVar(&f.noWriteback, "no-writeback", false, "do not follow dirty pages to writeback")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the summary")
	fl.IntVar(&f.files, "files", render.DefaultFileRows, "`N` files in the text summary's file tables, most disk bytes first, then most calls; the rest summed in one row; as many not-itemized hit lines (0: all; the JSON summary lists every file)")
	fl.StringVarP(&f.output, "output", "o", "", "write the records, stories and summary to `FILE` instead of stdout (recommended with -- CMD: stdout stays the command's)")
	addTimelineFlags(fl, &f.timeline)
	fl.DurationVar(&f.interval, "interval", 0, "every `DURATION`, print the interval's totals per process and disk between the stories (as `iopath top`; 0: never)")
	fl.StringVar(&f.workload, "workload", "", "run `KIND`: iopath workload KIND (its flags after --) as the traced command; its file is prepared before the trace and removed after (unless the workload flags after -- include --keep)")
	return cmd
}

func runTrace(cmd *cobra.Command, f *traceFlags, args []string) (err error) {
	// Before anything loads: the signals received since main started
	// (session.CatchEarly) and from now on end the run cleanly.
	sig := session.Catch()
	defer sig.Stop()
	if err := checkTraceFlags(cmd, f); err != nil {
		return err
	}
	if err := session.CheckPidNamespace(); err != nil {
		return err // before a workload file is made
	}
	if activeTimeline, err = openTimeline(&f.timeline, "iopath trace "+strings.Join(args, " "), cmd.ErrOrStderr()); err != nil {
		return err
	}
	defer func() { err = activeTimeline.End(err, cmd.ErrOrStderr()) }()
	if f.workload != "" {
		return runTraceWorkload(cmd, f, args, sig)
	}
	if len(f.pids) == 0 && f.comm == "" && len(args) == 0 {
		return errors.New("nothing to trace: give -p PID, --comm NAME or -- CMD ARGS")
	}
	var cmdPath string
	if len(args) > 0 {
		p, err := session.LookCommand(args[0])
		if err != nil {
			return err
		}
		cmdPath = p
	}
	if f.pids, err = session.CheckPids(f.pids); err != nil {
		return err
	}
	if f.comm != "" {
		if err := session.CheckComm(f.comm); err != nil {
			return err
		}
	}
	if f.waitWriteback > 0 && len(args) == 0 {
		return errors.New("--wait-writeback needs a command to wait for (-- CMD ARGS)")
	}
	w, shared, closeOut, err := session.Output(sig, f.output, cmd.OutOrStdout(), cmd.ErrOrStderr(), len(args) > 0)
	if err != nil {
		return err
	}
	defer func() { err = closeOut(err) }()
	var c *session.Command
	if len(args) > 0 {
		c = &session.Command{Path: cmdPath, Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, DeathSignal: syscall.SIGTERM}
		if shared != nil {
			c.Stdout = shared.CommandStdout()
		}
	}
	res, err := tracerun.Run(sig, runOptions(cmd, f, tracer.Options{Pids: f.pids, Comm: f.comm}, w, shared), c)
	if err != nil {
		return err
	}
	return exitWith(cmd.ErrOrStderr(), res.Code, res.Note())
}

// exitWith prints note (if any) on errw and returns the exit status code.
func exitWith(errw io.Writer, code int, note string) error {
	if note != "" {
		fmt.Fprintln(errw, note)
	}
	if code != 0 {
		return exitError{code: code}
	}
	return nil
}

// runOptions are tracerun's options from f; topts says what to trace.
func runOptions(cmd *cobra.Command, f *traceFlags, topts tracer.Options, out *session.Out, shared *session.SharedStdout) tracerun.Options {
	topts.All, topts.RingBufBytes, topts.MaxDirtyPages, topts.Force, topts.NoWriteback = f.all, f.ringbuf, f.maxDirty, f.mechanisms, f.noWriteback
	return tracerun.Options{Tracer: topts, Out: out, Shared: shared, Notes: cmd.ErrOrStderr(), JSON: f.json, Quiet: f.quiet, FileRows: f.files,
		Interval: f.interval, Settle: f.settle, ReadyFile: f.readyFile, Timeline: activeTimeline, Duration: f.duration, WaitWriteback: f.waitWriteback}
}
