package session

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// record is what iopath writes: whole lines.
const testRecord = `{"type":"syscall"}` + "\n"

// Pipe: the command's output is relayed, and a record written while the
// command is mid-line starts on a new line; at a line start, no blank line.
func TestSharedStdoutPipe(t *testing.T) {
	pr, pw, s := sharedPipe(t)
	if s.CommandStdout() == pw {
		t.Fatal("a pipe stdout is not relayed")
	}
	// The command prints a partial line, waits for the test's record, then
	// ends its line and prints a whole one.
	gate := filepath.Join(t.TempDir(), "go")
	cmd := exec.Command("sh", "-c", `printf 'partial'; while [ ! -e "$0" ]; do sleep 0.01; done; printf ' end\nwhole\n'`, gate)
	cmd.Stdout = s.CommandStdout()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Started()
	buf := make([]byte, 7)
	// Wait until the relay has copied "partial".
	if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != "partial" {
		t.Fatalf("relayed %q, %v", buf, err)
	}
	s.Write([]byte(testRecord))
	os.WriteFile(gate, nil, 0o644)
	cmd.Wait()
	s.Write([]byte(testRecord))
	s.Close()
	pw.Close()
	rest, _ := io.ReadAll(pr)
	got := "partial" + string(rest)
	want := "partial\n" + testRecord + " end\nwhole\n" + testRecord
	if got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

// Regular file: the byte before the offset decides.
func TestSharedStdoutFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ShareStdout(f)
	if err != nil {
		t.Fatal(err)
	}
	if s.CommandStdout() != f {
		t.Fatal("a file stdout must be the command's own")
	}
	s.Started()
	s.Write([]byte(testRecord)) // at offset 0: no newline first
	f.WriteString("cmd mid-line")
	s.Write([]byte(testRecord))
	f.WriteString("cmd line\n")
	s.Write([]byte(testRecord))
	s.Close()
	b, _ := os.ReadFile(f.Name())
	want := testRecord + "cmd mid-line\n" + testRecord + "cmd line\n" + testRecord
	if string(b) != want {
		t.Errorf("file %q, want %q", b, want)
	}
}

// Anything else (a terminal, /dev/null): iopath cannot see the command's
// output, so once the command runs every write starts with a newline.
func TestSharedStdoutUnknown(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, _ := ShareStdout(f)
	if s.midLine() {
		t.Error("before the command runs, stdout is at a line start")
	}
	s.Started()
	if !s.midLine() {
		t.Error("after the command started, iopath cannot know: it must assume mid-line")
	}
	if n, err := s.Write([]byte(testRecord)); n != len(testRecord) || err != nil {
		t.Errorf("Write: %d, %v", n, err)
	}
}

// CleanStale is workdir.CleanStale (tested there, namespaces included):
// a directory MkWorkDir made for a process that has exited is removed.
func TestCleanStale(t *testing.T) {
	base := t.TempDir()
	dead := exec.Command("sh", "-c", "exit 0")
	d, err := MkWorkDir(base, "workload")
	if err != nil || !strings.HasPrefix(filepath.Base(d), "iopath-workload-"+itoa(os.Getpid())+"-ns") {
		t.Fatalf("MkWorkDir: %s, %v", d, err)
	}
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, strings.Replace(filepath.Base(d), "-"+itoa(os.Getpid())+"-", "-"+itoa(dead.Process.Pid)+"-", 1))
	if err := os.Rename(d, stale); err != nil {
		t.Fatal(err)
	}
	var notes strings.Builder
	CleanStale(base, "workload", &notes)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s of a dead process left: %v", stale, err)
	}
	if !strings.Contains(notes.String(), "removed "+stale+", left by iopath pid "+itoa(dead.Process.Pid)+" which no longer runs") {
		t.Errorf("notes %q", notes.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// When stdout's reader is gone, the command gets SIGPIPE as it would have
// writing to stdout itself (it does not hang on a full relay pipe).
func TestSharedStdoutBroken(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	pr.Close()
	s, err := ShareStdout(pw)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("yes")
	cmd.Stdout = s.CommandStdout()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Started()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGPIPE {
			t.Errorf("yes ended with %v, want SIGPIPE", err)
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("yes still runs 5 s after stdout's reader left")
	}
	s.Close()
}

// Breaker: `iopath trace -- sh -c '(sleep 3; echo late-output) & echo
// early' | cat` lost late-output (the relay pipe was closed when sh
// exited, the descendant got SIGPIPE). Finish relays until every writer
// closed the pipe: here a descendant that writes only after the run's end.
func TestSharedStdoutFinishRelaysDescendants(t *testing.T) {
	pr, pw, s := sharedPipe(t)
	// The command's background child: it writes once the gate exists,
	// that is after the command exited and Finish began.
	gate := filepath.Join(t.TempDir(), "go")
	cmd := exec.Command("sh", "-c", `(while [ ! -e "$0" ]; do sleep 0.01; done; echo late-output) & echo early`, gate)
	cmd.Stdout = s.CommandStdout()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Started()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	var notes strings.Builder
	go func() { s.Finish(nil, &notes); close(finished) }()
	os.WriteFile(gate, nil, 0o644)
	<-finished
	pw.Close()
	if out, _ := io.ReadAll(pr); string(out) != "early\nlate-output\n" {
		t.Errorf("stdout %q, want the background child's late-output too", out)
	}
	if notes.Len() != 0 {
		t.Errorf("notes %q", notes.String())
	}
}

// sharedPipe is a pipe as iopath's stdout (read at pr), shared with a
// command through s.
func sharedPipe(t *testing.T) (pr, pw *os.File, s *SharedStdout) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	if s, err = ShareStdout(pw); err != nil {
		t.Fatal(err)
	}
	return pr, pw, s
}
