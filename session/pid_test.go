package session

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCheckPid(t *testing.T) {
	for _, c := range []struct {
		pid  int
		want string
	}{
		{0, "no process with pid 0"},
		{1<<22 + 1, "no process with pid 4194305"},
		{os.Getpid(), "is iopath itself"},
	} {
		if err := CheckPid(c.pid); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckPid(%d) = %v, want %q", c.pid, err, c.want)
		}
	}
	if st, err := os.ReadFile("/proc/2/stat"); err == nil && strings.Contains(string(st), "(kthreadd)") {
		if err := CheckPid(2); err == nil || !strings.Contains(err.Error(), "is a kernel thread") {
			t.Errorf("CheckPid(2) (kthreadd) = %v", err)
		}
	}
	if err := CheckPid(os.Getppid()); err != nil {
		t.Errorf("CheckPid(parent) = %v, want nil", err)
	}
}

func TestReadyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ready")
	remove, err := ReadyFile(p, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || strings.TrimSpace(string(b)) == "" {
		t.Fatalf("ready file: %q, %v", b, err)
	}
	if _, err := ReadyFile(p, io.Discard); err == nil || !strings.Contains(err.Error(), "give a path that does not exist yet") {
		t.Errorf("second ReadyFile(%s) = %v", p, err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("a refused ready file removed the existing one: %v", err)
	}
	remove()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("after remove: %v", err)
	}
	if remove, err := ReadyFile("", io.Discard); err != nil || remove == nil {
		t.Errorf(`ReadyFile("", io.Discard) = %v`, err)
	}
}

// issue 10 item 7: a --ready-file left by a SIGKILLed run (it holds the
// dead run's pid) is replaced, said in one line; one holding the pid of a
// running process, or anything else, is still refused.
func TestReadyFileStale(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale")
	if err := os.WriteFile(stale, []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var notes strings.Builder
	remove, err := ReadyFile(stale, &notes)
	if err != nil {
		t.Fatalf("ReadyFile over the ready file of dead pid %d: %v", dead.Process.Pid, err)
	}
	if b, _ := os.ReadFile(stale); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("replaced ready file holds %q, want this pid %d", b, os.Getpid())
	}
	if want := fmt.Sprintf("iopath: replacing --ready-file %s, left by iopath pid %d which no longer runs\n", stale, dead.Process.Pid); notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
	remove()
	for name, content := range map[string]string{"running": strconv.Itoa(live.Process.Pid) + "\n", "other": "not a pid\n"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadyFile(p, io.Discard); err == nil {
			t.Errorf("ReadyFile over a %s file %q: no error", name, content)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("the refused %s ready file now holds %q", name, b)
		}
	}
}

// issue 10: --ready-file /nonexist/r said "open /nonexist/r: no such file
// or directory: give a path that does not exist yet", after attaching.
// CheckReadyFile (before anything loads) and ReadyFile name the missing
// directory; an existing file is refused, a dead run's is not.
func TestReadyFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexist", "r")
	want := "--ready-file " + missing + ": directory " + filepath.Join(dir, "nonexist") + " does not exist: create it or choose another path"
	if _, err := ReadyFile(missing, io.Discard); err == nil || err.Error() != want {
		t.Errorf("ReadyFile(%s): %v, want %q", missing, err, want)
	}
	if err := CheckReadyFile(missing); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckReadyFile(%s): %v, want %q", missing, err, want)
	}
	exists := filepath.Join(dir, "exists")
	if err := os.WriteFile(exists, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckReadyFile(exists); err == nil || !strings.Contains(err.Error(), "--ready-file "+exists+" exists: give a path that does not exist yet") {
		t.Errorf("CheckReadyFile(existing file): %v", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "stale")
	if err := os.WriteFile(stale, []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", stale, filepath.Join(dir, "new")} {
		if err := CheckReadyFile(p); err != nil {
			t.Errorf("CheckReadyFile(%q): %v", p, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 2 {
		t.Errorf("left in the directory: %v, want only exists and stale", left)
	}
}

// issue 10: -p X -p X was traced and named twice ("-p follows children
// of PID X,X"). A repeat, or a thread of a process given too, is kept once.
func TestCheckPids(t *testing.T) {
	var pids []int
	for range 2 {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
		pids = append(pids, c.Process.Pid)
	}
	p, q := pids[0], pids[1]
	got, err := CheckPids([]int{p, p, q, p})
	if err != nil || !slices.Equal(got, []int{p, q}) {
		t.Errorf("CheckPids(%d, %d, %d, %d) = %v, %v; want [%d %d]", p, p, q, p, got, err, p, q)
	}
	// A thread's id and its process's: one process, named as given first.
	h, out, _ := helper(t, "threads")
	if line, err := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	pid := h.Process.Pid
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	tid := 0
	for _, task := range tasks {
		if n, _ := strconv.Atoi(filepath.Base(task)); n != pid {
			tid = n
		}
	}
	if tid == 0 {
		t.Fatalf("helper %d has one thread: %v", pid, tasks)
	}
	if got, err := CheckPids([]int{tid, p, pid}); err != nil || !slices.Equal(got, []int{tid, p}) {
		t.Errorf("CheckPids(thread %d, %d, its process %d) = %v, %v; want [%d %d]", tid, p, pid, got, err, tid, p)
	}
	if _, err := CheckPids([]int{p, 0}); err == nil {
		t.Error("CheckPids with pid 0: no error")
	}
}

func TestLookCommand(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		dir: "is a directory", plain: "is not executable", "iopath-no-such-command": "not found",
	} {
		if _, err := LookCommand(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LookCommand(%q) = %v, want %q", name, err, want)
		}
	}
	if p, err := LookCommand("sh"); err != nil || !filepath.IsAbs(p) {
		t.Errorf("LookCommand(sh) = %q, %v", p, err)
	}
}

// A -p process that exited while the hooks attached is said, and a run
// where every one did is an error, not an empty summary with exit 0.
func TestExitedBefore(t *testing.T) {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	gone := c.Process.Pid
	var notes strings.Builder
	if err := exitedBefore([]int{os.Getpid()}, &notes); err != nil || notes.Len() != 0 {
		t.Errorf("a running pid: %v, notes %q", err, notes.String())
	}
	err := exitedBefore([]int{gone}, &notes)
	if want := fmt.Sprintf("-p %d exited before tracing started", gone); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an exited pid: %v, want %q", err, want)
	}
	if err := exitedBefore([]int{os.Getpid(), gone}, &notes); err != nil || !strings.Contains(notes.String(), fmt.Sprintf("-p %d exited before tracing started", gone)) {
		t.Errorf("one of two exited: %v, notes %q", err, notes.String())
	}
}
