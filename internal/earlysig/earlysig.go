// Package earlysig starts catching the signals that end an iopath run from
// the package initialization on, before main: a signal that arrives while
// the rest of the program initializes (~3-10 ms: the BPF, Prometheus and
// cobra packages) waits in Ch for the run instead of being lost to an
// inherited SIG_IGN or killing iopath. It imports only the standard
// library, so Go initializes it about as soon as os/signal (Go 1.21's
// package order). Not in test binaries: go test's Ctrl-C and timeouts must
// still end them; the tests' iopath child calls Start from main.
package earlysig

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// Signals end a run cleanly: SIGINT, SIGTERM, SIGHUP and SIGQUIT.
var Signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

var (
	once sync.Once
	// Ch receives Signals from Start on.
	Ch chan os.Signal
	// Ignored are those of SIGHUP and SIGINT that were SIG_IGN at exec.
	// Go's runtime keeps an inherited SIG_IGN only for these two
	// (runtime.sigInstallGoHandler): for SIGQUIT it installs its own handler
	// before any Go code runs, so an ignored SIGQUIT cannot be seen.
	Ignored []os.Signal
)

func init() {
	if !testing.Testing() {
		Start()
	}
}

// Start starts catching Signals into Ch; later calls do nothing.
func Start() {
	once.Do(func() {
		Ch = make(chan os.Signal, 16)
		for _, s := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
			if signal.Ignored(s) {
				Ignored = append(Ignored, s)
			}
		}
		signal.Notify(Ch, Signals...)
	})
}
