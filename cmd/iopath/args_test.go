package main

import (
	"strings"
	"testing"
)

// A new user's typo or stray argument is one line naming the cause and
// the fix, with a non-zero status. Before: `iopath trcae` printed five
// lines (cobra's "Did you mean this?" block, each prefixed, two of them
// empty), `iopath serve extra` named no fix, and `iopath doctor extra`
// and `iopath demo read-1byte extra` ran as if the argument were not
// there (exit 0).
func TestStrayArgumentsOneLine(t *testing.T) {
	cases := []struct {
		args []string
		want []string // in the one line
	}{
		{[]string{"trcae"}, []string{`unknown command "trcae"`, `did you mean "trace"?`, "`iopath --help`"}},
		{[]string{"nosuch"}, []string{`unknown command "nosuch"`, "`iopath --help`"}},
		{[]string{"doctor", "extra"}, []string{`drop "extra"`, "`iopath doctor` takes no arguments"}},
		{[]string{"serve", "extra"}, []string{`drop "extra"`, "`iopath serve` takes no arguments"}},
		{[]string{"demo", "read-1byte", "extra"}, []string{`"extra"`, "one demo name"}},
	}
	for _, c := range cases {
		name := "iopath " + strings.Join(c.args, " ")
		root := newRootCmd(c.args)
		// Only the argument check runs: a command's RunE would trace
		// (as root) or, for a demo, re-run this test binary as its child.
		cmd, rest, err := root.Find(c.args)
		if err == nil && cmd != root {
			err = cmd.ValidateArgs(rest)
			if err == nil {
				t.Errorf("%s: the arguments were accepted", name)
				continue
			}
		}
		code, line := errStatus(argError(root, err))
		if code == 0 {
			t.Errorf("%s: exit status 0, want non-zero", name)
			continue
		}
		if strings.Contains(line, "\n") || !strings.HasPrefix(line, "iopath: ") {
			t.Errorf("%s: said %q, want one line", name, line)
		}
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: said %q, want it to contain %q", name, line, w)
			}
		}
	}
}

// execute goes through argError: main's path for `iopath trcae` (the root
// has no RunE, so nothing runs).
func TestExecuteUnknownCommandOneLine(t *testing.T) {
	_, line := errStatus(execute([]string{"trcae"}))
	if want := "iopath: unknown command \"trcae\": did you mean \"trace\"? `iopath --help` lists the commands"; line != want {
		t.Errorf("said %q, want %q", line, want)
	}
}

// `iopath help trcae` printed cobra's "Unknown help topic" and the whole
// usage (15 lines on stderr) with exit status 0; `iopath help trace` still
// prints trace's help.
func TestHelpUnknownTopicOneLine(t *testing.T) {
	code, line := errStatus(execute([]string{"help", "trcae"}))
	if want := "iopath: unknown command \"trcae\": did you mean \"trace\"? `iopath --help` lists the commands"; code != 1 || line != want {
		t.Errorf("exit status %d, said %q; want 1, %q", code, line, want)
	}
	var out strings.Builder
	root := newRootCmd([]string{"help", "trace"})
	root.SetOut(&out)
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "iopath trace [-p PID]") {
		t.Errorf("help trace: %v, printed %q", err, out.String())
	}
}
