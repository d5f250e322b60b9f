package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/demo"
	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// --comm traces the tasks whose comm is the name given, at each call (the
// comm is compared at every call, in two loads: bpf/helpers.h): a rename
// (prctl PR_SET_NAME) starts or stops a task's tracing at its next call,
// and the comm must equal the name, not start with it or be its prefix.
func TestTraceCommFilter(t *testing.T) {
	needRoot(t)
	needPython(t)
	dir := diskDir(t)
	var files []string
	for i := range 6 {
		files = append(files, testColdNamed(t, dir, fmt.Sprintf("comm-%d.dat", i)))
	}
	// dd run as "ioptst" gets that comm at exec.
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("needs dd")
	}
	named := filepath.Join(dir, "ioptst")
	copyFile(t, dd, named, 0o755)

	cmd, out, errb := startTrace(t, os.TempDir(), "trace", "--json", "--comm", "ioptst")
	// Each read is one pread of a cold file (a miss: a streamed record).
	prog := fmt.Sprintf(`import ctypes, os
libc = ctypes.CDLL(None)
def name(n): libc.prctl(15, ctypes.c_char_p(n.encode()), 0, 0, 0)
def read(p):
    fd = os.open(p, os.O_RDONLY); os.pread(fd, 4096, 0); os.close(fd)
name("ioptst"); read(%q)
name("ioptst2"); read(%q)
name("iopts"); read(%q)
name("ioptst"); read(%q)
name("other"); read(%q)
`, files[0], files[1], files[2], files[3], files[4])
	if b, err := exec.Command("python3", "-c", prog).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v %s", err, b)
	}
	if b, err := exec.Command(named, "if="+files[5], "of=/dev/null", "bs=4096", "count=1", "status=none").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", named, err, b)
	}
	tr := stopTrace(t, cmd, out, errb)
	want := []bool{true, false, false, true, false, true}
	for i, f := range files {
		got := tr.forIno(inoOf(t, f))
		if want[i] && len(got) == 0 {
			t.Errorf("%s: read under comm ioptst not traced", f)
		}
		if !want[i] && len(got) > 0 {
			t.Errorf("%s: read under another comm traced: comm %q", f, got[0].Comm)
		}
		for _, c := range got {
			if c.Comm != "ioptst" {
				t.Errorf("%s: record with comm %q", f, c.Comm)
			}
		}
	}
}

// A comm of the kernel's full 15 bytes (a longer name is cut at exec) is
// matched in all 16 bytes of the task's comm (its NUL included).
func TestTraceCommFifteenBytes(t *testing.T) {
	needRoot(t)
	dir := diskDir(t)
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("needs dd")
	}
	long := filepath.Join(dir, "iopath-commtest-long") // comm "iopath-commtest"
	copyFile(t, dd, long, 0o755)
	f := testColdNamed(t, dir, "comm15.dat")
	cmd, out, errb := startTrace(t, os.TempDir(), "trace", "--json", "--comm", "iopath-commtest")
	run := exec.Command(long, "if="+f, "of=/dev/null", "bs=4096", "count=1", "status=none")
	run.Args[0] = "dd" // a busybox dd (the VMs) picks its applet by argv[0]; comm comes from the file name
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", long, err, b)
	}
	tr := stopTrace(t, cmd, out, errb)
	got := tr.forIno(inoOf(t, f))
	if len(got) == 0 || !strings.HasPrefix(got[0].Comm, "iopath-commtest") {
		t.Errorf("the read of %s by comm iopath-commtest: %d records %+v", f, len(got), got)
	}
}

// testColdNamed is a cold 64 KiB file named name in dir.
func testColdNamed(t *testing.T, dir, name string) string {
	t.Helper()
	return testutil.ColdFile(t, dir, name, 64<<10)
}

// stopTrace ends a trace started by startTrace (SIGINT) and parses its
// JSON output.
func stopTrace(t *testing.T, cmd *exec.Cmd, out, errb *bytes.Buffer) *traced {
	t.Helper()
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	tr := parseRecords(t, out.Bytes())
	if tr.summary == nil {
		t.Fatalf("no summary; stderr:\n%s", errb)
	}
	return tr
}

// --comm NAME traces the execve that makes a task NAME: the caller has
// another name until the kernel renames it mid-load, and what the load
// reads (a cold binary's ELF header and readahead) is that execve
// record's, named NAME. An execve of another name stays untraced.
func TestTraceCommExec(t *testing.T) {
	needRoot(t)
	dir := diskDir(t)
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("needs dd")
	}
	named, other := filepath.Join(dir, "ioptsx"), filepath.Join(dir, "ioptsy")
	copyFile(t, dd, named, 0o755)
	copyFile(t, dd, other, 0o755)
	cmd, out, errb := startTrace(t, os.TempDir(), "trace", "--json", "--comm", "ioptsx")
	for _, p := range []string{named, other} {
		if left, err := demo.Evict(p); err != nil || left != 0 {
			t.Fatalf("evicting %s: %d pages left, %v", p, left, err)
		}
		// The program's own run may fail (in the VMs dd is a BusyBox
		// applet, unknown by this name): its exec succeeded first.
		exec.Command(p, "if=/dev/null", "of=/dev/null", "status=none").Run()
	}
	tr := stopTrace(t, cmd, out, errb)
	var execs []record.Syscall
	for _, c := range tr.calls {
		if c.Syscall == "execve" {
			execs = append(execs, c)
		}
	}
	if len(execs) != 1 {
		t.Fatalf("%d execve records, want 1 (of %s): %+v", len(execs), named, execs)
	}
	c := execs[0]
	var bytes uint64
	for _, b := range c.Bios {
		bytes += uint64(b.Bytes)
	}
	if c.Comm != "ioptsx" || c.Path != named || bytes == 0 {
		t.Errorf("execve record: comm %q, path %q, %d bytes read from disk; want comm ioptsx, path %s, the cold binary's reads", c.Comm, c.Path, bytes, named)
	}
	if n := tr.summary.UnattributedCauses["exec"].Bios; n != 0 {
		t.Errorf("%d bios unattributed with cause exec", n)
	}
	t.Logf("execve of %s: %d bios, %d bytes", named, len(c.Bios), bytes)
}
