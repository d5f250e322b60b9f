package session

import (
	"io"

	"github.com/iopath/iopath/tracer"
)

// OpenAggregates opens a session whose tracer keeps only the in-kernel
// aggregates (`iopath top`, `iopath serve`: no record per call) of pids,
// comm, the command's process (withCommand), or, with none of them, of
// every process but iopath; it says on notes how the hooks attached.
func OpenAggregates(sig *Signals, notes io.Writer, pids []int, comm string, withCommand bool) (*Session, error) {
	return Open(sig, Options{
		Tracer: tracer.Options{Pids: pids, Comm: comm, AggOnly: true, AllProcesses: len(pids) == 0 && comm == "" && !withCommand},
		Notes:  notes, Attached: func(t *tracer.Tracer) { SayAttached(notes, t.Hooks, nil) },
		PidsOnly: comm == "" && !withCommand,
	})
}
