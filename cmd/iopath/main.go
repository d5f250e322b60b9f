// Command iopath traces Linux IO per system call: page-cache hits and misses,
// readahead, block requests, dirty pages, throttling and writeback.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
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
		return fmt.Errorf("%w: see `%s --help` for the flag's format", err, c.CommandPath())
	})
	root.SetArgs(args)
	return root
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
	err := newRootCmd(os.Args[1:]).Execute()
	stopProfile()
	if err == nil {
		return
	}
	var ee exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	var oe session.OutputError
	if errors.As(err, &oe) && oe.Broken() {
		os.Exit(oe.ExitCode()) // 141, quietly: the reader went away (| head)
	}
	sayError(os.Stderr, err)
	var ie session.Interrupted
	if errors.As(err, &ie) {
		os.Exit(ie.ExitCode()) // 130 or 143
	}
	if errors.As(err, &oe) {
		os.Exit(oe.ExitCode()) // 1
	}
	os.Exit(1)
}

// sayError prints err on w, each of its lines (errors.Join puts one error
// a line) prefixed with "iopath: ".
func sayError(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "iopath: "+line)
	}
}
