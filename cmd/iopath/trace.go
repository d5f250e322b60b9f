package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer"
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
	waitWriteback time.Duration
	duration      time.Duration
	readyFile     string
	settle        time.Duration
	noWriteback   bool
	quiet         bool
	workload      string // trace_workload.go
	timeline      timelineFlags
}

func newTraceCmd() *cobra.Command {
	f := &traceFlags{}
	cmd := &cobra.Command{
		Use:   "trace [-p PID]... [--comm NAME] [-- CMD ARGS...]",
		Short: "Trace read/write calls through the page cache to the disk",
		Long: `Trace the read, write and fsync-family calls of processes and print, per call,
which pages hit or missed the page cache, what readahead the kernel decided,
which bios it caused with their device latency, which pages it dirtied and
when writeback carried them to disk.

By default only calls that touched the disk, waited, dirtied pages or failed are
printed; pure cache hits are counted in the kernel and shown in the summary
(--all prints them too).`,
		Example: `  iopath trace -- dd if=/var/log/syslog of=/dev/null bs=1 count=1
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
	fl.IntVar(&f.ringbuf, "ringbuf-size", 8<<20, "ring buffer size in bytes (power of two)")
	fl.IntVar(&f.maxDirty, "max-dirty-pages", 262144, "dirty folios tracked at once (bounded map; overflow is counted)")
	fl.StringToStringVar(&f.force, "force-mechanism", nil, "prefer a mechanism for a hook: HOOK=fentry|kprobe|tracepoint|tp_btf (HOOK * for all)")
	fl.DurationVar(&f.waitWriteback, "wait-writeback", 0, "after the command exits, keep tracing until its dirty pages reach the disk or this much time passes")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (0: until the command exits or Ctrl-C)")
	fl.StringVar(&f.readyFile, "ready-file", "", "create this file once every hook is attached")
	fl.DurationVar(&f.settle, "settle", 2*time.Second, "after the end, wait this long for bios still in flight")
	fl.BoolVar(&f.noWriteback, "no-writeback", false, "do not follow dirty pages to writeback")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the summary")
	addTimelineFlags(fl, &f.timeline)
	fl.StringVar(&f.workload, "workload", "", "run `KIND`: iopath workload KIND (its flags after --) as the traced command; its file is prepared before the trace and removed after (unless the workload flags after -- include --keep)")
	return cmd
}

func runTrace(cmd *cobra.Command, f *traceFlags, args []string) (err error) {
	if activeTimeline, err = openTimeline(&f.timeline, "iopath trace "+strings.Join(args, " ")); err != nil {
		return err
	}
	defer func() { err = activeTimeline.end(err, cmd.ErrOrStderr()) }()
	if f.workload != "" {
		return runTraceWorkload(cmd, f, args)
	}
	if len(f.pids) == 0 && f.comm == "" && len(args) == 0 {
		return errors.New("nothing to trace: give -p PID, --comm NAME or -- CMD ARGS")
	}
	var cmdPath string
	if len(args) > 0 {
		p, err := exec.LookPath(args[0])
		if err != nil {
			if st, serr := os.Stat(args[0]); serr == nil && strings.Contains(args[0], "/") {
				if st.IsDir() {
					return fmt.Errorf("command %q is a directory: give the program to run", args[0])
				}
				return fmt.Errorf("command %q is not executable: chmod +x it or run it through its interpreter", args[0])
			}
			return fmt.Errorf("command %q not found: check the name or give its full path", args[0])
		}
		cmdPath = p
	}
	for _, pid := range f.pids {
		if pid <= 0 || pid > 1<<22 || syscall.Kill(pid, 0) == syscall.ESRCH {
			return fmt.Errorf("no process with pid %d: check it with `ps -p %d`", pid, pid)
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(st), ") Z ") {
			return fmt.Errorf("pid %d is a zombie (exited, not yet reaped): it will do no more IO", pid)
		}
	}
	if f.ringbuf > 1<<30 {
		return fmt.Errorf("--ringbuf-size %d is larger than 1 GiB: choose a power of two from 4096 to 1073741824", f.ringbuf)
	}
	if f.maxDirty < 1 || f.maxDirty > 1<<26 {
		return fmt.Errorf("--max-dirty-pages %d is out of range: choose 1 to 67108864 folios", f.maxDirty)
	}
	if err := checkForce(f.force); err != nil {
		return err
	}
	if f.waitWriteback > 0 && len(args) == 0 {
		return errors.New("--wait-writeback needs a command to wait for (-- CMD ARGS)")
	}
	force := map[string]tracer.Mechanism{}
	for k, v := range f.force {
		force[k] = tracer.Mechanism(v)
	}
	out := render.NewPrinter(cmd.OutOrStdout(), f.json, f.quiet)
	t, err := tracer.New(tracer.Options{Pids: f.pids, Comm: f.comm, All: f.all, RingBufBytes: f.ringbuf,
		MaxDirtyPages: f.maxDirty, Force: force, NoWriteback: f.noWriteback}, activeTimeline.tee(out.Record))
	if err != nil {
		return err
	}
	defer t.Close()
	defer out.Flush()
	started(cmd.ErrOrStderr(), t, out, force)
	if len(f.pids) > 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), pidNote(f.pids))
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if f.duration > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, f.duration)
		defer c2()
	}
	if f.readyFile != "" {
		rf, err := os.OpenFile(f.readyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("--ready-file: %w: give a path that does not exist yet", err)
		}
		fmt.Fprintln(rf, os.Getpid())
		rf.Close()
		defer os.Remove(f.readyFile)
	}

	exitCode := 0
	var childDone chan struct{}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if len(args) > 0 {
		child, err := startGated(cmdPath, args, t)
		if err != nil {
			return err
		}
		childDone = make(chan struct{})
		go func() {
			// A signal that reached only iopath goes to the command too: it
			// must not run on untraced.
			select {
			case <-ctx.Done():
				if ctx.Err() == context.Canceled {
					child.Process.Signal(syscall.SIGTERM)
				}
			case <-childDone:
			}
		}()
		go func() {
			defer close(childDone)
			err := child.Wait()
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				exitCode = ee.ExitCode()
				if exitCode < 0 {
					exitCode = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
				}
			} else if err != nil {
				exitCode = 127
			}
			if f.waitWriteback > 0 {
				waitWriteback(ctx, t, f.waitWriteback, cmd.ErrOrStderr())
			}
			stopRun()
		}()
	}
	if len(args) == 0 {
		// Output closed (`iopath trace -p PID | head`): stop, as a
		// command whose output is gone would. A traced command keeps
		// running (traced, records dropped) until it exits.
		out.OnBroken = func(err error) {
			fmt.Fprintf(cmd.ErrOrStderr(), "iopath: output closed (%v): stopping\n", err)
			stopRun()
		}
	}
	if len(args) == 0 && len(f.pids) > 0 && f.comm == "" {
		go func() { // -p only: end when every traced process has exited
			for runCtx.Err() == nil {
				alive := false
				for _, pid := range f.pids {
					if syscall.Kill(pid, 0) == nil {
						alive = true
					}
				}
				if !alive {
					stopRun()
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	if err := t.Run(runCtx, f.settle); err != nil {
		return err
	}
	if childDone != nil {
		select { // its exit status is ours
		case <-childDone:
		case <-time.After(5 * time.Second):
		}
	}
	sum := t.Summary()
	activeTimeline.summary(sum)
	out.Summary(sum)
	if exitCode != 0 {
		return exitError{code: exitCode}
	}
	return nil
}

// startGated starts the command stopped right after its execve (ptrace's
// exec stop), adds its pid to the traced set, then lets it run: none of the
// program's own IO escapes the trace, and none of iopath's gets in.
func startGated(path string, args []string, t *tracer.Tracer) (*exec.Cmd, error) {
	runtime.LockOSThread() // ptrace requests must come from the tracing thread
	defer runtime.UnlockOSThread()
	c := exec.Command(path)
	c.Args = args
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := c.Start(); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("starting %s: %w: its #! interpreter line names a program that does not exist", args[0], err)
		}
		return nil, fmt.Errorf("starting %s: %w", args[0], err)
	}
	pid := c.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		c.Process.Kill()
		c.Wait()
		return nil, fmt.Errorf("starting %s: it did not stop at exec (wait status %v, %w)", args[0], ws, err)
	}
	if err := t.AddPid(pid); err != nil {
		c.Process.Kill()
		syscall.PtraceDetach(pid)
		c.Wait()
		return nil, err
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		c.Process.Kill()
		c.Wait()
		return nil, fmt.Errorf("releasing %s after exec: %w", args[0], err)
	}
	return c, nil
}

func attachLine(hooks []tracer.HookStatus) string {
	var parts []string
	var missing []string
	for _, h := range hooks {
		m := string(h.Mechanism)
		if h.Variant == "attached with --all only" {
			m = "off(--all)"
		}
		parts = append(parts, fmt.Sprintf("%s=%s", h.Hook, m))
		if h.Mechanism == tracer.None {
			missing = append(missing, fmt.Sprintf("%s (no %s)", h.Hook, h.Loses))
		}
	}
	s := "iopath: attached " + strings.Join(parts, " ")
	if len(missing) > 0 {
		s += "\niopath: unavailable on this kernel: " + strings.Join(missing, ", ")
	}
	return s
}

// checkForce validates --force-mechanism: known hooks (or *) and mechanisms.
// started connects the printer to a new tracer (flushed whenever the ring
// buffer is empty) and says on errw which mechanism each hook uses, and
// which --force-mechanism wishes were not granted.
func started(errw io.Writer, t *tracer.Tracer, out *render.Printer, force map[string]tracer.Mechanism) {
	t.Idle = out.Flush
	fmt.Fprintln(errw, attachLine(t.Hooks))
	for _, w := range forceWarnings(force, t.Hooks) {
		fmt.Fprintln(errw, "iopath:", w)
	}
}

// forceWarnings says which hooks do not run on the mechanism
// --force-mechanism asked for (it is a preference: a hook without it, or
// whose kernel refuses it, keeps its best other mechanism).
func forceWarnings(force map[string]tracer.Mechanism, hooks []tracer.HookStatus) []string {
	var out, others []string
	for _, h := range hooks {
		want, ok := force[h.Hook]
		all := !ok
		if all {
			if want, ok = force["*"]; !ok {
				continue
			}
		}
		if h.Mechanism == want {
			continue
		}
		if all {
			others = append(others, h.Hook+"="+string(h.Mechanism))
			continue
		}
		why := "this hook has no " + string(want) + " stand-in"
		for _, r := range h.Rejected {
			if strings.HasPrefix(r, string(want)+": ") {
				why = r
			}
		}
		out = append(out, fmt.Sprintf("--force-mechanism %s=%s not used (%s): %s runs on %s", h.Hook, want, why, h.Hook, h.Mechanism))
	}
	if len(others) > 0 {
		out = append(out, fmt.Sprintf("--force-mechanism *=%s: %d hooks cannot use it and keep another mechanism: %s",
			force["*"], len(others), strings.Join(others, " ")))
	}
	return out
}

func checkForce(force map[string]string) error {
	hooks := map[string]bool{"*": true}
	var names []string
	for _, h := range tracer.Hooks() {
		hooks[h.Name] = true
		names = append(names, h.Name)
	}
	for k, v := range force {
		if !hooks[k] {
			return fmt.Errorf("--force-mechanism: unknown hook %q: use * or one of %s", k, strings.Join(names, ", "))
		}
		switch tracer.Mechanism(v) {
		case tracer.Fentry, tracer.Kprobe, tracer.TPBTF, tracer.Tracepoint:
		default:
			return fmt.Errorf("--force-mechanism %s=%s: unknown mechanism: use fentry, kprobe, tp_btf or tracepoint", k, v)
		}
	}
	return nil
}
