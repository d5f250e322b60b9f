package session

import (
	"os/signal"
	"sync"

	"github.com/iopath/iopath/internal/earlysig"
)

// endSignals are the signals that end a run cleanly (summary, work files
// removed, exit status 128+N): SIGINT, SIGTERM, SIGHUP (the terminal or
// the ssh session went away: treated as SIGTERM) and SIGQUIT (Go's default,
// a goroutine dump and exit status 2, would leave a workload's file
// behind; iopath's own dump is not worth that to a user).
var endSignals = earlysig.Signals

// startMu serializes the commands' starts (the dispositions are process-wide).
var startMu sync.Mutex

// CatchEarly starts catching the end signals for the whole process (in
// iopath, internal/earlysig already did during package initialization);
// call it first thing in main, before flags are parsed or anything loads.
// A signal received from then on waits for the run's Catch instead of
// being lost (an inherited SIG_IGN would discard it) or killing iopath
// with its files left behind. Later calls do nothing.
func CatchEarly() { earlysig.Start() }

// startKeepingIgnored runs start (exec.Cmd.Start) with the signals iopath
// inherited as ignored set to SIG_IGN, so that the command inherits them
// ignored as it would from iopath's parent (execve keeps SIG_IGN, resets a
// caught signal to SIG_DFL, and Go's fork resets every signal os/signal
// catches: syscall.SysProcAttr has no field for dispositions). The
// catching is restored as soon as the fork has exec'd: a signal of these
// (the parent asked to ignore them) that arrives in that window, about a
// millisecond, is ignored as the parent asked rather than ending the run.
func startKeepingIgnored(start func() error) error {
	ignored := earlysig.Ignored
	if len(ignored) == 0 {
		return start()
	}
	startMu.Lock()
	defer startMu.Unlock()
	signal.Ignore(ignored...)
	defer signal.Notify(earlysig.Ch, ignored...)
	return start()
}
