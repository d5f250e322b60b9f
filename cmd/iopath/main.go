// Command iopath traces Linux IO per system call: page-cache hits and misses,
// readahead, block requests, dirty pages, throttling and writeback.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/iopath/iopath/internal/runtimetune"
	"github.com/iopath/iopath/session"
	"github.com/spf13/cobra"
)

// exitError carries a process exit status through cobra without printing twice.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// newRootCmd is iopath's command line, args without the program name.
func newRootCmd(args []string) *cobra.Command {
	root := &cobra.Command{
		Use:           "iopath",
		Short:         "Trace what each read/write system call did in the page cache and on the disk",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	// A value cobra cannot parse (e.g. --duration abc): say which flag and
	// where its format is, not only the parser's words; a workload's flag
	// before trace's --: where it goes.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if hint := workloadFlagHint(c, err, args); hint != nil {
			return hint
		}
		if strings.HasPrefix(err.Error(), "unknown ") { // cobra: unknown flag / unknown shorthand flag
			return fmt.Errorf("%w: `%s --help` lists the flags it takes", err, c.CommandPath())
		}
		return fmt.Errorf("%s: see `%s --help` for the flag's format", plainParseError(err), c.CommandPath())
	})
	// cobra's help command answers a topic it does not know with the whole
	// usage on stderr and exit status 0: one line and status 1 instead.
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, topic []string) error {
			cmd, _, err := root.Find(topic) // `help demo read-1byte`: demo's help, as before
			if err != nil {
				return argError(root, err)
			}
			return cmd.Help()
		},
	})
	root.SetArgs(args)
	return root
}

// execute runs iopath's command line, args without the program name.
func execute(args []string) error {
	root := newRootCmd(args)
	return argError(root, root.Execute())
}

// unknownCommand is cobra's error for an argument that names no command
// (`iopath trcae`) or that a command without arguments got (`iopath doctor x`).
var unknownCommand = regexp.MustCompile(`^unknown command ("(?:[^"\\]|\\.)*") for ("(?:[^"\\]|\\.)*")`)

// argError says cobra's unknown-command error in one line with the fix:
// cobra puts its "Did you mean this?" on four more lines (two of them
// empty) and names no fix for a stray argument.
func argError(root *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	m := unknownCommand.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	name, err1 := strconv.Unquote(m[1])
	path, err2 := strconv.Unquote(m[2])
	if err1 != nil || err2 != nil {
		return err
	}
	if path == root.Name() {
		if s := root.SuggestionsFor(name); len(s) > 0 {
			return fmt.Errorf("unknown command %q: did you mean %q? `%s --help` lists the commands", name, s[0], path)
		}
		return fmt.Errorf("unknown command %q: `%s --help` lists the commands", name, path)
	}
	return fmt.Errorf("`%s` takes no arguments: drop %q (`%s --help` lists its flags)", path, name, path)
}

// subcommands is filled by each command's file in init, so commands stay in their own files.
var subcommands []func() *cobra.Command

func main() {
	// First of all: a SIGINT, SIGTERM, SIGHUP or SIGQUIT from now on ends
	// the run cleanly, even one that comes while the flags are parsed or
	// the hooks attach (the run's session.Catch takes it).
	session.CatchEarly()
	// `iopath … | head`: keep running on EPIPE instead of dying from SIGPIPE,
	// so that temp files are removed and BPF objects closed. Caught, not
	// ignored: an ignored SIGPIPE would be inherited by the traced command,
	// which must die of it as it would untraced.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	runtimetune.GC()
	stopProfile := runtimetune.StartProfile()
	err := execute(os.Args[1:])
	stopProfile()
	code, line := runStatus(err, session.Caught())
	if line != "" {
		fmt.Fprintln(os.Stderr, line)
	}
	os.Exit(code)
}

// runStatus is iopath's exit status for the run's error and the first
// end signal caught (session.Caught), with the line to print on stderr.
// A signal that the run's status does not show (it came after the run
// computed it: while the output, timeline or files were finished, or
// during `doctor`) still decides the status, 128+N, with a line saying so.
func runStatus(err error, caught syscall.Signal) (int, string) {
	code, line := errStatus(err)
	if caught == 0 || code == 128+int(caught) {
		return code, line
	}
	late := session.ExitNote(caught, nil)
	if line != "" {
		late = line + "\n" + late
	}
	return 128 + int(caught), late
}

// errStatus is the exit status and stderr line for the run's error.
func errStatus(err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code, ""
	}
	var oe session.OutputError
	if errors.As(err, &oe) && oe.Broken() {
		return oe.ExitCode(), "" // 141, quietly: the reader went away (| head)
	}
	line := errLines(err)
	var ie session.Interrupted
	if errors.As(err, &ie) {
		return ie.ExitCode(), line // 130 or 143
	}
	if errors.As(err, &oe) {
		return oe.ExitCode(), line // 1
	}
	return 1, line
}

// errLines is err for stderr: each of its lines (errors.Join puts one
// error a line) prefixed with "iopath: ".
func errLines(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = "iopath: " + l
	}
	return strings.Join(lines, "\n")
}

// plainParseError says a number flag's refusal in words, not Go's:
// `invalid argument "abc" for "-p, --pid" flag: strconv.Atoi: parsing
// "abc": invalid syntax` becomes `... flag: not a whole number`.
func plainParseError(err error) string {
	var ne *strconv.NumError
	if !errors.As(err, &ne) {
		return err.Error()
	}
	what := "not a number"
	switch {
	case errors.Is(ne.Err, strconv.ErrRange):
		what = "out of range"
	case ne.Func == "ParseUint":
		what = "not a whole number of 0 or more"
	case ne.Func == "ParseInt" || ne.Func == "Atoi":
		what = "not a whole number"
	}
	msg := err.Error()
	if i := strings.Index(msg, "strconv."+ne.Func+":"); i >= 0 {
		return msg[:i] + what
	}
	return msg
}
