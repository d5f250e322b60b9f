package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// ReadyFile creates path (--ready-file), holding iopath's pid, for a
// script that waits until the hooks are attached; remove deletes it at the
// end. An empty path creates nothing. A path that exists is refused and
// left alone, unless it is a ready file of a run that was killed (SIGKILL
// leaves it): one holding only the pid of a process that no longer runs
// is replaced, said on notes.
func ReadyFile(path string, notes io.Writer) (remove func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	rf, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		if pid, ok := deadReadyPid(path); ok && os.Remove(path) == nil {
			fmt.Fprintf(notes, "iopath: replacing --ready-file %s, left by iopath pid %d which no longer runs\n", path, pid)
			rf, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--ready-file: %w: give a path that does not exist yet", err)
	}
	fmt.Fprintln(rf, os.Getpid())
	if err := rf.Close(); err != nil {
		os.Remove(path)
		return nil, err
	}
	return func() { os.Remove(path) }, nil
}

// deadReadyPid is the pid a ready file at path holds, if that is all it
// holds (a regular file of this user, one decimal pid and a newline) and
// no process has that pid any more.
func deadReadyPid(path string) (int, bool) {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || int(st.Uid) != os.Geteuid() || st.Size > 32 {
		return 0, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(string(b), "\n"))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return 0, false
	}
	return pid, errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// LookCommand finds the program of `-- CMD`, or says why it cannot run.
func LookCommand(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	if st, serr := os.Stat(name); serr == nil && strings.Contains(name, "/") {
		if st.IsDir() {
			return "", fmt.Errorf("command %q is a directory: give the program to run", name)
		}
		return "", fmt.Errorf("command %q is not executable: chmod +x it or run it through its interpreter", name)
	}
	return "", fmt.Errorf("command %q not found: check the name or give its full path", name)
}
