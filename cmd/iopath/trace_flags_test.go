package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// issue 10 item 8: values that used to be accepted silently are refused
// with one line, exit status 1, nothing left behind (before any BPF load:
// no root needed).
func TestTraceFlagsRefused(t *testing.T) {
	tmp := t.TempDir()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--ringbuf-size 0 is not a power of two: give a power of two from 4096 to 1073741824 bytes, e.g. --ringbuf-size 8388608", []string{"trace", "--ringbuf-size", "0", "--", "true"}},
		{"--ringbuf-size 12288 is not a power of two: give a power of two from 4096 to 1073741824 bytes", []string{"trace", "--ringbuf-size", "12288", "--", "true"}},
		// Powers of two out of range were said not to be powers of two.
		{"--ringbuf-size 2147483648 (2.0 GiB) is too large: the ring buffer is kernel memory, never swapped out, all of it taken at load; give at most 1073741824 (1.0 GiB), e.g. --ringbuf-size 8388608", []string{"trace", "--ringbuf-size", "2147483648", "--", "true"}},
		{"--ringbuf-size 2048 is too small: the kernel's ring buffer is at least one page, 4096 bytes; give 4096 to 1073741824, e.g. --ringbuf-size 8388608", []string{"trace", "--ringbuf-size", "2048", "--", "true"}},
		// A missing command after them: the old code, which accepted the
		// value, fails there instead of loading a 7 GiB map.
		{"--max-dirty-pages 67108864 would take 7.0 GiB of kernel memory, never swapped out, all at load (the dirty_pages map: 112 B per folio): give at most 8388608 (896.0 MiB; the limit is 1.0 GiB a map)",
			[]string{"trace", "--max-dirty-pages", "67108864", "--", "/nonexistent/cmd"}},
		{"--max-dirty-pages 0 is out of range: choose 1 to 8388608 folios", []string{"trace", "--max-dirty-pages", "0", "--", "/nonexistent/cmd"}},
		{"--duration -1s is negative: give a duration of 0 or more, e.g. --duration 10s", []string{"trace", "--duration", "-1s", "--", "true"}},
		{"--settle -1s is negative", []string{"trace", "--settle", "-1s", "--", "true"}},
		{"--ready-file " + tmp + "/nonexist/r: directory " + tmp + "/nonexist does not exist: create it or choose another path", []string{"trace", "--ready-file", tmp + "/nonexist/r", "--", "/nonexistent/cmd"}},
		{"--ready-file " + tmp + "/nonexist/r: directory " + tmp + "/nonexist does not exist", []string{"top", "--ready-file", tmp + "/nonexist/r", "--", "/nonexistent/cmd"}},
		{"--ready-file " + tmp + "/nonexist/r: directory " + tmp + "/nonexist does not exist", []string{"serve", "--ready-file", tmp + "/nonexist/r", "--per-comm", "a-name-too-long-for-comm"}},
		{"--interval 1ns is too short: give 10ms or more, e.g. --interval 1s, or 0 for none", []string{"trace", "--interval", "1ns", "--", "/nonexistent/cmd"}},
		{"--interval 1ns is too short: give 10ms or more, e.g. --interval 1s", []string{"top", "--interval", "1ns", "--", "/nonexistent/cmd"}},
		{"--wait-writeback -5s is negative", []string{"trace", "--wait-writeback", "-5s", "--", "true"}},
		{"--files -1 is negative: give 0 (every file) or more, e.g. --files 200", []string{"trace", "--files", "-1", "--", "true"}},
		{"--duration -1s is negative", []string{"trace", "--workload", "read-1byte", "--duration", "-1s"}},
		// A workload's flag before --: it was sent to `iopath trace --help`.
		{"unknown flag: --dir: it is a flag of the workload (see iopath workload --help): give the workload's flags after --, as in: iopath trace --workload read-1byte -- --dir /proc",
			[]string{"trace", "--workload", "read-1byte", "--dir", "/proc"}},
		{"unknown flag: --nosuch: `iopath trace --help` lists the flags it takes", []string{"trace", "--workload", "read-1byte", "--nosuch", "/proc"}},
		{"unknown flag: --dir: `iopath trace --help` lists the flags it takes", []string{"trace", "--dir", "/proc", "--", "true"}},
		{"--timeout -1s is negative: give how long to wait for writeback", []string{"demo", "write-1byte", "--timeout", "-1s"}},
		// --dir /nonexistent: the old code, which ran the demo, fails there
		// instead of running it.
		{"--expire-centisecs -5 is negative: give the age in 1/100 s at which dirty data is written back", []string{"demo", "write-1byte", "--expire-centisecs", "-5", "--dir", "/nonexistent"}},
		{"--timeout 0 would not wait for writeback, so the byte would never be seen reaching the disk", []string{"demo", "write-1byte", "--timeout", "0", "--dir", "/nonexistent"}},
		{"--expire-centisecs 9000 (1m30s) is not shorter than --timeout 1m30s", []string{"demo", "write-1byte", "--expire-centisecs", "9000", "--dir", "/nonexistent"}},
		{"--expire-centisecs and --timeout set the wait for periodic writeback, which --fsync does not do", []string{"demo", "write-1byte", "--fsync", "--timeout", "5s", "--dir", "/nonexistent"}},
		{"--fsync is a flag of demo write-1byte only: drop it, or run iopath demo write-1byte --fsync", []string{"demo", "read-1byte", "--fsync", "--dir", "/nonexistent"}},
		{"--expire-centisecs is a flag of demo write-1byte only", []string{"demo", "seq-vs-rand", "--expire-centisecs", "500", "--dir", "/nonexistent"}},
		{"-p 0 is not a process: pid 0 is the kernel's idle task, which makes no system calls; give the pid of a running process, e.g. from `pgrep NAME`", []string{"trace", "-p", "0"}},
		{"-p -1 is not a process: pids are positive", []string{"top", "-p", "-1"}},
		{"pid 2 is a kernel thread: it makes no system calls to trace", []string{"trace", "-p", "2"}},
		{"--comm kthreadd names only kernel threads (1): they make no system calls to trace", []string{"trace", "--comm", "kthreadd", "--duration", "1s"}},
		{"--comm kthreadd names only kernel threads (1): they make no system calls to trace", []string{"top", "--comm", "kthreadd", "--duration", "1s"}},
		{"-o " + tmp + "/no/such/dir/out: directory " + tmp + "/no/such/dir does not exist: create it or choose another path", []string{"trace", "-o", tmp + "/no/such/dir/out", "--", "true"}},
		{"-o /proc/x.json: /proc is on proc, a kernel filesystem that holds no files of ours: choose a directory on a disk or a tmpfs", []string{"trace", "-o", "/proc/x.json", "--", "true"}},
		// Refused at the start: they failed at the first write, the summary
		// at the very end for a command without IO.
		{"-o /dev/full is the full device (1:7), which fails every write with \"no space left on device\": give -o a file on a disk, or /dev/null to keep no records", []string{"trace", "-o", "/dev/full", "--", "true"}},
		{"-o /proc/version is a file of the kernel's proc filesystem, which takes no records (the first write would fail): give -o a file on a disk or a tmpfs", []string{"trace", "-o", "/proc/version", "--", "true"}},
		{"-o /proc/self/status is a file of the kernel's proc filesystem", []string{"trace", "--workload", "read-1byte", "-o", "/proc/self/status"}},
		{"-o /sys/kernel/uevent_seqnum is a file of the kernel's sysfs filesystem", []string{"top", "--json", "-o", "/sys/kernel/uevent_seqnum", "--", "true"}},
		{"-o " + tmp + "/nofile/ ends in \"/\", which names a directory (and there is none): give a file name", []string{"trace", "-o", tmp + "/nofile/", "--", "true"}},
		{"--report /proc/x.html: /proc is on proc, a kernel filesystem", []string{"trace", "--report", "/proc/x.html", "--", "true"}},
		{"--timeline " + tmp + "/nofile/ ends in \"/\", which names a directory (and there is none)", []string{"trace", "--timeline", tmp + "/nofile/", "--", "true"}},
		{"-o and --timeline both name " + tmp + "/t: give them different files", []string{"trace", "-o", tmp + "/t", "--timeline", tmp + "/./t", "--", "true"}},
		{"-o and --report both name " + tmp + "/r: give them different files", []string{"trace", "-o", tmp + "/r", "--report", tmp + "/r", "--", "true"}},
		{`-o "" is an empty path: give a file name (e.g. -o iopath.out), or drop -o`, []string{"trace", "-o", "", "--", "true"}},
		{`--timeline "" is an empty path: give a file name (e.g. --timeline trace.json), or drop --timeline`, []string{"trace", "--timeline", "", "--", "true"}},
		{`--report "" is an empty path`, []string{"demo", "read-1byte", "--report", "", "--dir", "/nonexistent"}},
		{`--ready-file "" is an empty path`, []string{"top", "--ready-file", "", "--", "/nonexistent/cmd"}},
		{"-o and --ready-file both name " + tmp + "/x: give them different files", []string{"trace", "-o", tmp + "/x", "--ready-file", tmp + "/x", "--", "true"}},
		{"-o and --ready-file both name " + tmp + "/x", []string{"top", "-o", tmp + "/x", "--ready-file", tmp + "/x", "--", "true"}},
		{"--timeline and --ready-file both name " + tmp + "/x", []string{"trace", "--timeline", tmp + "/x", "--ready-file", tmp + "/./x", "--", "true"}},
		{"--timeline and --report both name " + tmp + "/x", []string{"trace", "--timeline", tmp + "/x", "--report", tmp + "/x", "--", "true"}},
		{empty + " is empty: the workload reads or overwrites it and needs data there; give a file with data, or drop --file", []string{"workload", "seq-read", "--file", empty}},
	} {
		checkRefused(t, tmp, c.want, c.args...)
	}
	if _, err := os.Stat(empty); err != nil {
		t.Errorf("the existing empty --file was removed: %v", err)
	}
	if st, err := os.ReadFile("/proc/2/stat"); err != nil || !strings.Contains(string(st), "(kthreadd)") {
		t.Errorf("pid 2 is not kthreadd here (%q, %v): the kernel-thread case above tested nothing", st, err)
	}
}

// -p of iopath's own pid: the shell's pid becomes iopath's at exec.
func TestTracePidSelfRefused(t *testing.T) {
	cmd := exec.Command("sh", "-c", `exec "$0" -test.run=^TestWorkloadHelperProcess$ -- trace -p $$`, os.Args[0])
	cmd.Env = append(os.Environ(), "IOPATH_TEST_HELPER=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if exitStatus(err) != 1 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 ||
		!strings.Contains(errb.String(), "is iopath itself, whose own IO is never traced: give the pid of another process") {
		t.Errorf("trace -p SELF: %v, stdout %q, stderr %q", err, out.String(), errb.String())
	}
}

// The command line a workload's flag before -- is told to use: every
// workload flag (with its value, given apart or with =) moved after --,
// before the workload flags already there; trace's own flags (--json,
// -o, -p) and their values stay; a value with a space is quoted.
func TestWorkloadFlagsAfterDash(t *testing.T) {
	tfl, wfl := newTraceCmd().Flags(), newWorkloadCmd().Flags()
	for _, c := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"trace", "--workload", "read-1byte", "--dir", "/proc"}, "iopath trace --workload read-1byte -- --dir /proc", true},
		{[]string{"trace", "--dir", "/a b", "--workload=seq-read", "--cold", "-o", "x.txt", "--json", "--count=5", "-p", "7", "--", "--bs", "1"},
			"iopath trace --workload=seq-read -o x.txt --json -p 7 -- --dir '/a b' --cold --count=5 --bs 1", true},
		{[]string{"trace", "--dir", "/proc", "--", "true"}, "iopath trace -- --dir /proc true", false},
	} {
		if got, ok := workloadFlagsAfterDash(tfl, wfl, c.args); got != c.want || ok != c.ok {
			t.Errorf("%q: %q, %v; want %q, %v", c.args, got, ok, c.want, c.ok)
		}
	}
}
