// Package workdir names iopath's temporary work directories after their
// owner, so that a later run can remove those of runs killed by SIGKILL
// (a 64–256 MiB workload file) and never one of a run still going.
//
// A directory is named iopath-KIND-PID-nsINO-RANDOM: PID is the owner's
// pid in its pid namespace, INO that namespace's inode (/proc/self/ns/pid).
// A pid means something only in its own namespace: a run in a container
// (or under unshare -p) and one on the host share $TMPDIR but not pids, so
// an owner is dead only if it was in the cleaner's namespace and kill(PID,
// 0) says ESRCH there. The inode of a live namespace is not reused, so an
// equal inode is the same namespace or one made after the owner's died.
package workdir

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

// PidNamespace is the inode of this process's pid namespace; 0 when
// /proc does not say (no proc mounted).
func PidNamespace() uint64 {
	var st syscall.Stat_t
	if syscall.Stat("/proc/self/ns/pid", &st) != nil {
		return 0
	}
	return st.Ino
}

func prefix(kind string) string { return "iopath-" + kind + "-" }

// Make creates a new work directory in base (os.TempDir() if empty) for
// kind ("workload", "demo"), named after this process and its pid
// namespace.
func Make(base, kind string) (string, error) {
	return os.MkdirTemp(base, prefix(kind)+strconv.Itoa(os.Getpid())+"-ns"+strconv.FormatUint(PidNamespace(), 10)+"-")
}

// Owner is who made a work directory, parsed from its name.
type Owner struct {
	Pid int
	NS  uint64 // pid namespace inode; 0: not in the name (an older iopath's)
}

// ParseOwner parses PREFIX-PID-nsINO-RANDOM, or an older iopath's
// PREFIX-PID-RANDOM (NS 0).
func ParseOwner(name, kind string) (Owner, bool) {
	rest, ok := strings.CutPrefix(name, prefix(kind))
	if !ok {
		return Owner{}, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) < 2 {
		return Owner{}, false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return Owner{}, false
	}
	o := Owner{Pid: pid}
	if ns, ok := strings.CutPrefix(parts[1], "ns"); ok && len(parts) > 2 {
		if o.NS, err = strconv.ParseUint(ns, 10, 64); err != nil {
			return Owner{}, false
		}
	}
	return o, true
}

// dead says whether o provably no longer runs, seen from a process in pid
// namespace ns: the same namespace (known) and no such pid in it.
func (o Owner) dead(ns uint64) bool {
	if o.NS == 0 || ns == 0 || o.NS != ns {
		return false // another namespace's pid, or one we cannot place
	}
	return errors.Is(syscall.Kill(o.Pid, 0), syscall.ESRCH)
}

// CleanStale removes the kind work directories in base whose owner
// provably no longer runs (see the package comment), and says so on notes.
// Directories of running processes, of other pid namespaces, of other
// users, of an older iopath (no namespace in the name), or not named by
// Make are left.
// keptMarker, in a work directory, says its files were kept (--keep):
// CleanStale leaves it, whoever made it.
const keptMarker = ".iopath-kept"

// MarkKept marks dir (made by Make) as kept: no later run removes it.
// Marked when it is made, so a kept run killed by SIGKILL keeps it too.
func MarkKept(dir string) error {
	return os.WriteFile(filepath.Join(dir, keptMarker), nil, 0o644)
}

func CleanStale(base, kind string, notes io.Writer) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	ns := PidNamespace()
	for _, e := range ents {
		o, ok := ParseOwner(e.Name(), kind)
		if !ok || !e.IsDir() || o.Pid == os.Getpid() || !o.dead(ns) {
			continue
		}
		p := filepath.Join(base, e.Name())
		if _, err := os.Lstat(filepath.Join(p, keptMarker)); err == nil {
			continue // --keep: the user's now
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil || int(st.Uid) != os.Geteuid() {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			fmt.Fprintf(notes, "iopath: could not remove %s, left by iopath pid %d which no longer runs: %v\n", p, o.Pid, err)
			continue
		}
		fmt.Fprintf(notes, "iopath: removed %s, left by iopath pid %d which no longer runs\n", p, o.Pid)
	}
}
