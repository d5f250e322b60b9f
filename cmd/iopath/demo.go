package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/iopath/iopath/demo"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/timeline"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newDemoCmd, newDemoChildCmd) }

func newDemoCmd() *cobra.Command {
	o := &demo.Options{}
	var tl timelineFlags
	cmd := &cobra.Command{
		Use:   "demo NAME",
		Short: "Run a classic IO experiment under the tracer and explain it with the kernel's numbers",
		Long: "Demos:\n" + demo.List() + `
SIGINT or SIGTERM stops a demo (its child gets the same signal), removes its
files and exits with 130 or 143. If iopath is killed, its child gets SIGKILL
and the next demo removes the files left behind.`,
		Args: func(cmd *cobra.Command, args []string) error {
			names := strings.Join(demo.Names(), ", ")
			if len(args) < 1 {
				return fmt.Errorf("name a demo: %s", names)
			}
			if demo.Get(args[0]) == nil {
				return fmt.Errorf("unknown demo %q: choose one of %s", args[0], names)
			}
			if len(args) > 1 {
				return fmt.Errorf("too many arguments %q: give one demo name, then its flags (`iopath demo --help`)", args[1:])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			o.Signals = session.Catch() // before anything loads
			defer o.Signals.Stop()
			if err := checkDemoFlags(args[0], cmd.Flags().Changed, o); err != nil {
				return err
			}
			if err := timeline.CheckOutputs(cmd.OutOrStdout(), cmd.ErrOrStderr(), outputFlag(cmd, "timeline", tl.trace), outputFlag(cmd, "report", tl.report)); err != nil {
				return err
			}
			if activeTimeline, err = openTimeline(&tl, "iopath demo "+strings.Join(args, " "), cmd.ErrOrStderr()); err != nil {
				return err
			}
			defer func() { err = activeTimeline.End(err, cmd.ErrOrStderr()) }()
			// A failed write of the explanation ends the demo as trace's
			// output does (exit 1, one line; EPIPE: 141, quietly).
			o.Out = session.NewOut(cmd.OutOrStdout(), "stdout")
			o.Notes, o.Tee, o.OnSummary = cmd.ErrOrStderr(), activeTimeline.Tee, activeTimeline.Summary
			if err := demo.Get(args[0]).Run(o); err != nil {
				return err
			}
			return o.Out.Err()
		},
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&o.Dir, "dir", "", "directory for the demo's file (default: a new temp dir under $TMPDIR, removed afterwards)")
	fl.BoolVar(&o.Keep, "keep", false, "keep the demo's files")
	fl.BoolVar(&o.JSON, "json", false, "print the raw records as JSON Lines after the explanation")
	addTimelineFlags(fl, &tl)
	cmd.Flags().BoolVar(&o.Fsync, "fsync", false, "write-1byte: fsync after the write")
	cmd.Flags().IntVar(&o.ExpireCentisecs, "expire-centisecs", 0, "write-1byte: set vm.dirty_expire_centisecs for the demo (restored afterwards)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 90*time.Second, "write-1byte: how long to wait for writeback")
	return cmd
}

// checkDemoFlags refuses write-1byte's flags given to another demo (they
// would be ignored), --timeout and --expire-centisecs below 0, a --timeout
// of 0 without --fsync (the byte would never be seen on disk), an
// --expire-centisecs the demo stops waiting before (the page would not be
// old enough to be written back within --timeout), and, with --fsync,
// the flags of the wait for periodic writeback (the call writes the byte).
func checkDemoFlags(name string, changed func(string) bool, o *demo.Options) error {
	if name != "write-1byte" {
		for _, f := range []string{"fsync", "expire-centisecs", "timeout"} {
			if changed(f) {
				return fmt.Errorf("--%s is a flag of demo write-1byte only: drop it, or run iopath demo write-1byte --%s", f, f)
			}
		}
		return nil
	}
	switch expire := time.Duration(o.ExpireCentisecs) * 10 * time.Millisecond; {
	case o.Timeout < 0:
		return fmt.Errorf("--timeout %s is negative: give how long to wait for writeback, e.g. --timeout 90s", o.Timeout)
	case o.ExpireCentisecs < 0:
		return fmt.Errorf("--expire-centisecs %d is negative: give the age in 1/100 s at which dirty data is written back, e.g. --expire-centisecs 500 (5 s), or 0 to keep vm.dirty_expire_centisecs", o.ExpireCentisecs)
	case o.Fsync && (changed("expire-centisecs") || changed("timeout")):
		return errors.New("--expire-centisecs and --timeout set the wait for periodic writeback, which --fsync does not do (fsync writes the byte in the call): drop them or --fsync")
	case o.Timeout == 0 && !o.Fsync:
		return errors.New("--timeout 0 would not wait for writeback, so the byte would never be seen reaching the disk: give e.g. --timeout 90s, or --fsync")
	case expire >= o.Timeout:
		return fmt.Errorf("--expire-centisecs %d (%s) is not shorter than --timeout %s: the page would not be old enough to be written back before the demo stops waiting; lower it or raise --timeout", o.ExpireCentisecs, expire, o.Timeout)
	}
	return nil
}

// newDemoChildCmd is the traced side of the demos (demo.Child).
func newDemoChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "__demo-child KIND PATH",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE:   func(cmd *cobra.Command, args []string) error { return demo.Child(args[0], args[1]) },
	}
}
