package main

// `iopath trace --workload KIND [TRACE FLAGS] [-- WORKLOAD FLAGS]` runs
// `iopath workload KIND WORKLOAD FLAGS` as the traced child. The workload's
// file is prepared (written, synced, dropped from the page cache with
// --cold) by session.PrepareWorkFile in the tracer's process, which is never
// traced, and the child gets it with --file: the trace holds the workload's
// own IO only.

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracerun"
	"github.com/iopath/iopath/workloads"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// workloadOwnFlags are the workload flags the tracer handles itself instead
// of passing them to the traced child: where the file lives and whether it
// stays (--dir, --file, --keep), --cold (done before the trace, so its
// fdatasync is not traced) and --json (the child always reports JSON to the
// tracer, which prints the report as the user asked).
var workloadOwnFlags = map[string]bool{"dir": true, "file": true, "keep": true, "cold": true, "json": true}

// tracedWorkload is a parsed `trace --workload KIND -- FLAGS`.
type tracedWorkload struct {
	spec  workloads.Spec // as given (defaults not filled in), validated
	flags []string       // flags for the traced child, as --name=value, without workloadOwnFlags
	json  bool           // the workload's --json: print its report as JSON
}

// parseTracedWorkload parses and validates the workload's kind and flags with
// `iopath workload`'s own flag set, so both accept exactly the same flags.
func parseTracedWorkload(kind string, args []string) (*tracedWorkload, error) {
	if err := workloadArgs(nil, []string{kind}); err != nil {
		return nil, err
	}
	var wf workloadFlags
	fl := pflag.NewFlagSet("workload", pflag.ContinueOnError)
	bindWorkloadFlags(fl, &wf)
	fl.SetOutput(io.Discard)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, fmt.Errorf("the flags after -- are those of `iopath workload %s`: see iopath workload --help", kind)
		}
		return nil, fmt.Errorf("workload flags after --: %w: see iopath workload --help", err)
	}
	if fl.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q after --: give only workload flags there (the kind goes in --workload)", fl.Arg(0))
	}
	s := &wf.spec
	s.Kind = kind
	if err := s.SetSizes(wf.bs, wf.size); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	w := &tracedWorkload{spec: *s, json: wf.json}
	fl.Visit(func(f *pflag.Flag) {
		if !workloadOwnFlags[f.Name] {
			w.flags = append(w.flags, "--"+f.Name+"="+f.Value.String())
		}
	})
	return w, nil
}

// workloadFlagHint is the error of a workload's flag given to trace
// before -- (`iopath trace --workload read-1byte --dir /proc`, where pflag
// says "unknown flag: --dir"): it names the command line with the
// workload's flags moved after --. nil when err is no unknown flag of
// trace's, the flag is not a workload's, or args give no --workload.
// args: the command line without the program name.
func workloadFlagHint(c *cobra.Command, err error, args []string) error {
	var ne *pflag.NotExistError
	if c.Name() != "trace" || !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return nil
	}
	wfl := newWorkloadCmd().Flags()
	if wfl.Lookup(ne.GetSpecifiedName()) == nil {
		return nil
	}
	fixed, ok := workloadFlagsAfterDash(c.Flags(), wfl, args)
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: it is a flag of the workload (see iopath workload --help): give the workload's flags after --, as in: %s", err, fixed)
}

// workloadFlagsAfterDash returns the command line args ("trace", then
// its flags) with every flag that trace (tfl) has not and the workload
// (wfl) has moved, with its value, to the front of the arguments after --;
// ok is false when args give no --workload.
func workloadFlagsAfterDash(tfl, wfl *pflag.FlagSet, args []string) (line string, ok bool) {
	var before, moved, after []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			after = args[i+1:]
			break
		}
		// takesNext: the flag's value is the next argument.
		takesNext := func(f *pflag.Flag, inline bool) bool { return !inline && f.NoOptDefVal == "" && i+1 < len(args) }
		to := &before
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, inline := strings.Cut(a[2:], "=")
			f := tfl.Lookup(name)
			if f == nil {
				if f = wfl.Lookup(name); f != nil {
					to = &moved
				}
			}
			ok = ok || name == "workload"
			if f != nil && takesNext(f, inline) {
				*to = append(*to, a)
				i++
				a = args[i]
			}
		case len(a) == 2 && a[0] == '-': // -p PID, -o FILE
			if f := tfl.ShorthandLookup(a[1:]); f != nil && takesNext(f, false) {
				before = append(before, a)
				i++
				a = args[i]
			}
		}
		*to = append(*to, a)
	}
	words := append(append(append(append([]string{"iopath"}, before...), "--"), moved...), after...)
	for i, w := range words {
		words[i] = shellWord(w)
	}
	return strings.Join(words, " "), ok
}

// shellWord quotes w for a POSIX shell when it needs it.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+:,./@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// args returns the traced child's `iopath workload` arguments (the session
// adds --file and --json).
func (w *tracedWorkload) args() []string {
	return append([]string{w.spec.Kind}, w.flags...)
}

// runTraceWorkload is `iopath trace --workload KIND [-- WORKLOAD FLAGS]`.
// --duration and SIGINT/SIGTERM interrupt the workload (it still reports);
// the trace ends when the child exits (after --wait-writeback if given).
func runTraceWorkload(cmd *cobra.Command, f *traceFlags, args []string, sig *session.Signals) (err error) {
	if len(f.pids) > 0 || f.comm != "" {
		return errors.New("--workload traces the workload's own process: drop -p and --comm")
	}
	if n := cmd.ArgsLenAtDash(); n > 0 || n < 0 && len(args) > 0 { // arguments before --
		return fmt.Errorf("unexpected argument %q: put the workload's flags after --, e.g. iopath trace --workload %s -- --count 100", args[0], f.workload)
	}
	w, err := parseTracedWorkload(f.workload, args)
	if err != nil {
		return err
	}
	if err := tracer.Preflight(); err != nil {
		return err
	}
	wout, _, closeOut, err := session.Output(sig, f.output, cmd.OutOrStdout(), cmd.ErrOrStderr(), false)
	if err != nil {
		return err
	}
	defer func() { err = closeOut(err) }()
	res, err := tracerun.RunWorkload(sig, runOptions(cmd, f, tracer.Options{}, wout, nil),
		tracerun.Workload{Spec: w.spec, Args: w.args(), ReportJSON: w.json})
	if err != nil {
		return err
	}
	return exitWith(cmd.ErrOrStderr(), res.Code, res.Note())
}
