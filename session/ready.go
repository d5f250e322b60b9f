package session

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ReadyFile creates path (--ready-file), holding iopath's pid, for a
// script that waits until the hooks are attached; remove deletes it at the
// end. An empty path creates nothing. A path that exists is refused and
// left alone.
func ReadyFile(path string) (remove func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	rf, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
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
