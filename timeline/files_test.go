package timeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A run killed before it renamed its temp files (SIGKILL) leaves
// .NAME.iopath-PID.*.tmp beside the output: the next run removes those
// of dead pids, and keeps a live run's and other files.
func TestOpenFilesRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.json")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, tempPrefix("x.json", dead.Process.Pid)+"123.tmp")
	live := filepath.Join(dir, tempPrefix("x.json", 1)+"456.tmp") // pid 1 runs
	other := filepath.Join(dir, ".x.json.789.tmp")                // not ours
	for _, p := range []string{stale, live, other} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o, err := OpenFiles(out, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	o.Abort()
	if len(o.Stale) != 1 || o.Stale[0] != stale {
		t.Errorf("removed %v, want only %s", o.Stale, stale)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead run's temp file is still there: %v", err)
	}
	for _, p := range []string{live, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 2 { // live and other; Abort removed this run's temp file
		t.Errorf("files left: %v, want only %s and %s", left, live, other)
	}
}

// A bad --timeline/--report path is refused with its real cause: /proc
// once said "directory /proc does not exist", and `nofile/` (no such
// directory) "is a directory".
func TestOpenFilesBadPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ trace, report, want string }{
		{"", "/proc/x.html", "--report /proc/x.html: /proc is on proc, a kernel filesystem that holds no files of ours: choose a directory on a disk or a tmpfs"},
		{"/sys/x.json", "", "--timeline /sys/x.json: /sys is on sysfs, a kernel filesystem"},
		{filepath.Join(dir, "nofile") + "/", "", "--timeline " + dir + "/nofile/ ends in \"/\", which names a directory (and there is none): give a file name (e.g. " + dir + "/nofile/trace.json)"},
		{dir + "/", "", "--timeline " + dir + "/ is a directory: give a file name (e.g. " + dir + "/trace.json)"},
		{"", dir, "--report " + dir + " is a directory: give a file name (e.g. " + dir + "/report.html)"},
		{filepath.Join(dir, "no", "x.json"), "", "directory " + dir + "/no does not exist: create it or choose another path"},
		{filepath.Join(file, "x.json"), "", file + " is not a directory: choose another path"},
	} {
		o, err := OpenFiles(c.trace, c.report, "test")
		if err == nil {
			o.Abort()
			t.Errorf("--timeline %q --report %q: accepted", c.trace, c.report)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("--timeline %q --report %q:\n got %s\nwant %s", c.trace, c.report, err, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
