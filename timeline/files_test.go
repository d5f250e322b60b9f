package timeline

import (
	"os"
	"os/exec"
	"path/filepath"
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
