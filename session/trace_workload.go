package session

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/workloads"
)

// WorkloadTrace is one `iopath trace --workload KIND -- FLAGS` run: the
// workload's file was prepared in this (untraced) process, and the child
// `iopath workload KIND FLAGS --file=PATH --json` is all that is traced.
type WorkloadTrace struct {
	Args []string  // the child's KIND and flags, without --file and --json
	File *WorkFile // its prepared file
	// Duration interrupts the workload with SIGINT (it reports what it did
	// and the run counts as complete); 0: no limit.
	Duration time.Duration
	// WaitWriteback, after a successful workload, keeps tracing until its
	// dirty pages reach the disk or this much time passed.
	WaitWriteback time.Duration
	// Stop interrupts the workload with SIGINT when closed (the output
	// failed); nil: never.
	Stop <-chan struct{}
}

// WorkloadResult is how a traced workload ended.
type WorkloadResult struct {
	Result
	Report *workloads.Report // nil when it printed none
	Record *record.Workload
}

// TraceWorkload runs w to its end. SIGINT and SIGTERM reach the workload as
// they came (it reports what it did), and end with 130 or 143.
func (s *Session) TraceWorkload(w WorkloadTrace) (WorkloadResult, error) {
	var res WorkloadResult
	ch, err := s.StartWorkload(append(append([]string(nil), w.Args...), "--file="+w.File.Path))
	if err != nil {
		s.End()
		return res, err
	}
	var timeout <-chan time.Time
	if w.Duration > 0 {
		tm := time.NewTimer(w.Duration)
		defer tm.Stop()
		timeout = tm.C
	}
	timedOut, stopped := false, false
	select {
	case <-ch.Done():
	case <-timeout:
		timedOut = true
		ch.Interrupt(syscall.SIGINT)
	case <-w.Stop:
		stopped = true
		ch.Interrupt(syscall.SIGINT)
	case <-s.ran:
		ch.Kill()
	}
	rep, st, err := ch.Report()
	if err != nil {
		s.End()
		return res, err
	}
	if w.WaitWriteback > 0 && st.Code == 0 && s.sig.Signal() == 0 && !stopped {
		WaitWriteback(s.sig.Context(), s.T, w.WaitWriteback, s.o.Notes)
	}
	sum, err := s.End()
	if err != nil {
		return res, err
	}
	w.File.Annotate(rep)
	res.Summary, res.Command, res.Signal, res.Report = sum, &st, s.sig.Signal(), rep
	res.Record = WorkloadRecord(sum, uint32(ch.Pid), w.File, rep, &s.persist, w.File.CachedNow())
	res.Code = ExitCode(res.Signal, &st)
	if timedOut && res.Signal == 0 && st.Signal == 0 && st.Code == 128+int(syscall.SIGINT) && rep != nil && rep.Interrupted {
		res.Code = 0 // interrupted at --duration, as asked
	}
	return res, nil
}

// WorkloadRun is one `iopath workload` run of a demo: its arguments, the
// file prepared for it, and, once traced, its pid and report.
type WorkloadRun struct {
	Args   []string // KIND and flags, without --file and --json
	File   *WorkFile
	Pid    uint32
	Report *workloads.Report
}

// RunWorkloads traces the runs one after another (the BPF programs load
// once) and ends the session: the summary comes back. A signal interrupts
// the running child and ends with Interrupted.
func (s *Session) RunWorkloads(runs []*WorkloadRun) (*WorkloadRunsResult, error) {
	var err error
	for _, r := range runs {
		if err = s.runWorkload(r); err != nil {
			break
		}
	}
	sum, endErr := s.End()
	if err == nil {
		err = endErr
	}
	if err != nil {
		return nil, err
	}
	return &WorkloadRunsResult{Summary: sum, s: s}, nil
}

// WorkloadRunsResult is the summary of a demo's runs.
type WorkloadRunsResult struct {
	Summary *record.Summary
	s       *Session
}

// Record is the "workload" record of run r (after: its file's residency at the end, or nil).
func (w *WorkloadRunsResult) Record(r *WorkloadRun, after *workloads.Residency) *record.Workload {
	return WorkloadRecord(w.Summary, r.Pid, r.File, r.Report, &w.s.persist, after)
}

func (s *Session) runWorkload(r *WorkloadRun) error {
	if sig := s.sig.Signal(); sig != 0 {
		return Interrupted{Signal: sig}
	}
	c, err := s.StartWorkload(append(append([]string(nil), r.Args...), "--file="+r.File.Path))
	if err != nil {
		return err
	}
	rep, st, err := c.Report()
	switch {
	case s.sig.Signal() != 0:
		return Interrupted{Signal: s.sig.Signal()}
	case err != nil:
		return err
	case st.Code != 0 || rep == nil:
		return fmt.Errorf("`iopath workload %s --file=%s` failed (exit status %d)", strings.Join(r.Args, " "), r.File.Path, st.Code)
	}
	r.File.Annotate(rep)
	r.Pid, r.Report = uint32(c.Pid), rep
	return nil
}

// ErrNoReport is returned when a traced workload exited 0 without a report.
var ErrNoReport = errors.New("the workload printed no report")
