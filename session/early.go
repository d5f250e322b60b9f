package session

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// endSignals are the signals that end a run cleanly (summary, work files
// removed, exit status 128+N): SIGINT, SIGTERM, SIGHUP (the terminal or
// the ssh session went away: treated as SIGTERM) and SIGQUIT (Go's default,
// a goroutine dump and exit status 2, would leave a workload's file
// behind; iopath's own dump is not worth that to a user).
var endSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// early holds the process-wide catching that CatchEarly starts and every
// Catch reads from: signals received before a run's Catch wait in ch.
var early struct {
	once sync.Once
	ch   chan os.Signal
	// ignored are the end signals iopath's parent ignored (SIG_IGN at
	// exec, as nohup or a shell's background job sets): iopath still ends
	// on them, but its commands start with them ignored (startKeepingIgnored).
	// Go's runtime keeps an inherited SIG_IGN only for SIGHUP and SIGINT
	// (runtime.sigInstallGoHandler); for SIGQUIT it installs its own
	// handler before any Go code runs, so an ignored SIGQUIT cannot be
	// seen and is not passed on.
	ignored []os.Signal
	// start serializes the commands' starts (the dispositions are process-wide).
	start sync.Mutex
}

// CatchEarly starts catching the end signals for the whole process; call
// it first thing in main, before flags are parsed or anything loads. A
// signal received from then on waits for the run's Catch instead of being
// lost (an inherited SIG_IGN would discard it) or killing iopath with its
// files left behind. Later calls do nothing.
func CatchEarly() {
	early.once.Do(func() {
		early.ch = make(chan os.Signal, 16)
		for _, s := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
			if signal.Ignored(s) {
				early.ignored = append(early.ignored, s)
			}
		}
		signal.Notify(early.ch, endSignals...)
	})
}

// startKeepingIgnored runs start (exec.Cmd.Start) with the signals iopath
// inherited as ignored set to SIG_IGN, so that the command inherits them
// ignored as it would from iopath's parent (execve keeps SIG_IGN, resets a
// caught signal to SIG_DFL, and Go's fork resets every signal os/signal
// catches: syscall.SysProcAttr has no field for dispositions). The
// catching is restored as soon as the fork has exec'd: a signal of these
// (the parent asked to ignore them) that arrives in that window, about a
// millisecond, is ignored as the parent asked rather than ending the run.
func startKeepingIgnored(start func() error) error {
	if len(early.ignored) == 0 {
		return start()
	}
	early.start.Lock()
	defer early.start.Unlock()
	signal.Ignore(early.ignored...)
	defer signal.Notify(early.ch, early.ignored...)
	return start()
}
