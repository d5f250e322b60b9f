package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/iopath/iopath/timeline"
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
		return nil, readyFileError(path, err)
	}
	fmt.Fprintln(rf, os.Getpid())
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
		return fmt.Errorf("--ready-file %s exists: give a path that does not exist yet (iopath creates the file once ready and removes it at the end)", path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--ready-file %s: directory %s does not exist: create it or choose another path", path, filepath.Dir(path))
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return fmt.Errorf("--ready-file %s: cannot create a file in %s (%w): choose a writable directory", path, filepath.Dir(path), bareErr(err))
	}
	return fmt.Errorf("--ready-file %s: %w: give a new file's path in a writable directory", path, bareErr(err))
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
