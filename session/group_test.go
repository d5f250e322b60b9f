package session

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The SIGKILL after the grace period, and a forwarded signal, reach the
// command's children too (its process group), not only its pid: a grandchild
// that ignores SIGTERM once survived untold.
func TestRunSignalsReachGrandchildren(t *testing.T) {
	for _, c := range []struct {
		name, sh, status, stderr string
	}{
		{"the command and its child ignore SIGTERM",
			`trap "" TERM; sleep 30 >/dev/null 2>&1 & echo $! > "$0/gc"; touch "$0/up"; wait`,
			"status 137 9 15 true", "still running 1s after SIGTERM: sending SIGKILL"},
		{"the command exits on SIGTERM, its child ignores it",
			`sh -c 'trap "" TERM; touch "$0/up"; exec sleep 30' "$0" >/dev/null 2>&1 & echo $! > "$0/gc"; wait`,
			"status 143 15 15 false", "1 process of sh (its process group, or descendants that left it) still running 1s after SIGTERM: sending SIGKILL"},
		{"the command's child left the group (setsid) and its parent exits",
			`setsid sleep 30 >/dev/null 2>&1 & echo $! > "$0/gc"; touch "$0/up"; wait`,
			"status 143 15 15 false", ""},
		{"the command's child left the group (setsid) and ignores SIGTERM",
			`setsid sh -c 'trap "" TERM; touch "$0/up"; exec sleep 30' "$0" >/dev/null 2>&1 & echo $! > "$0/gc"; wait`,
			"status 143 15 15 false", "1 process of sh (its process group, or descendants that left it) still running 1s after SIGTERM: sending SIGKILL"},
		{"the command's child exits on SIGTERM",
			`trap 'wait; exit 5' TERM; sleep 30 >/dev/null 2>&1 & echo $! > "$0/gc"; touch "$0/up"; wait`,
			"status 5 0 15 false", ""},
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
			waitFile(t, filepath.Join(dir, "up"))
			waitFile(t, filepath.Join(dir, "gc"))
			b, err := os.ReadFile(filepath.Join(dir, "gc"))
			if err != nil {
				t.Fatal(err)
			}
			gc, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })
			cmd.Process.Signal(syscall.SIGTERM)
			rest, _ := io.ReadAll(out)
			code := exitCodeOf(cmd.Wait())
			if code != 143 || strings.TrimSpace(string(rest)) != c.status {
				t.Errorf("exit status %d, child %q; want 143, %q (stderr %q)", code, rest, c.status, errb)
			}
			if !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("stderr %q, want %q", errb, c.stderr)
			}
			if c.stderr == "" && strings.Contains(errb.String(), "SIGKILL") {
				t.Errorf("stderr %q: nothing was left to kill", errb)
			}
			for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if err := syscall.Kill(gc, 0); errors.Is(err, syscall.ESRCH) || zombie(gc) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the command's child %d still runs after iopath ended (stderr %q)", gc, errb)
				}
			}
		})
	}
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", p)
		}
	}
}

// family finds the group's members and the descendants that left it,
// without zombies, the command itself or unrelated processes.
func TestFamily(t *testing.T) {
	ps := []proc{
		{pid: 1, ppid: 0, pgrp: 1, state: 'S'},
		{pid: 100, ppid: 1, pgrp: 100, state: 'S'},   // the command
		{pid: 101, ppid: 100, pgrp: 100, state: 'S'}, // its child
		{pid: 102, ppid: 101, pgrp: 102, state: 'S'}, // a grandchild in its own group (setsid)
		{pid: 103, ppid: 102, pgrp: 102, state: 'D'}, // and its child
		{pid: 104, ppid: 100, pgrp: 100, state: 'Z'}, // a zombie
		{pid: 105, ppid: 1, pgrp: 100, state: 'S'},   // an orphan still in the group
		{pid: 200, ppid: 1, pgrp: 200, state: 'S'},   // unrelated
	}
	var got []int
	for _, p := range family(ps, 100, 100) {
		got = append(got, p.pid)
	}
	if want := []int{101, 102, 103, 105}; !equalInts(got, want) {
		t.Errorf("family %v, want %v", got, want)
	}
	got = got[:0]
	for _, p := range family(ps, 100, 0) { // no group of its own: descendants only
		got = append(got, p.pid)
	}
	if want := []int{101, 102, 103}; !equalInts(got, want) {
		t.Errorf("family without a group %v, want %v", got, want)
	}
	// An orphan re-parented to iopath (the subreaper) is the command's,
	// with its descendants; another command iopath started is not.
	adoptMu.Lock()
	was, wasCommands := adopter, commands
	adopter, commands = 50, map[int]bool{60: true}
	adoptMu.Unlock()
	t.Cleanup(func() {
		adoptMu.Lock()
		adopter, commands = was, wasCommands
		adoptMu.Unlock()
	})
	ps = append(ps, proc{pid: 106, ppid: 50, pgrp: 106, state: 'S'}, proc{pid: 107, ppid: 106, pgrp: 106, state: 'S'},
		proc{pid: 60, ppid: 50, pgrp: 60, state: 'S'})
	got = got[:0]
	for _, p := range family(ps, 100, 100) {
		got = append(got, p.pid)
	}
	if want := []int{101, 102, 103, 105, 106, 107}; !equalInts(got, want) {
		t.Errorf("family with adopted orphans %v, want %v", got, want)
	}
	p, ok := parseStat("42 (a) (b) D 7 42 42 0 -1")
	if !ok || p.pid != 42 || p.comm != "a) (b" || p.state != 'D' || p.ppid != 7 || p.pgrp != 42 {
		t.Errorf("parseStat: %+v %v", p, ok)
	}
	if l := survivorsLine([]proc{{pid: 9, comm: "dd", state: 'D'}}, time.Second); l != "iopath: 1 process of the command still alive 1s after SIGKILL (state D: waiting for IO): 9 (dd, state D)" {
		t.Errorf("survivors line %q", l)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
