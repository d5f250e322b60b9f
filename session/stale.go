package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Work directories are named iopath-KIND-PID-RANDOM, PID being the iopath
// process that made them. A run killed by SIGKILL cannot remove its own
// (a 64–256 MiB workload file): the next run removes those whose process is
// gone (CleanStale).

// MkWorkDir creates a new work directory in base for kind ("workload",
// "demo"), named after this process.
func MkWorkDir(base, kind string) (string, error) {
	return os.MkdirTemp(base, workPrefix(kind)+strconv.Itoa(os.Getpid())+"-")
}

func workPrefix(kind string) string { return "iopath-" + kind + "-" }

// CleanStale removes the kind work directories in base left by iopath
// processes that no longer exist, and says so on notes. Directories of
// running processes, of other users, or not named by MkWorkDir are left.
func CleanStale(base, kind string, notes io.Writer) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	prefix := workPrefix(kind)
	for _, e := range ents {
		pid, ok := ownerPid(e.Name(), prefix)
		if !ok || !e.IsDir() || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // running (or not ours to signal: still there)
		}
		p := filepath.Join(base, e.Name())
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil || int(st.Uid) != os.Geteuid() {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			fmt.Fprintf(notes, "iopath: could not remove %s, left by iopath pid %d which no longer runs: %v\n", p, pid, err)
			continue
		}
		fmt.Fprintf(notes, "iopath: removed %s, left by iopath pid %d which no longer runs\n", p, pid)
	}
}

// ownerPid parses the pid out of PREFIX-PID-RANDOM.
func ownerPid(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(num)
	return pid, err == nil && pid > 0
}
