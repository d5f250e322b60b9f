package session

import (
	"io"

	"github.com/iopath/iopath/internal/workdir"
)

// Work directories are named iopath-KIND-PID-nsINO-RANDOM after the iopath
// process that made them and its pid namespace (internal/workdir). A run
// killed by SIGKILL cannot remove its own (a 64–256 MiB workload file): the
// next run removes those whose process provably is gone (CleanStale).

// MkWorkDir creates a new work directory in base for kind ("workload",
// "demo"), named after this process.
func MkWorkDir(base, kind string) (string, error) { return workdir.Make(base, kind) }

// CleanStale removes the kind work directories in base left by iopath
// processes that no longer exist in this pid namespace, and says so on
// notes (workdir.CleanStale).
func CleanStale(base, kind string, notes io.Writer) { workdir.CleanStale(base, kind, notes) }
