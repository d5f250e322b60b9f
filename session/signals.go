package session

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/iopath/iopath/internal/earlysig"
)

// Signals catches SIGINT, SIGTERM, SIGHUP and SIGQUIT (endSignals) for a
// whole run. main calls CatchEarly first; Catch, before any BPF object
// loads, then takes the signals received since (a signal that arrived while
// the flags were parsed or the hooks attach is kept and ends the run as
// soon as it can, instead of being lost or killing iopath with its work
// files left behind). Every signal received is also sent to the children
// registered with forward, so a traced command never runs on untraced.
type Signals struct {
	ch     chan os.Signal
	stop   chan struct{}
	fired  chan struct{} // closed at the first signal
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	first syscall.Signal
	kids  map[*Child]bool
}

// Catch starts catching the end signals (CatchEarly if main did not) and
// takes at once any received before; Stop ends it.
func Catch() *Signals {
	CatchEarly()
	s := &Signals{ch: earlysig.Ch, stop: make(chan struct{}), fired: make(chan struct{}), kids: map[*Child]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	signal.Notify(s.ch, endSignals...) // again, after an earlier run's Stop
	// Signals that came before Catch: taken now, so that the run's first
	// check (Session.Open) sees them.
	takePending(s.ch, s.got)
	go func() {
		for {
			select {
			case v := <-s.ch:
				s.got(v.(syscall.Signal))
			case <-s.stop:
				s.cancel()
				return
			}
		}
	}()
	return s
}

// got records sig (the first one ends the run) and sends it to the children.
func (s *Signals) got(sig syscall.Signal) {
	caught.CompareAndSwap(0, int32(sig))
	s.mu.Lock()
	if s.first == 0 {
		s.first = sig
		close(s.fired)
		s.cancel()
	}
	var kids []*Child
	for c := range s.kids {
		kids = append(kids, c)
	}
	s.mu.Unlock()
	for _, c := range kids {
		c.Interrupt(sig)
	}
}

// Stop stops catching: the signals get the action iopath started with
// again (SIG_IGN if inherited so, else their default).
func (s *Signals) Stop() {
	signal.Stop(s.ch)
	close(s.stop)
	// A signal delivered before signal.Stop but not yet taken by the
	// goroutine (it came during the teardown) still counts: Caught sees it.
	takePending(s.ch, s.got)
}

// caught is the first end signal iopath received in the whole process
// (any run's Signals, or one nobody took from earlysig.Ch), 0 if none.
var caught atomic.Int32

// Caught is the first end signal iopath caught, also one that came after
// the run had computed its exit status (during the output's or timeline's
// teardown, or in a command that never checks for signals): main gives
// 128+N for it, so the exit status never ignores a caught signal. It stops
// the catching first (a later signal gets its default action and ends
// iopath with 128+N itself): call it once, as iopath exits.
func Caught() syscall.Signal {
	if earlysig.Ch != nil {
		signal.Stop(earlysig.Ch) // waits for signals already being delivered
	}
	takePending(earlysig.Ch, func(sig syscall.Signal) { caught.CompareAndSwap(0, int32(sig)) })
	return syscall.Signal(caught.Load())
}

// takePending passes every signal waiting in ch to got, without blocking.
func takePending(ch chan os.Signal, got func(syscall.Signal)) {
	for {
		select {
		case v := <-ch:
			got(v.(syscall.Signal))
		default:
			return
		}
	}
}

// Fired is closed when the first end signal arrives.
func (s *Signals) Fired() <-chan struct{} { return s.fired }

// Context is cancelled when the first signal arrives.
func (s *Signals) Context() context.Context { return s.ctx }

// Signal is the first signal received, 0 if none.
func (s *Signals) Signal() syscall.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// forward sends every later signal to c (and the first one at once if it
// already came: c then starts into an ending run), until c exits.
func (s *Signals) forward(c *Child) {
	s.mu.Lock()
	s.kids[c] = true
	first := s.first
	s.mu.Unlock()
	if first != 0 {
		c.Interrupt(first)
	}
	go func() {
		<-c.done
		s.mu.Lock()
		delete(s.kids, c)
		s.mu.Unlock()
	}()
}
