// Package session runs one traced run, the same way for `iopath trace`, the
// demos and `iopath trace --workload`: catch SIGINT, SIGTERM, SIGHUP and
// SIGQUIT from the start of main (CatchEarly), load and attach the tracer, start each child stopped at
// its execve and release it only once it is in the traced set, forward
// signals to the children (SIGKILL after a grace period if they ignore
// them), wait for writeback, settle, and turn the end into an exit status.
//
// Exit status of a run (ExitCode): 128+signal when iopath got SIGINT (130),
// SIGTERM (143), SIGHUP (129) or SIGQUIT (131), after the summary; otherwise the command's status, with
// 128+signal when a signal ended the command (137 after SIGKILL); 0 when
// there is no command (-p, --comm).
package session
