package main

// Privileged tests of iopath in a pid namespace (issue 10, breaker's items
// 1 and 2), made with util-linux's `unshare -pf --mount-proc`: this test
// binary, acting as iopath, runs as pid 1 of a new pid namespace with its
// own /proc, as in a container without --pid=host.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nsRun runs iopath ARGS in a new pid namespace (and mount namespace, for
// its /proc) with TMPDIR=tmp, and returns stdout, stderr and the exit code.
func nsRun(t *testing.T, tmp string, args ...string) (string, string, int) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare (util-linux) is needed: %v", err)
	}
	cmd := exec.Command("unshare", append([]string{"-pf", "--mount-proc", os.Args[0], "-test.run=^TestWorkloadHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "IOPATH_TEST_HELPER=1", "TMPDIR="+tmp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := exitStatus(cmd.Run())
	if code < 0 {
		t.Fatalf("unshare %q did not run", args)
	}
	return out.String(), errb.String(), code
}

// In a pid namespace the BPF programs see host pids while iopath names its
// own: before, `trace -- dd` there printed an empty summary and exited 0,
// and `trace --workload` reported 0 reads for its preads. Now every way of
// choosing what to trace is refused in one line, with exit 1, before any
// work file is made.
func TestTracePidNamespaceRefused(t *testing.T) {
	needRoot(t)
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, args := range [][]string{
		{"trace", "--", "dd", "if=" + f, "of=/dev/null", "bs=1M", "count=4"},
		{"trace", "--workload", "read-1byte", "--", "--count", "100"},
		{"trace", "-p", "1", "--duration", "1s"},
		{"top", "--duration", "1s"},
		{"demo", "read-1byte"},
		{"demo", "write-1byte", "--expire-centisecs", "100"},
	} {
		stdout, stderr, code := nsRun(t, tmp, args...)
		if code != 1 || stdout != "" {
			t.Errorf("in a pid namespace, iopath %q: exit %d, stdout %q; want exit 1 and no output", args, code, stdout)
		}
		if !strings.HasPrefix(stderr, "iopath: iopath runs in a pid namespace (NSpid 1, pid:[") || strings.Count(stderr, "\n") != 1 ||
			!strings.Contains(stderr, "run it in the host's, e.g. docker run --pid=host") {
			t.Errorf("in a pid namespace, iopath %q: stderr %q, want one line naming the namespace and --pid=host", args, stderr)
		}
		if l := leftovers(tmp); len(l) > 0 {
			t.Errorf("iopath %q left %v", args, l)
		}
	}
}

// A run in a pid namespace must not remove a host run's work directory
// because the host pid in its name does not exist in the namespace (before,
// it did: kill(pid, 0) said ESRCH there). Once the host run is dead, the
// next host run removes it.
func TestStaleWorkDirOtherPidNamespace(t *testing.T) {
	needRoot(t)
	tmp := t.TempDir()
	host := iopathCmd(tmp, "workload", "read-1byte", "--duration", "1m")
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	prefix := filepath.Join(tmp, fmt.Sprintf("iopath-workload-%d-", host.Process.Pid))
	var dir string
	for deadline := time.Now().Add(readyWait()); dir == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("iopath workload %d made no work directory in %s: %v", host.Process.Pid, tmp, leftovers(tmp))
		}
		for _, l := range leftovers(tmp) {
			if strings.HasPrefix(l, prefix) && filepath.Dir(l) == tmp {
				dir = l
			}
		}
	}
	_, stderr, code := nsRun(t, tmp, "workload", "read-1byte", "--count", "10")
	if code != 0 || strings.Contains(stderr, "removed") {
		t.Errorf("the run in a pid namespace: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the running host run's %s was removed by a run in another pid namespace: %v", dir, err)
	}
	host.Process.Kill()
	host.Wait()
	_, stderr, code = runIopath(t, tmp, "workload", "read-1byte", "--count", "10")
	if code != 0 || !strings.Contains(stderr, fmt.Sprintf("removed %s, left by iopath pid %d which no longer runs", dir, host.Process.Pid)) {
		t.Errorf("the next host run: exit %d, stderr %q", code, stderr)
	}
	if l := leftovers(tmp); len(l) > 0 {
		t.Errorf("left after the next host run: %v", l)
	}
}
