package session

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/tracer"
)

// A -p process that exits after the hooks attached (after --ready-file
// would have been created) was traced to its exit: the run ends with its
// summary, not "exited before tracing started". The check of the pids
// belongs to Open; at Trace it failed a libaio reaper that did its IO and
// exited right after the ready file (the 5.10 VM, 2026-12-07).
func TestPidExitAfterAttach(t *testing.T) {
	testutil.NeedRoot(t)
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	pid := c.Process.Pid
	var notes strings.Builder
	s, err := Open(Catch(), Options{Tracer: tracer.Options{Pids: []int{pid}}, Notes: &notes, PidsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Ready: the process now exits.
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	res, err := s.Trace(Trace{Pids: []int{pid}})
	if err != nil {
		t.Fatalf("a pid that exited after the hooks attached: %v (notes %q)", err, notes.String())
	}
	if res.Summary == nil || strings.Contains(notes.String(), "exited before tracing started") {
		t.Errorf("summary %v, notes %q", res.Summary != nil, notes.String())
	}
}

// A -p process that exited before the hooks attached fails Open in one
// line: nothing of it can be traced.
func TestPidExitBeforeAttach(t *testing.T) {
	testutil.NeedRoot(t)
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	gone := []int{c.Process.Pid}
	s, err := Open(Catch(), Options{Tracer: tracer.Options{Pids: gone}, PidsOnly: true})
	if err == nil {
		s.Close()
		t.Fatal("Open of an exited pid: no error")
	}
	if !strings.Contains(err.Error(), "exited before tracing started") {
		t.Errorf("Open of an exited pid: %v", err)
	}
	// With a command (or --comm) too, the run does not wait for the pid:
	// it goes on (`trace -p PID -- make` where PID exited while loading).
	// It still says so.
	var notes strings.Builder
	s, err = Open(Catch(), Options{Tracer: tracer.Options{Pids: gone}, Notes: &notes})
	if err != nil {
		t.Fatalf("Open of an exited pid with a command or comm: %v", err)
	}
	s.Close()
	if want := "exited before tracing started (while the hooks attached): nothing of it traced"; !strings.Contains(notes.String(), want) {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
}
