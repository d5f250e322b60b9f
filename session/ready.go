package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/iopath/iopath/timeline"
)

// ReadyFile creates path (--ready-file), holding one line
// "iopath ready pid=PID start=TICKS" (TICKS: the process's start time,
// field 22 of /proc/PID/stat), for a script that waits until the hooks are
// attached; remove deletes it at the end. An empty path creates nothing.
// A path that exists is refused and left alone, unless it is a ready file
// of a run that was killed (SIGKILL leaves it): a file of exactly that
// line whose process no longer runs (no such pid, or a pid reused by a
// process started at another time) is replaced, said on notes. Any other
// file (a user's "3999999" too) is never deleted.
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
		return nil, readyFileError(path, err)
	}
	fmt.Fprintln(rf, readyLine(os.Getpid(), pidStart(os.Getpid())))
	if err := rf.Close(); err != nil {
		os.Remove(path)
		return nil, err
	}
	return func() { os.Remove(path) }, nil
}

// CheckReadyFile says in one line what is wrong with path as --ready-file,
// before anything loads (the file is created only once the hooks are
// attached): a parent directory that is missing (named), not a directory
// or on a kernel filesystem, a directory's name, or a file that exists and
// is no ready file left by a killed run.
func CheckReadyFile(path string) error {
	if path == "" {
		return nil
	}
	if err := timeline.CheckOutputPath("--ready-file", path, true); err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		if _, dead := deadReadyPid(path); !dead {
			return readyFileError(path, fs.ErrExist)
		}
	}
	return nil
}

// readyFileError explains why path could not be created, by errno.
func readyFileError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("--ready-file %s exists: remove it or choose another path (iopath creates the file once ready and removes it at the end)", path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--ready-file %s: directory %s does not exist: create it or choose another path", path, filepath.Dir(path))
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return fmt.Errorf("--ready-file %s: cannot create a file in %s (%w): choose a writable directory", path, filepath.Dir(path), bareErr(err))
	}
	return fmt.Errorf("--ready-file %s: %w: give a new file's path in a writable directory", path, bareErr(err))
}

// readyLine is the content of a ready file of process pid started at start.
func readyLine(pid int, start string) string {
	return fmt.Sprintf("iopath ready pid=%d start=%s", pid, start)
}

// pidStart is process pid's start time in clock ticks after boot (field
// 22 of /proc/PID/stat), "" if it does not run (or cannot be read).
func pidStart(pid int) string {
	fields, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if !ok || len(fields) <= 19 {
		return ""
	}
	return fields[19]
}

// deadReadyPid is the pid a ready file at path names, if it is one that
// iopath wrote (a regular file of this user holding exactly the ready
// line) and that process no longer runs: no process has that pid, or the
// one that has it started at another time (the pid was reused).
func deadReadyPid(path string) (int, bool) {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || int(st.Uid) != os.Geteuid() || st.Size > 64 {
		return 0, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	var pid int
	var start string
	if n, _ := fmt.Sscanf(string(b), "iopath ready pid=%d start=%s\n", &pid, &start); n != 2 || string(b) != readyLine(pid, start)+"\n" || pid <= 0 || pid == os.Getpid() {
		return 0, false
	}
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return pid, true
	}
	now := pidStart(pid)
	return pid, now != "" && now != start
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
