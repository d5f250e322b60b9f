package session

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheckPid(t *testing.T) {
	for _, c := range []struct {
		pid  int
		want string
	}{
		// pid 0 and negative pids were told to check them with ps.
		{0, "-p 0 is not a process: pid 0 is the kernel's idle task, which makes no system calls; give the pid of a running process, e.g. from `pgrep NAME`"},
		{-5, "-p -5 is not a process: pids are positive; give the pid of a running process"},
		{1 << 22, "-p 4194304 is not a process: pids are below 4194304 (the kernel's limit); give the pid of a running process"},
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
	if b, err := os.ReadFile(p); err != nil || string(b) != fmt.Sprintf("iopath ready pid=%d start=%s\n", os.Getpid(), pidStart(os.Getpid())) || pidStart(os.Getpid()) == "" {
		t.Fatalf("ready file: %q, %v", b, err)
	}
	if _, err := ReadyFile(p, io.Discard); err == nil || !strings.Contains(err.Error(), "exists: remove it or choose another path") {
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

// issue 10 item 7: a --ready-file left by a SIGKILLed run (its line names
// the dead run) is replaced, said in one line. Breaker: a user's file that
// only holds a dead pid ("3999999") was deleted as well; now only a file
// of iopath's own line is replaced, and one naming a running process (or
// its pid reused by a process started at another time: replaced) is not.
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
	liveStart := pidStart(live.Process.Pid)
	if liveStart == "" {
		t.Fatalf("no start time for running pid %d", live.Process.Pid)
	}
	dir := t.TempDir()
	for name, c := range map[string]struct {
		content  string
		replaced bool
		pid      int
	}{
		"dead":   {readyLine(dead.Process.Pid, "12345") + "\n", true, dead.Process.Pid},
		"reused": {readyLine(live.Process.Pid, liveStart+"0") + "\n", true, live.Process.Pid},
		"live":   {readyLine(live.Process.Pid, liveStart) + "\n", false, 0},
		"user":   {strconv.Itoa(dead.Process.Pid) + "\n", false, 0},
		"more":   {readyLine(dead.Process.Pid, "12345") + "\nkeep\n", false, 0},
		"other":  {"not a pid\n", false, 0},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := CheckReadyFile(p); (err == nil) != c.replaced {
			t.Errorf("CheckReadyFile over a %s file %q: %v", name, c.content, err)
		}
		var notes strings.Builder
		remove, err := ReadyFile(p, &notes)
		b, _ := os.ReadFile(p)
		if !c.replaced {
			if err == nil || !strings.Contains(err.Error(), "exists: remove it or choose another path") {
				t.Errorf("ReadyFile over a %s file %q: %v", name, c.content, err)
			}
			if string(b) != c.content {
				t.Errorf("the refused %s ready file now holds %q", name, b)
			}
			continue
		}
		if err != nil {
			t.Errorf("ReadyFile over the %s ready file %q: %v", name, c.content, err)
			continue
		}
		if want := readyLine(os.Getpid(), pidStart(os.Getpid())) + "\n"; string(b) != want {
			t.Errorf("replaced ready file holds %q, want %q", b, want)
		}
		if want := fmt.Sprintf("iopath: replacing --ready-file %s, left by iopath pid %d which no longer runs\n", p, c.pid); notes.String() != want {
			t.Errorf("notes %q, want %q", notes.String(), want)
		}
		remove()
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
	if err := CheckReadyFile(exists); err == nil || !strings.Contains(err.Error(), "--ready-file "+exists+" exists: remove it or choose another path") {
		t.Errorf("CheckReadyFile(existing file): %v", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "stale")
	if err := os.WriteFile(stale, []byte(readyLine(dead.Process.Pid, "1")+"\n"), 0o644); err != nil {
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
	// issue 10: -p of a thread said "-p follows children of PID <tid>":
	// the note names the process the thread belongs to.
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	want := fmt.Sprintf("-p follows children of thread %d of process %d (%s), PID %d forked from now on;", tid, pid, strings.TrimSpace(string(comm)), p)
	if got := PidNote([]int{tid, p}); !strings.Contains(got, want) {
		t.Errorf("PidNote(thread %d of %d, %d) = %q, want %q in it", tid, pid, p, got, want)
	}
	// A kernel thread beside a user process (-p 2 -p 1) is refused, in one
	// line that says to drop it (before: "give the pid of a user process",
	// though one was given).
	if st, err := os.ReadFile("/proc/2/stat"); err == nil && strings.Contains(string(st), "(kthreadd)") {
		want := "pid 2 is a kernel thread: it makes no system calls to trace; drop -p 2 and keep the user processes' -p"
		if _, err := CheckPids([]int{2, p}); err == nil || err.Error() != want {
			t.Errorf("CheckPids(2, %d) = %v, want %q", p, err, want)
		}
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
	if err := exitedBefore([]int{os.Getpid()}, &notes, true); err != nil || notes.Len() != 0 {
		t.Errorf("a running pid: %v, notes %q", err, notes.String())
	}
	err := exitedBefore([]int{gone}, &notes, true)
	if want := fmt.Sprintf("-p %d exited before tracing started", gone); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an exited pid: %v, want %q", err, want)
	}
	if err := exitedBefore([]int{os.Getpid(), gone}, &notes, true); err != nil || !strings.Contains(notes.String(), fmt.Sprintf("-p %d exited before tracing started", gone)) {
		t.Errorf("one of two exited: %v, notes %q", err, notes.String())
	}
}

// A process whose main thread exited (pthread_exit; here SYS_exit from
// python3's main thread through ctypes, which releases the GIL) while another
// thread still runs shows state Z in /proc/PID/stat: it is still a process
// doing IO, so -p takes it and waits for it. Before, CheckPid refused it
// ("pid N is a zombie (exited, not yet reaped): it will do no more IO") and
// exitedBefore called it exited. A real zombie (exited, not reaped) is gone:
// refused by CheckPid, and allExited ends with it (before, kill(pid, 0)
// succeeded on it, so `trace -p` of a process that exited unreaped ran on).
func TestZombieLeaderWithThreads(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	prog := `import ctypes, os, sys, threading, time
threading.Thread(target=lambda: time.sleep(600)).start()
sys.stdout.write("ok\n"); sys.stdout.flush()
ctypes.CDLL(None).syscall(60, 0)`
	py := exec.Command("python3", "-c", prog)
	out, err := py.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = py.Process.Kill(); _ = py.Wait() }()
	if _, err := io.ReadAtLeast(out, make([]byte, 3), 3); err != nil {
		t.Fatal(err)
	}
	pid := py.Process.Pid
	waitState(t, pid, "Z")
	if err := CheckPid(pid); err != nil {
		t.Errorf("CheckPid of a zombie leader with a running thread: %v", err)
	}
	var notes strings.Builder
	if err := exitedBefore([]int{pid}, &notes, true); err != nil || notes.Len() != 0 {
		t.Errorf("exitedBefore of a zombie leader with a running thread: %v, notes %q", err, notes.String())
	}

	z := exec.Command("true")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = z.Wait() }()
	waitState(t, z.Process.Pid, "Z")
	if err := CheckPid(z.Process.Pid); err == nil || !strings.Contains(err.Error(), "is a zombie") {
		t.Errorf("CheckPid of a zombie: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case <-allExited(ctx, []int{z.Process.Pid}):
	case <-ctx.Done():
		t.Error("allExited never ended for a zombie")
	}
}

// waitState waits until /proc/PID/stat shows state.
func waitState(t *testing.T, pid int, state string) {
	t.Helper()
	for i := 0; ; i++ {
		if f, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid)); ok && len(f) > 0 && f[0] == state {
			return
		}
		if i == 6000 {
			t.Fatalf("pid %d never reached state %s", pid, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// -p of a process with children already running (a postmaster's
// checkpointer and backends) says they are not traced, by pid: a DBA's -p
// of the postmaster missed their IO with a note that said to use "-p of
// the parent", which they had.
func TestPidNoteExistingChildren(t *testing.T) {
	sh := exec.Command("sh", "-c", "sleep 60 & sleep 60 & echo ready; wait")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the sleeps die with it
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-sh.Process.Pid, syscall.SIGKILL); sh.Process.Kill(); sh.Wait() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	kids := existingChildren([]int{sh.Process.Pid})
	if len(kids) != 2 {
		t.Fatalf("children of sh %d: %v, want its 2 sleeps", sh.Process.Pid, kids)
	}
	want := fmt.Sprintf("; the 2 children already running (%d, %d) are not traced: add -p for each, or use --comm", kids[0], kids[1])
	if got := PidNote([]int{sh.Process.Pid}); !strings.HasSuffix(got, want) {
		t.Errorf("PidNote = %q, want it to end with %q", got, want)
	}
	if got := PidNote([]int{sh.Process.Pid, kids[0], kids[1]}); strings.Contains(got, "already running") {
		t.Errorf("PidNote with every child given = %q: no child left out", got)
	}
}
