package session

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The traced command runs in its own process group (setpgid at its fork),
// so that a forwarded signal and the SIGKILL after the grace period reach
// everything it started (a shell's children, a server's workers), not only
// its own pid. The exception is an interactive run: when one of iopath's
// standard streams is a terminal and iopath is in its foreground process
// group, the command stays in iopath's group, as it would run without
// iopath. A new group there would be a background job: reading the terminal
// would stop it (SIGTTIN), and Ctrl-Z would stop it without iopath. The
// terminal itself then sends Ctrl-C to every process of the group; the
// SIGKILL after the grace period goes to the command's descendants found in
// /proc instead.

// ownGroup says whether the command gets its own process group: not when
// one of the streams is a terminal iopath has in the foreground.
func ownGroup(streams ...any) bool {
	for _, s := range streams {
		f, ok := s.(*os.File)
		if !ok || f == nil {
			continue
		}
		pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
		if err == nil && pgrp == syscall.Getpgrp() {
			return false
		}
	}
	return true
}

// proc is one process as /proc/PID/stat shows it.
type proc struct {
	pid, ppid, pgrp int
	state           byte
	comm            string
}

// readProc parses /proc/PID/stat (fields 1–5: pid, comm, state, ppid, pgrp).
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	return parseStat(string(b))
}

func parseStat(s string) (proc, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return proc{}, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(s[:open]))
	ppid, err2 := strconv.Atoi(f[1])
	pgrp, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], comm: s[open+1 : end]}, true
}

// allProcs lists the processes in /proc (zombies included).
func allProcs() []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var ps []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// iopath is a child subreaper (PR_SET_CHILD_SUBREAPER, set by Exec): a
// descendant of the command whose parent exits (a shell's `setsid cmd &`,
// a daemon's double fork) is re-parented to iopath instead of init, so the
// walk by parent pid still finds it. adopter is iopath's pid once that is
// set (0 before), and commands the pids Exec started itself: the other
// children of iopath are the adopted descendants.
var (
	adoptMu  sync.Mutex
	adopter  int
	commands = map[int]bool{}
)

// becomeSubreaper makes iopath the subreaper of its commands' orphans.
func becomeSubreaper() {
	adoptMu.Lock()
	defer adoptMu.Unlock()
	if adopter == 0 && unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil {
		adopter = os.Getpid()
	}
}

// addCommand records pid as a command Exec started.
func addCommand(pid int) {
	adoptMu.Lock()
	commands[pid] = true
	adoptMu.Unlock()
}

// adopted says whether p is a descendant of a command that iopath adopted.
func adopted(p proc) bool {
	adoptMu.Lock()
	defer adoptMu.Unlock()
	return adopter != 0 && p.ppid == adopter && !commands[p.pid]
}

// family is the processes of the command: the members of process group
// pgid (0: none) and the descendants of pid (by parent pid, so those that
// left the group too), with the orphans iopath adopted and theirs, without
// pid itself and without zombies.
func family(ps []proc, pid, pgid int) []proc {
	kids := map[int][]proc{}
	for _, p := range ps {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	seen := map[int]bool{pid: true}
	var out []proc
	add := func(p proc) {
		if !seen[p.pid] {
			seen[p.pid] = true
			if p.state != 'Z' {
				out = append(out, p)
			}
		}
	}
	for _, p := range ps {
		if pgid > 0 && p.pgrp == pgid {
			add(p)
		}
	}
	walked := map[int]bool{pid: true}
	queue := []int{pid}
	for _, p := range ps {
		if adopted(p) {
			add(p)
			walked[p.pid] = true
			queue = append(queue, p.pid)
		}
	}
	for ; len(queue) > 0; queue = queue[1:] {
		for _, k := range kids[queue[0]] {
			if !walked[k.pid] {
				walked[k.pid] = true
				queue = append(queue, k.pid)
			}
			add(k)
		}
	}
	slices.SortFunc(out, func(a, b proc) int { return a.pid - b.pid })
	return out
}

// killFamily sends SIGKILL to the command's process group (pgid > 0) and to
// every process of its family, waits up to wait for them to be gone, and
// returns the line naming those still alive then ("" if none: a process in
// uninterruptible sleep dies only when its IO ends).
func killFamily(pid, pgid int, wait time.Duration) string {
	fam := family(allProcs(), pid, pgid)
	if pgid > 0 {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	for _, p := range fam {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
	var alive []proc
	for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		alive = alive[:0]
		for _, p := range fam {
			if q, ok := readProc(p.pid); ok && q.state != 'Z' {
				alive = append(alive, q)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			break
		}
	}
	return survivorsLine(alive, wait)
}

// survivorsLine names processes still alive wait after SIGKILL ("" if none).
func survivorsLine(alive []proc, wait time.Duration) string {
	if len(alive) == 0 {
		return ""
	}
	names := make([]string, len(alive))
	for i, p := range alive {
		names[i] = fmt.Sprintf("%d (%s, state %c)", p.pid, p.comm, p.state)
	}
	return fmt.Sprintf("iopath: %s of the command still alive %s after SIGKILL (state D: waiting for IO): %s",
		processes(len(alive)), wait, strings.Join(names, ", "))
}

// processes is "1 process", "2 processes".
func processes(n int) string {
	if n == 1 {
		return "1 process"
	}
	return strconv.Itoa(n) + " processes"
}

// groupAlive lists the live members of process group pgid other than pid,
// and the live descendants iopath adopted (they left the group: setsid).
func groupAlive(pid, pgid int) []proc {
	var out []proc
	for _, p := range allProcs() {
		if (pgid > 0 && p.pgrp == pgid || adopted(p)) && p.pid != pid && p.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// reapAdopted collects the exit status of adopted descendants that died
// (they are iopath's children now: zombies until waited for).
func reapAdopted() {
	for _, p := range allProcs() {
		if p.state == 'Z' && adopted(p) {
			var ws syscall.WaitStatus
			syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// untracedLine names the command's descendants still running when it
// exited by itself ("" if none): background jobs of a shell keep running
// (as without iopath), but untraced once iopath ends.
func untracedLine(name string, left []proc) string {
	if len(left) == 0 {
		return ""
	}
	names := make([]string, len(left))
	for i, p := range left {
		names[i] = fmt.Sprintf("%d (%s)", p.pid, p.comm)
	}
	return fmt.Sprintf("iopath: %s exited; %s it started still running, untraced from now on: %s",
		name, processes(len(left)), strings.Join(names, ", "))
}
