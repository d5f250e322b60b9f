package session

import (
	"fmt"
	"syscall"
)

// ExitCode is iopath's exit status for a run that received sig (0: none)
// and whose command ended with cmd (nil: no command, as with -p or --comm):
// 128+sig after SIGINT (130) or SIGTERM (143), whatever the command did
// with the forwarded signal; else the command's status (128+signal when a
// signal ended it, e.g. 137 after SIGKILL); else 0.
func ExitCode(sig syscall.Signal, cmd *Status) int {
	switch {
	case sig != 0:
		return 128 + int(sig)
	case cmd != nil:
		return cmd.Code
	}
	return 0
}

// ExitNote is the line iopath prints on stderr after the summary when a
// signal or a killed command decides its exit status ("" otherwise).
func ExitNote(sig syscall.Signal, cmd *Status) string {
	switch {
	case cmd != nil && cmd.Killed:
		return fmt.Sprintf("iopath: the command did not exit after %s and was killed with SIGKILL: exit status %d", signame(cmd.Sent), ExitCode(sig, cmd))
	case sig != 0:
		return fmt.Sprintf("iopath: stopped by %s: exit status %d", signame(sig), ExitCode(sig, cmd))
	}
	return ""
}

// Interrupted is the error of a run that a signal ended early: before the
// trace started (Early: it came while the hooks attached or a file was
// prepared, nothing was traced), or in a demo's runs.
type Interrupted struct {
	Signal syscall.Signal
	Early  bool
}

func (e Interrupted) Error() string {
	if e.Early {
		return fmt.Sprintf("stopped by %s before the trace started: nothing traced", signame(e.Signal))
	}
	return "stopped by " + signame(e.Signal)
}

// ExitCode is 128+signal.
func (e Interrupted) ExitCode() int { return 128 + int(e.Signal) }
