package tracer

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
)

// TestNewPidGoneWhileLoading: a -p pid that exited and was reaped after the
// session checked it, while the programs loaded (~1 s), is left out: New
// traces the other pids and the session says which one exited
// (session.exitedBefore). Before, New failed with "no process with pid",
// and a live -p beside it was not traced (a new user's `sleep 0.5 & A=$!;
// iopath trace -p $A -p $B`: exit 1, 8 of 8).
func TestNewPidGoneWhileLoading(t *testing.T) {
	testutil.NeedRoot(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil { // exited and reaped: its pid names no process
		t.Fatal(err)
	}
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer live.Wait()
	defer live.Process.Kill()
	if err := (&Tracer{}).AddPid(gone.Process.Pid); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("AddPid of an exited pid: %v, want ErrNoProcess", err)
	}
	tr, err := New(Options{Pids: []int{gone.Process.Pid, live.Process.Pid}}, func(any) {})
	if err != nil {
		t.Fatalf("New with one -p gone: %v", err)
	}
	defer tr.Close()
	var v uint8
	if err := tr.targets.Lookup(uint32(live.Process.Pid), &v); err != nil {
		t.Errorf("the live pid is not traced: %v", err)
	}
}
