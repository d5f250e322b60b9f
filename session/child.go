package session

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is how long a child may take to exit after a forwarded
// SIGINT or SIGTERM before iopath says so on stderr and sends SIGKILL.
const DefaultGrace = 5 * time.Second

// Command is a program to run under the trace. Its standard streams are
// given explicitly (nil: /dev/null).
type Command struct {
	Path   string   // the program (already looked up)
	Args   []string // argv; Args[0] is the name it sees
	Env    []string // nil: this process's environment
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// DeathSignal is sent to the child when iopath dies, even by SIGKILL
	// (prctl PR_SET_PDEATHSIG); 0 sends nothing.
	DeathSignal syscall.Signal
	// Grace is how long the child may take to exit after a forwarded
	// signal before it gets SIGKILL; 0 means DefaultGrace.
	Grace time.Duration
	// Notes receives iopath's lines about the child (it ignored a signal
	// and was killed); nil discards them.
	Notes io.Writer
}

// Status is how a child ended.
type Status struct {
	// Code is the exit status, or 128+signal when a signal ended it.
	Code int
	// Signal is the signal that ended it, 0 if it exited.
	Signal syscall.Signal
	// Sent is the first signal iopath forwarded to the child (0: none);
	// Killed is set when iopath then sent SIGKILL because the child
	// outlived the grace period.
	Sent   syscall.Signal
	Killed bool
	// Err is set when waiting failed (no exit status: Code is 127).
	Err error
}

// Child is a running command started by Exec.
type Child struct {
	Pid int
	// Pgid is the command's own process group (its pid), 0 when it shares
	// iopath's (an interactive run: see group.go).
	Pgid int
	cmd  *exec.Cmd
	name string
	c    Command
	done chan struct{}
	st   Status

	mu     sync.Mutex
	sent   syscall.Signal // first signal forwarded
	sentAt time.Time
	timer  *time.Timer
	killed bool
}

// Exec starts c's process stopped at the exec of the exec gate (ptrace's
// exec stop; execgate.go), calls gate with its pid (the tracer adds it to
// the traced set there), then lets it run: the gate execs the command, so
// none of the program's own IO escapes the trace, not even its execve's
// reads, and none of the caller's gets in. A gate error kills the child.
func Exec(c Command, gate func(pid int) error) (*Child, error) {
	name := c.Path
	if len(c.Args) > 0 {
		name = c.Args[0]
	}
	// ptrace requests must come from the thread that started the child;
	// the parent-death signal also follows that thread, which stays alive
	// (unlocked, back in the runtime's pool) for the life of the process.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	path := c.Path
	if !strings.Contains(path, "/") { // a bare name, as exec.Command takes it: $PATH
		var err error
		if path, err = exec.LookPath(path); err != nil {
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
	}
	own := ownGroup(c.Stdin, c.Stdout, c.Stderr)
	becomeSubreaper() // the command's orphans stay findable (group.go)
	// The child execs the exec gate first (execgate.go), which execs the
	// command once the child is traced; where the kernel refuses to exec
	// the gate's memfd (vm.memfd_noexec), the command itself, as before.
	cmd, answer, err := startGated(c, path, own)
	if err != nil {
		if !errors.Is(err, errGateRefused) {
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
		gateRefusedNote(c.Notes, err)
		cmd = command(c, path, own)
		if err := startKeepingIgnored(cmd.Start); err != nil {
			return nil, startError(name, err)
		}
	}
	if answer != nil {
		defer answer.Close()
	}
	pid := cmd.Process.Pid
	addCommand(pid)
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("starting %s: it did not stop at exec (wait status %v, %w)", name, ws, err)
	}
	if gate != nil {
		if err := gate(pid); err != nil {
			cmd.Process.Kill()
			syscall.PtraceDetach(pid)
			cmd.Wait()
			return nil, err
		}
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("releasing %s after exec: %w", name, err)
	}
	if err := execResult(answer); answer != nil && err != nil {
		cmd.Wait() // the gate exits 127
		return nil, startError(name, err)
	}
	ch := &Child{Pid: pid, cmd: cmd, name: name, c: c, done: make(chan struct{})}
	if own {
		ch.Pgid = pid
	}
	go ch.wait()
	return ch, nil
}

// startError says why the program name could not be exec'd. Its path was
// looked up: ENOENT is then its #! interpreter's.
func startError(name string, err error) error {
	if errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("starting %s: %w: its #! interpreter line names a program that does not exist", name, err)
	}
	return fmt.Errorf("starting %s: %w", name, err)
}

func (ch *Child) wait() {
	err := ch.cmd.Wait()
	ch.mu.Lock()
	if ch.timer != nil {
		ch.timer.Stop()
	}
	sent, at := ch.sent, ch.sentAt
	ch.mu.Unlock()
	if sent != 0 {
		ch.reapGroup(sent, at)
	} else if line := untracedLine(ch.name, groupAlive(ch.Pid, ch.Pgid)); line != "" {
		ch.note("%s\n", line)
	}
	reapAdopted()
	ch.mu.Lock()
	ch.st = statusOf(err)
	ch.st.Sent, ch.st.Killed = ch.sent, ch.killed
	ch.mu.Unlock()
	close(ch.done)
}

// statusOf turns exec's Wait result into a Status.
func statusOf(err error) Status {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return Status{}
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return Status{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
		}
		return Status{Code: ee.ExitCode()}
	}
	return Status{Code: 127, Err: err}
}

// Done is closed when the child has exited.
func (ch *Child) Done() <-chan struct{} { return ch.done }

// Wait waits for the child to exit.
func (ch *Child) Wait() Status {
	<-ch.done
	return ch.st
}

// Interrupt sends sig to the child's process group (the child alone when
// it has none of its own). If the child has not exited Grace after the
// first such signal, iopath says so on Notes and sends SIGKILL to the group
// and to every descendant of the child; survivors are named in one line.
func (ch *Child) Interrupt(sig syscall.Signal) {
	select {
	case <-ch.done:
		return
	default:
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.signal(sig)
	if ch.sent != 0 {
		return
	}
	ch.sent, ch.sentAt = sig, time.Now()
	grace := ch.grace()
	ch.timer = time.AfterFunc(grace, func() {
		select {
		case <-ch.done:
			return
		default:
		}
		ch.mu.Lock()
		ch.killed = true
		ch.mu.Unlock()
		ch.note("iopath: %s (pid %d) is still running %s after %s: sending SIGKILL\n", ch.name, ch.Pid, grace, signame(sig))
		if line := killFamily(ch.Pid, ch.Pgid, survivorWait); line != "" {
			ch.note("%s\n", line)
		}
		ch.cmd.Process.Kill()
	})
}

// survivorWait is how long processes get to die after SIGKILL before
// iopath names the survivors.
const survivorWait = time.Second

func (ch *Child) grace() time.Duration {
	if ch.c.Grace <= 0 {
		return DefaultGrace
	}
	return ch.c.Grace
}

func (ch *Child) note(format string, args ...any) {
	if ch.c.Notes != nil {
		fmt.Fprintf(ch.c.Notes, format, args...)
	}
}

// signal sends sig to the child's group, or to the child alone.
func (ch *Child) signal(sig syscall.Signal) {
	if ch.Pgid > 0 && syscall.Kill(-ch.Pgid, sig) == nil {
		return
	}
	ch.cmd.Process.Signal(sig)
}

// reapGroup, once the child exited after a forwarded signal, gives the
// rest of its process group what is left of the grace period to exit too,
// then sends it SIGKILL (saying so): none of the command's processes runs
// on untraced after iopath ends.
func (ch *Child) reapGroup(sig syscall.Signal, at time.Time) {
	left := groupAlive(ch.Pid, ch.Pgid)
	for _, p := range left {
		if p.pgrp != ch.Pgid || ch.Pgid == 0 {
			syscall.Kill(p.pid, sig) // left the group: the signal did not reach it
		}
	}
	for deadline := at.Add(ch.grace()); len(left) > 0 && time.Now().Before(deadline); left = groupAlive(ch.Pid, ch.Pgid) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(left) == 0 {
		return
	}
	ch.note("iopath: %s of %s (its process group, or descendants that left it) still running %s after %s: sending SIGKILL\n", processes(len(left)), ch.name, ch.grace(), signame(sig))
	if line := killFamily(ch.Pid, ch.Pgid, survivorWait); line != "" {
		ch.note("%s\n", line)
	}
}

// Kill kills the child, its process group and its descendants at once and
// waits for it.
func (ch *Child) Kill() Status {
	if line := killFamily(ch.Pid, ch.Pgid, survivorWait); line != "" {
		ch.note("%s\n", line)
	}
	ch.cmd.Process.Kill()
	return ch.Wait()
}

// signame is SIGINT, SIGTERM, … for the signals a run handles.
func signame(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return fmt.Sprintf("signal %d", int(s))
}
