package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer"
)

// Options configure a Session.
type Options struct {
	Tracer tracer.Options
	// Record receives every record, on the tracer's reading goroutine.
	Record func(any)
	// Idle is called whenever the ring buffer is empty (flush output
	// there); it returns when it wants to be called again (Tracer.Idle).
	Idle func() time.Time
	// Attached is called once the hooks are attached, before the reading
	// starts (to say which mechanism each hook uses).
	Attached func(*tracer.Tracer)
	// Settle is how long the end waits for bios still in flight.
	Settle time.Duration
	// Notes receives iopath's own lines (stderr).
	Notes io.Writer
	// PidsOnly: the run traces only the -p pids (no command, no comm), so
	// Open fails if every one of them exited while the hooks attached.
	// Either way it says which did.
	PidsOnly bool
}

// Session is a loaded tracer reading its ring buffer, with the signals
// of the run.
type Session struct {
	T      *tracer.Tracer
	sig    *Signals
	o      Options
	cancel context.CancelFunc
	runErr chan error
	ran    chan struct{} // closed when Run returned
	err    error
	ended  bool
	// persist counts the "persisted" records, for the workload records.
	persist PersistCounts
}

// Open loads and attaches the tracer and starts reading. A signal that came
// while it attached ends it at once with Interrupted (the hooks detach).
func Open(sig *Signals, o Options) (*Session, error) {
	if o.Notes == nil {
		o.Notes = io.Discard
	}
	if err := interrupted(sig); err != nil {
		return nil, err
	}
	if err := CheckPidNamespace(); err != nil {
		return nil, err
	}
	RestoreStaleSysctls(o.Notes)
	s := &Session{sig: sig, o: o, runErr: make(chan error, 1), ran: make(chan struct{})}
	topts := o.Tracer
	topts.Stop = sig.Fired() // a signal stops the loading: the run ends without waiting for every program's verifier
	t, err := tracer.New(topts, func(r any) {
		s.persist.Add(r)
		if o.Record != nil {
			o.Record(r)
		}
	})
	if err != nil {
		if ierr := interrupted(sig); ierr != nil && errors.Is(err, tracer.ErrStopped) {
			return nil, ierr
		}
		return nil, err
	}
	if err := interrupted(sig); err != nil {
		t.Close()
		return nil, err
	}
	// The -p pids are checked now that the hooks are attached, before the
	// caller says it is ready (--ready-file): a process that exits after
	// that signal was traced to its exit. Checked at Trace instead, a
	// reaper that did its IO and exited right after the ready file failed
	// the run with "exited before tracing started" (the 5.10 VM, 4 VMs on 2
	// cores, TestTraceAioReaperBeforeTrace, 2026-12-07).
	if err := exitedBefore(o.Tracer.Pids, o.Notes, o.PidsOnly); err != nil {
		t.Close()
		return nil, err
	}
	s.T = t
	t.Idle = o.Idle
	t.Notes = o.Notes
	if o.Attached != nil {
		o.Attached(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		s.runErr <- t.Run(ctx, o.Settle)
		close(s.ran)
	}()
	return s, nil
}

// interrupted is Interrupted if a signal has come.
func interrupted(sig *Signals) error {
	if s := sig.Signal(); s != 0 {
		return Interrupted{Signal: s, Early: true}
	}
	return nil
}

// Exec starts c as a traced child (see Exec) that gets every signal the
// run receives.
func (s *Session) Exec(c Command) (*Child, error) {
	if c.Notes == nil {
		c.Notes = s.o.Notes
	}
	ch, err := Exec(c, s.T.AddPid)
	if err != nil {
		return nil, err
	}
	s.sig.forward(ch)
	return ch, nil
}

// Failed is closed when reading the ring buffer failed (End returns why).
func (s *Session) Failed() <-chan struct{} { return s.ran }

// End stops reading (after Settle for bios in flight) and returns the
// summary, read once: it folds the kernel's hit counters in.
func (s *Session) End() (*record.Summary, error) {
	if !s.ended {
		s.ended = true
		s.cancel()
		s.err = <-s.runErr
	}
	if s.err != nil {
		return nil, s.err
	}
	return s.T.Summary(), nil
}

// Close detaches the hooks and frees the BPF objects.
func (s *Session) Close() {
	s.cancel()
	if !s.ended {
		<-s.ran
	}
	s.T.Close()
}

// Trace is one `iopath trace` run.
type Trace struct {
	// Command is traced until it exits; nil traces the Session's pids or
	// comm until Duration, a signal, Stop, or the exit of every one of Pids.
	Command *Command
	Pids    []int
	// Duration ends the run (0: no limit); a Command then gets SIGTERM,
	// and SIGKILL after its Grace.
	Duration time.Duration
	// WaitWriteback, after the command exited, keeps tracing until its
	// dirty pages reach the disk or this much time passed.
	WaitWriteback time.Duration
	// Stop ends the run when closed (the output failed): a Command then
	// gets SIGTERM (SIGKILL after its Grace), as at Duration; nil: never.
	Stop <-chan struct{}
	// Started, if set, is called once the command runs.
	Started func(*Child)
}

// Result is how a run ended.
type Result struct {
	Summary *record.Summary
	Command *Status        // nil without a command
	Signal  syscall.Signal // the first SIGINT or SIGTERM received, 0 if none
	Code    int            // iopath's exit status (ExitCode)
}

// Note is the line to print on stderr after the summary ("" if none).
func (r Result) Note() string { return ExitNote(r.Signal, r.Command) }

// Trace runs tr to its end and returns the summary and exit status.
func (s *Session) Trace(tr Trace) (Result, error) {
	var timeout <-chan time.Time
	if tr.Duration > 0 {
		tm := time.NewTimer(tr.Duration)
		defer tm.Stop()
		timeout = tm.C
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var res Result
	stopped := false
	if tr.Command != nil {
		ch, err := s.Exec(*tr.Command)
		if err != nil {
			s.End()
			return res, err
		}
		if tr.Started != nil {
			tr.Started(ch)
		}
		select {
		case <-ch.Done():
		case <-timeout:
			fmt.Fprintf(s.o.Notes, "iopath: --duration %s reached: sending SIGTERM to %s (pid %d)\n", tr.Duration, ch.name, ch.Pid)
			ch.Interrupt(syscall.SIGTERM)
		case <-tr.Stop:
			stopped = true
			ch.Interrupt(syscall.SIGTERM)
		case <-s.ran:
			ch.Kill()
		}
		st := ch.Wait()
		res.Command = &st
		if tr.WaitWriteback > 0 && s.sig.Signal() == 0 && !stopped {
			WaitWriteback(s.sig.Context(), s.T, tr.WaitWriteback, s.o.Notes)
		}
	} else {
		select {
		case <-s.sig.Fired():
		case <-timeout:
		case <-tr.Stop:
		case <-allExited(ctx, tr.Pids):
		case <-s.ran:
		}
	}
	sum, err := s.End()
	if err != nil {
		return res, err
	}
	res.Summary, res.Signal = sum, s.sig.Signal()
	res.Code = ExitCode(res.Signal, res.Command)
	return res, nil
}

// exitedBefore checks, once the hooks are attached (Open), that the -p pids
// still run: one that exited while they attached was never traced. Each such pid
// gets a line on notes; if none is left and the run traces nothing else
// (pidsOnly) it ends with an error (exit 1) instead of an empty summary.
func exitedBefore(pids []int, notes io.Writer, pidsOnly bool) error {
	var gone []int
	for _, pid := range pids {
		if exited(pid) {
			gone = append(gone, pid)
		}
	}
	if len(gone) == 0 || len(gone) < len(pids) || !pidsOnly {
		for _, pid := range gone {
			fmt.Fprintf(notes, "iopath: -p %d exited before tracing started (while the hooks attached): nothing of it traced\n", pid)
		}
		return nil
	}
	if len(gone) == 1 {
		return fmt.Errorf("-p %d exited before tracing started (while the hooks attached): nothing traced; give a running process", gone[0])
	}
	return fmt.Errorf("-p %v: every process exited before tracing started (while the hooks attached): nothing traced; give running processes", gone)
}

// allExited is closed once every pid has exited (never without pids): a
// zombie with no thread left has.
func allExited(ctx context.Context, pids []int) <-chan struct{} {
	done := make(chan struct{})
	if len(pids) == 0 {
		return done
	}
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			alive := false
			for _, pid := range pids {
				if !exited(pid) {
					alive = true
				}
			}
			if !alive {
				close(done)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return done
}
