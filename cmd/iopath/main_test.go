package main

import (
	"errors"
	"syscall"
	"testing"

	"github.com/iopath/iopath/session"
)

// Breaker: when -o and --timeline both failed (ulimit -f), the second
// line of the joined error lacked the "iopath: " prefix.
func TestErrLinesPrefixesEveryLine(t *testing.T) {
	got := errLines(errors.Join(errors.New("writing -o o.txt: file too large"), errors.New("writing --timeline t.json: file too large")))
	if want := "iopath: writing -o o.txt: file too large\niopath: writing --timeline t.json: file too large"; got != want {
		t.Errorf("said %q, want %q", got, want)
	}
}

// A signal caught after the run computed its status (the breaker's SIGINT
// during `trace -o … --timeline …`'s teardown, or during `doctor`) decides
// the exit status, with a "stopped by" line; one the status already shows
// adds nothing.
func TestExitStatusCaughtSignal(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		caught syscall.Signal
		code   int
		line   string
	}{
		{"no signal", nil, 0, 0, ""},
		{"command status", exitError{code: 3}, 0, 3, ""},
		{"signal after a clean run", nil, syscall.SIGINT, 130, "iopath: stopped by SIGINT: exit status 130"},
		{"SIGTERM after the command's status", exitError{code: 3}, syscall.SIGTERM, 143, "iopath: stopped by SIGTERM: exit status 143"},
		{"SIGHUP", nil, syscall.SIGHUP, 129, "iopath: stopped by SIGHUP: exit status 129"},
		{"SIGQUIT", nil, syscall.SIGQUIT, 131, "iopath: stopped by SIGQUIT: exit status 131"},
		{"status shows it already", exitError{code: 130}, syscall.SIGINT, 130, ""},
		{"interrupted error", session.Interrupted{Signal: syscall.SIGTERM}, syscall.SIGTERM, 143, "iopath: stopped by SIGTERM"},
		{"error then signal", errors.New("boom"), syscall.SIGINT, 130, "iopath: boom\niopath: stopped by SIGINT: exit status 130"},
	}
	for _, c := range cases {
		code, line := runStatus(c.err, c.caught)
		if code != c.code || line != c.line {
			t.Errorf("%s: exit status %d %q, want %d %q", c.name, code, line, c.code, c.line)
		}
	}
}
