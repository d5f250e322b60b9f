package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/iopath/iopath/internal/testutil"
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

// TestMain lets a test run this binary as a helper process:
// SESSION_TEST_HELPER=NAME runs helpers[NAME] instead of the tests.
func TestMain(m *testing.M) {
	if name := os.Getenv("SESSION_TEST_HELPER"); name != "" {
		helpers[name]()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var helpers = map[string]func(){
	// run: a traced run without a tracer: catch signals, start CMD (the
	// helper's arguments) as a gated child that gets them, wait, and exit
	// with ExitCode, saying on stdout "ready PID" once the child runs and
	// "status CODE SIGNAL SENT KILLED" at the end.
	"run": func() {
		sig := Catch()
		// 1 s by default: a process that ignores SIGTERM is killed after
		// it, however loaded the machine. A test whose processes all exit
		// on SIGTERM sets SESSION_TEST_GRACE long: how soon a shell's trap
		// runs is up to the scheduler (under make test's race stage, a
		// trap took > 1 s once: TestRunSignalsReachGrandchildren).
		grace := time.Second
		if d, err := time.ParseDuration(os.Getenv("SESSION_TEST_GRACE")); err == nil {
			grace = d
		}
		ch, err := Exec(Command{Path: os.Args[1], Args: os.Args[1:], Stderr: os.Stderr, Notes: os.Stderr,
			DeathSignal: syscall.SIGKILL, Grace: grace}, nil)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(120)
		}
		sig.forward(ch)
		fmt.Println("ready", ch.Pid)
		st := ch.Wait()
		fmt.Println("status", st.Code, int(st.Signal), int(st.Sent), st.Killed)
		if note := ExitNote(sig.Signal(), &st); note != "" {
			fmt.Fprintln(os.Stderr, note)
		}
		os.Exit(ExitCode(sig.Signal(), &st))
	},
	// load: catch signals, say "catching", then "load" for a while (as the
	// tracer attaches) and end as Open would if a signal came meanwhile.
	"load": func() {
		sig := Catch()
		fmt.Println("catching")
		time.Sleep(500 * time.Millisecond)
		if err := interrupted(sig); err != nil {
			var ie Interrupted
			errors.As(err, &ie)
			fmt.Println(err)
			os.Exit(ie.ExitCode())
		}
		fmt.Println("loaded")
	},
	// threads: a process of several threads (the Go runtime's), that
	// says "ready" and waits to be killed.
	"threads": func() {
		fmt.Println("ready")
		select {}
	},
}

// helper starts this test binary as helper name with args.
func helper(t *testing.T, name string, args ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SESSION_TEST_HELPER="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out), &errb
}

func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		cmd  *Status
		want int
	}{
		{"no command, no signal (-p traced processes exited)", 0, nil, 0},
		{"command exited 0", 0, &Status{}, 0},
		{"command exited 3", 0, &Status{Code: 3}, 3},
		{"command killed by SIGKILL", 0, &Status{Code: 137, Signal: syscall.SIGKILL}, 137},
		{"SIGINT, no command", syscall.SIGINT, nil, 130},
		{"SIGTERM, no command", syscall.SIGTERM, nil, 143},
		{"SIGINT, the command handled it and exited 0", syscall.SIGINT, &Status{Sent: syscall.SIGINT}, 130},
		{"SIGTERM, the command ignored it and was killed", syscall.SIGTERM, &Status{Code: 137, Signal: syscall.SIGKILL, Sent: syscall.SIGTERM, Killed: true}, 143},
	} {
		if got := ExitCode(c.sig, c.cmd); got != c.want {
			t.Errorf("%s: exit status %d, want %d", c.name, got, c.want)
		}
	}
	if n := ExitNote(syscall.SIGTERM, &Status{Sent: syscall.SIGTERM, Killed: true}); !strings.Contains(n, "did not exit after SIGTERM and was killed with SIGKILL: exit status 143") {
		t.Errorf("note for a killed command: %q", n)
	}
	if n := ExitNote(0, &Status{Code: 3}); n != "" {
		t.Errorf("note for a plain exit: %q", n)
	}
}

// A run's exit status and what the command got, with real processes: the
// helper catches signals and forwards them to its gated child.
func TestRunSignals(t *testing.T) {
	for _, c := range []struct {
		name   string
		sh     string         // the child: sh -c SH DIR
		send   syscall.Signal // to the helper (iopath), once the child wrote DIR/up
		code   int            // the helper's exit status
		status string         // "status CODE SIGNAL SENT KILLED" of the child
		stderr string
	}{
		{"exit status", "exit 3", 0, 3, "status 3 0 0 false", ""},
		{"SIGKILL of the command", "kill -KILL $$", 0, 137, "status 137 9 0 false", ""},
		{"SIGINT forwarded as SIGINT", `touch "$0/up"; exec sleep 30`, syscall.SIGINT, 130, "status 130 2 2 false", "stopped by SIGINT: exit status 130"},
		{"SIGTERM forwarded as SIGTERM", `touch "$0/up"; exec sleep 30`, syscall.SIGTERM, 143, "status 143 15 15 false", "stopped by SIGTERM: exit status 143"},
		{"a command that handles SIGINT and exits 0", `trap "exit 0" INT; touch "$0/up"; while :; do sleep 0.05; done`, syscall.SIGINT, 130, "status 0 0 2 false", ""},
		{"a command that ignores SIGTERM", `trap "" TERM; touch "$0/up"; exec sleep 30`, syscall.SIGTERM, 143, "status 137 9 15 true",
			"still running 1s after SIGTERM: sending SIGKILL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if !strings.Contains(c.stderr, "SIGKILL") { // nothing to kill: no grace to outlive
				t.Setenv("SESSION_TEST_GRACE", "60s")
			}
			cmd, out, errb := helper(t, "run", "sh", "-c", c.sh, dir)
			line, _ := out.ReadString('\n')
			if !strings.HasPrefix(line, "ready ") {
				t.Fatalf("helper: %q, stderr %q", line, errb)
			}
			if c.send != 0 {
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					if _, err := os.Stat(filepath.Join(dir, "up")); err == nil {
						break // the shell has set its traps
					}
					if time.Now().After(deadline) {
						t.Fatal("the child never started")
					}
				}
				cmd.Process.Signal(c.send)
			}
			rest, _ := io.ReadAll(out)
			code := exitCodeOf(cmd.Wait())
			if code != c.code || strings.TrimSpace(string(rest)) != c.status {
				t.Errorf("exit status %d, child %q; want %d, %q (stderr %q)", code, rest, c.code, c.status, errb)
			}
			if !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("stderr %q, want %q", errb, c.stderr)
			}
		})
	}
}

// issue 10 item 5: a SIGINT that comes while the hooks attach ends the run,
// also when iopath started with SIGINT ignored (a shell's background job).
func TestSignalWhileLoadingStartedIgnored(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap "" INT; exec "$0"`, os.Args[0])
	cmd.Env = append(os.Environ(), "SESSION_TEST_HELPER=load")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(out)
	if line, _ := r.ReadString('\n'); line != "catching\n" {
		t.Fatalf("helper said %q", line)
	}
	if ign := testutil.SigMask(t, cmd.Process.Pid, "SigIgn"); ign&(1<<(syscall.SIGINT-1)) != 0 {
		t.Errorf("SIGINT still ignored after Catch (SigIgn %x)", ign)
	}
	cmd.Process.Signal(syscall.SIGINT)
	rest, _ := io.ReadAll(r)
	if code := exitCodeOf(cmd.Wait()); code != 130 || !strings.Contains(string(rest), "stopped by SIGINT before the trace started") {
		t.Errorf("exit status %d, output %q; want 130 and the reason", code, rest)
	}
}

// issue 10 item 7: a child started with DeathSignal dies with iopath, even
// when iopath is killed with SIGKILL.
func TestDeathSignal(t *testing.T) {
	cmd, out, errb := helper(t, "run", "sleep", "30")
	line, _ := out.ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	if err != nil {
		t.Fatalf("helper: %q, stderr %q", line, errb)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) || zombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the child %d still runs 5 s after its parent was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	return strings.Contains(s[strings.LastIndexByte(s, ')'):], ") Z ")
}
