package topview

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/iopath/iopath/aggregate"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
)

// Options configure Run (`iopath top`).
type Options struct {
	Out      io.Writer // the JSON objects, or the terminal UI
	TTY      bool      // Out is a terminal: the UI; otherwise one JSON object per interval
	Notes    io.Writer // iopath's own lines (stderr)
	By       By        // the UI's first row kind
	Sort     SortKey
	Rows     int // rows per kind in the JSON (0: all)
	Interval time.Duration
	Title    string // what is traced, in the UI's header
}

// settleWait bounds how long the end waits for the requests still in
// flight to be counted (aggregate.Reader.Settled).
const settleWait = 2 * time.Second

// Run traces tr on s and shows the aggregates every o.Interval: in the
// terminal UI, or as one JSON object per interval ("interval") and one
// over the whole run ("total", once the last requests are counted). Exited
// processes stay rows of the interval they exited in. q in the UI, or a
// closed output, ends the run as --duration does: the command gets
// SIGTERM; without a command the trace stops.
func Run(s *session.Session, tr session.Trace, o Options) (session.Result, error) {
	return run(&tracerSource{t: s.T, rd: aggregate.NewReader(s.T.AggMaps())}, s.Trace, tr, o)
}

// source is what run reads: a tracer's maps (tracerSource), or a test's
// snapshots.
type source interface {
	Read() (*aggregate.Snapshot, error)
	// Final reads once the last requests are counted.
	Final() (*aggregate.Snapshot, error)
	// Losses are the records lost and the program runs missed, since the start.
	Losses() (lost uint64, missed map[string]uint64)
}

type tracerSource struct {
	t  *tracer.Tracer
	rd *aggregate.Reader
}

func (ts *tracerSource) Read() (*aggregate.Snapshot, error) { return ts.rd.Read() }
func (ts *tracerSource) Final() (*aggregate.Snapshot, error) {
	return ts.rd.Settled(tracer.MonotonicNow(), settleWait)
}
func (ts *tracerSource) Losses() (uint64, map[string]uint64) {
	return ts.t.Counters()["ringbuf_lost"], ts.t.MissedRuns()
}

// shower shows one interval (typ "interval") or the total (typ "total").
type shower func(typ string, d, cur *aggregate.Snapshot, lost uint64, missed map[string]uint64)

func run(src source, trace func(session.Trace) (session.Result, error), tr session.Trace, o Options) (session.Result, error) {
	first, err := src.Read()
	if err != nil {
		return session.Result{}, err
	}
	quit := stopper(&tr)
	show, done := output(o, quit)
	type ended struct {
		res session.Result
		err error
	}
	end := make(chan ended, 1)
	go func() {
		res, err := trace(tr)
		end <- ended{res, err}
	}()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	prev, total := first, aggregate.NewInterval(first.At)
	interval := func(cur *aggregate.Snapshot) {
		d := aggregate.Delta(prev, cur)
		total.Accumulate(d)
		lost, missed := src.Losses()
		show("interval", d, cur, lost, missed)
		prev = cur
	}
	for {
		select {
		case <-tick.C:
			cur, err := src.Read()
			if err != nil {
				quit()
				<-end
				done()
				return session.Result{}, err
			}
			interval(cur)
		case e := <-end:
			cur, rerr := src.Final()
			if rerr == nil {
				interval(cur)
				lost, missed := src.Losses()
				show("total", total, cur, lost, missed)
			}
			done()
			if e.err == nil && rerr != nil {
				e.err = rerr
			}
			return e.res, e.err
		}
	}
}

// stopper makes tr stoppable and returns what stops it: SIGTERM to the
// command once it runs, or, without one, the close of tr.Stop. Before the
// command runs it does nothing (a signal still ends the run then).
func stopper(tr *session.Trace) func() {
	stop := make(chan struct{})
	started := make(chan struct{})
	var child *session.Child
	tr.Stop = stop
	if tr.Command != nil {
		next := tr.Started
		tr.Started = func(ch *session.Child) {
			child = ch
			if next != nil {
				next(ch)
			}
			close(started)
		}
	} else {
		close(started)
	}
	var once sync.Once
	return func() {
		select {
		case <-started:
		default:
			return
		}
		once.Do(func() {
			if child != nil {
				child.Interrupt(syscall.SIGTERM)
			} else {
				close(stop)
			}
		})
	}
}

// output returns how an interval is shown: JSON lines (a closed output
// quits), or the terminal UI (started here); done ends the UI.
func output(o Options, quit func()) (show shower, done func()) {
	if !o.TTY {
		enc := json.NewEncoder(o.Out)
		return func(typ string, d, cur *aggregate.Snapshot, lost uint64, missed map[string]uint64) {
			if err := enc.Encode(Build(typ, d, cur, o.Sort, o.Rows, lost, missed)); err != nil {
				quit() // the caller reports the output's error (session.Out)
			}
		}, func() {}
	}
	m := NewModel(o.By, o.Sort, o.Title, o.Interval, quit)
	p := tea.NewProgram(m, tea.WithOutput(o.Out))
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if _, err := p.Run(); err != nil && o.Notes != nil {
			fmt.Fprintln(o.Notes, "iopath: terminal UI:", err)
		}
		quit()
	}()
	return func(typ string, d, cur *aggregate.Snapshot, lost uint64, missed map[string]uint64) {
			if typ == "interval" {
				p.Send(&Sample{D: d, Cur: cur, Lost: lost, Missed: missed})
			}
		}, func() {
			p.Quit()
			<-ran
		}
}
