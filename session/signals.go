package session

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Signals catches SIGINT and SIGTERM for a whole run. Call Catch first,
// before any BPF object loads: a signal that arrives while the hooks attach
// is then kept and ends the run as soon as it can, instead of being lost
// (Go's signal.Notify also re-enables a SIGINT the process started with
// ignored, as a shell's background job does) or killing iopath with its work
// files left behind. Every signal received is also sent to the children
// registered with forward, so a traced command never runs on untraced.
type Signals struct {
	ch    chan os.Signal
	stop  chan struct{}
	fired chan struct{} // closed at the first signal
	ctx   context.Context

	mu    sync.Mutex
	first syscall.Signal
	kids  map[*Child]bool
}

// Catch starts catching SIGINT and SIGTERM; Stop ends it.
func Catch() *Signals {
	s := &Signals{ch: make(chan os.Signal, 4), stop: make(chan struct{}), fired: make(chan struct{}), kids: map[*Child]bool{}}
	var cancel context.CancelFunc
	s.ctx, cancel = context.WithCancel(context.Background())
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for {
			select {
			case v := <-s.ch:
				sig := v.(syscall.Signal)
				s.mu.Lock()
				if s.first == 0 {
					s.first = sig
					close(s.fired)
					cancel()
				}
				var kids []*Child
				for c := range s.kids {
					kids = append(kids, c)
				}
				s.mu.Unlock()
				for _, c := range kids {
					c.Interrupt(sig)
				}
			case <-s.stop:
				cancel()
				return
			}
		}
	}()
	return s
}

// Stop stops catching: the signals get their default action again.
func (s *Signals) Stop() {
	signal.Stop(s.ch)
	close(s.stop)
}

// Fired is closed when the first SIGINT or SIGTERM arrives.
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
