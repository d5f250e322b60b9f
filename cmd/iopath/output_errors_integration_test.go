package main

// Tests of iopath's output failing and of bad output paths and environment
// values (issue 10, items 8 and 9: one line naming cause and fix, non-zero
// exit, nothing left behind, nothing lost silently).

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testutil"
)

// runWith runs iopath ARGS with stdout (nil: a buffer), extra environment
// and working directory dir; it returns stdout (if buffered), stderr, the
// exit status and how long it ran.
func runWith(t *testing.T, stdout *os.File, env []string, dir string, args ...string) (string, string, int, time.Duration) {
	t.Helper()
	cmd := iopathCmd(os.TempDir(), args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdout != nil {
		cmd.Stdout = stdout
	}
	start := time.Now()
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), exitStatus(err), time.Since(start)
}

// lastLine is the last line of s.
func lastLine(s string) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return l[len(l)-1]
}

// `-o f -- cmd > f` once truncated f and interleaved both writers;
// `--timeline f` or `--report f` (or /dev/stdout) replaced f at the end,
// the command's output and the summary gone, exit 0. All are refused before
// anything is opened (no root needed: nothing loads).
func TestTraceOutputIsStdout(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "same.txt")
	cases := [][]string{{"-o", same}, {"--timeline", same}, {"--report", same}}
	// /dev/stdout is the file descriptor's link where udev or systemd made
	// it (/proc/self/fd/1); in the VMs' bare devtmpfs there is none, and
	// the path is a new file there like any other.
	if target, err := os.Readlink("/dev/stdout"); err == nil && strings.HasPrefix(target, "/proc/self/fd") {
		cases = append(cases, []string{"--timeline", "/dev/stdout"})
	}
	for _, args := range cases {
		if err := os.WriteFile(same, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(same, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, stderr, code, _ := runWith(t, f, nil, dir, append(append([]string{"trace"}, args...), "--", "echo", "hello")...)
		f.Close()
		if code != 1 || !strings.Contains(stderr, args[0]+" "+args[1]+" is also iopath's standard output") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q: want 1 and one line refusing it", args, code, stderr)
		}
		if b, _ := os.ReadFile(same); string(b) != "before\n" {
			t.Errorf("%v: the file became %q", args, b)
		}
		if left := leftovers(dir); len(left) != 1 {
			t.Errorf("%v: left behind: %v", args, left)
		}
	}
}

// `-o f -- cmd 2> f` truncated what iopath and the command print on stderr.
func TestTraceOutputIsStderr(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "same.txt")
	if err := os.WriteFile(same, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(same, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := iopathCmd(os.TempDir(), "trace", "-o", same, "--", "sh", "-c", "echo to-stderr >&2")
	cmd.Dir, cmd.Stderr = dir, f
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want 1", err)
	}
	b, _ := os.ReadFile(same)
	if !strings.HasPrefix(string(b), "before\niopath: -o "+same+" is also iopath's standard error (2> "+same+")") || strings.Count(string(b), "\n") != 2 {
		t.Errorf("the file became %q: want it kept, and one line refusing -o", b)
	}
}

// A write error on iopath's output stops the run with one line naming the
// output and the error, and exit status 1; a traced command still running
// gets SIGTERM. EPIPE (| head) ends quietly with 141.
func TestTraceOutputWriteErrors(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	devfull, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devfull.Close()
	// -o /dev/full and -o /proc/version are refused at the start
	// (TestTraceFlagsRefused); as stdout they fail at the write.
	procVersion, err := os.OpenFile("/proc/version", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer procVersion.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		stdout *os.File
		args   []string
		want   string
	}{
		{"--json > /dev/full", devfull, []string{"trace", "--json", "--", "true"}, "iopath: writing stdout: no space left on device:"},
		{"> /proc/version", procVersion, []string{"trace", "--", "true"}, "iopath: writing stdout: input/output error: iopath stopped there, what came after is lost: it is a file of the kernel's proc filesystem"},
		// records come while the command runs: it is stopped, not waited for
		{"--all > /dev/full, a long command", devfull, []string{"trace", "--all", "--", "sh", "-c", "cat /etc/passwd >/dev/null; sleep 60"}, "iopath: writing stdout: no space left on device:"},
		// the demo's explanation: no trace starts after its header failed
		{"demo read-1byte > /dev/full", devfull, []string{"demo", "read-1byte"}, "iopath: writing stdout: no space left on device:"},
		{"top --json > /dev/full", devfull, []string{"top", "--json", "--interval", "100ms", "--", "sleep", "60"}, "iopath: writing stdout: no space left on device:"},
	} {
		_, stderr, code, took := runWith(t, c.stdout, nil, dir, c.args...)
		if code != 1 || !strings.HasPrefix(lastLine(stderr), c.want) {
			t.Errorf("%s: exit %d, last line %q; want 1 and %q", c.name, code, lastLine(stderr), c.want)
		}
		if strings.Count(stderr, "writing ") != 1 {
			t.Errorf("%s: the error is said %d times: %q", c.name, strings.Count(stderr, "writing "), stderr)
		}
		if took > 30*time.Second {
			t.Errorf("%s: ran %s: the run was not stopped", c.name, took)
		}
	}
	if left := leftovers(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// EPIPE: the reader of stdout is gone.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	_, stderr, code, took := runWith(t, w, nil, dir, "trace", "--all", "--", "sh", "-c", "cat /etc/passwd >/dev/null; sleep 60")
	w.Close()
	if code != 141 || strings.Contains(stderr, "writing") || took > 30*time.Second {
		t.Errorf("stdout's reader gone: exit %d after %s, stderr %q; want 141, quietly, at once", code, took, stderr)
	}
}

// A bad IOPATH_PROBE_CACHE, IOPATH_HIT_STATS_ENTRIES or IOPATH_SPARES is refused in one
// line naming the variable and its range, before anything is created or
// loaded (bogus once created ./bogus; 4294967295 failed as "map create:
// argument list too long" and removed the probe cache).
func TestTraceBadEnv(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	dir := t.TempDir()
	for _, c := range []struct{ env, want string }{
		{"IOPATH_PROBE_CACHE=bogus", `iopath: IOPATH_PROBE_CACHE="bogus" is not an absolute path: give off, or the absolute path of an existing directory`},
		{"IOPATH_PROBE_CACHE=" + filepath.Join(dir, "new"), "is not an existing directory"},
		{"IOPATH_HIT_STATS_ENTRIES=4294967295", `iopath: IOPATH_HIT_STATS_ENTRIES="4294967295" is not a number of entries from 1 to 1048576`},
		// A typo was the default, silently (a new user, 2026-12-07).
		{"IOPATH_SPARES=on", `iopath: IOPATH_SPARES="on" is not a choice: give now (attach the spare programs at start), off (never)`},
	} {
		_, stderr, code, _ := runWith(t, nil, []string{c.env}, dir, "trace", "--", "true")
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "probe cache") {
			t.Errorf("%s: exit %d, stderr %q; want 1 and one line with %q", c.env, code, stderr, c.want)
		}
	}
	if left := leftovers(dir); len(left) != 0 {
		t.Errorf("created: %v", left)
	}
}
