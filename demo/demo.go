// Package demo holds iopath's demos: classic IO experiments run under the
// tracer and explained with the kernel's numbers. Each file is one demo
// (its set-up, run and explanation) and adds itself to the registry.
package demo

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/session"
)

// Options are what a demo run gets from the command line.
type Options struct {
	// Out gets the explanation (and --json records); after its first failed
	// write no trace starts, and the command ends with its error.
	Out   *session.Out
	Notes io.Writer // iopath's own lines (stderr)
	Dir   string    // where the demo's directory goes ("": DiskBase)
	Keep  bool      // keep the demo's files
	JSON  bool      // print the raw records as JSON Lines after the explanation
	// Tee, if set, wraps the record sink (a --timeline is fed from it);
	// OnSummary, if set, gets the run's summary.
	Tee       func(func(any)) func(any)
	OnSummary func(*record.Summary)
	// Signals of the run (caught before anything loads).
	Signals *session.Signals

	// write-1byte
	Fsync           bool          // fsync after the write
	ExpireCentisecs int           // vm.dirty_expire_centisecs during the demo (0: unchanged)
	Timeout         time.Duration // how long to wait for writeback
}

// Demo is one demo of the registry.
type Demo struct {
	Name  string
	Short string // one line for `iopath demo --help`
	Run   func(o *Options) error
}

var registry = map[string]*Demo{}

func register(d *Demo) { registry[d.Name] = d }

// Get returns the demo called name, or nil.
func Get(name string) *Demo { return registry[name] }

// Names lists the demos, sorted.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// List is one line per demo: its name and what it shows.
func List() string {
	var b strings.Builder
	for _, k := range Names() {
		fmt.Fprintf(&b, "  %-18s %s\n", k, registry[k].Short)
	}
	return b.String()
}
