package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// The kernel sends a thread's path again whenever the name it reads
// through changes, not only the inode: a hard link read after the original
// (one thread: cat) must be reported under its own name.
func TestPathOfHardLink(t *testing.T) {
	needRoot(t)
	dir := diskDir(t)
	a := filepath.Join(dir, "orig")
	b := filepath.Join(dir, "link")
	if err := os.WriteFile(a, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	tr := traceCmd(t, "--all", "--", "cat", a, b, a)
	paths := map[string]int{}
	for _, c := range tr.forIno(inoOf(t, a)) {
		if record.IsRead(c.Syscall) { // not cat's posix_fadvise(SEQUENTIAL) records
			paths[c.Path]++
		}
	}
	// cat reads each file twice (data, then end of file).
	if paths[a] != 4 || paths[b] != 2 || len(paths) != 2 {
		t.Fatalf("reads by path: %v (want %s: 4, %s: 2)", paths, a, b)
	}
}

// A file renamed between two reads of one thread (bash's read builtin on a
// kept-open fd) is reported under its new name after the rename.
func TestPathAfterRename(t *testing.T) {
	needRoot(t)
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("needs /bin/bash")
	}
	dir := diskDir(t)
	a := filepath.Join(dir, "before")
	b := filepath.Join(dir, "after")
	if err := os.WriteFile(a, []byte("abcdefgh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ino := inoOf(t, a)
	tr := traceCmd(t, "--all", "--", "/bin/bash", "-c", `exec 3<"$0"; read -r -n 2 x <&3; mv "$0" "$1"; read -r -n 2 x <&3`, a, b)
	var seq []string
	for _, c := range tr.forIno(ino) {
		if len(seq) == 0 || seq[len(seq)-1] != c.Path {
			seq = append(seq, c.Path)
		}
	}
	if len(seq) != 2 || seq[0] != a || seq[1] != b {
		t.Fatalf("paths of the reads, in order: %q (want %q then %q)", seq, a, b)
	}
}

// The traced command's own output shares iopath's stdout: iopath writes
// whole records, at most PIPE_BUF bytes at a time, so no line of either is
// cut by the other.
func TestJSONLinesWithCommandOutput(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	dir := diskDir(t)
	f := coldFile(t, dir, 4<<20)
	// dd streams a thousand records while the loop prints its lines
	// (O_DIRECT in 4 KiB blocks: some disks refuse 512-byte ones).
	cmd := iopathCmd(os.TempDir(), "trace", "--json", "--", "/bin/sh", "-c",
		`{ dd if="$0" of=/dev/null bs=4096 count=1024 iflag=direct 2>/dev/null || echo "dd failed: $?"; } &
		i=0; while [ $i -lt 200 ]; do echo "PROGRAM OUTPUT LINE $i"; sleep 0.005; i=$((i+1)); done; wait`, f)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	prog := regexp.MustCompile(`^PROGRAM OUTPUT LINE [0-9]+$`)
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var records, lines int
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case prog.Match(line):
			lines++
		case json.Valid(line):
			records++
		default:
			t.Fatalf("a line that is neither a record nor the program's: %q", line)
		}
	}
	if lines != 200 || records < 1024 {
		t.Fatalf("%d program lines (want 200), %d records (want >= 1024)", lines, records)
	}
}

// A traced process that exited leaves the traced set: a process that later
// gets its pid (forced here with ns_last_pid) is not traced.
func TestReusedPidNotTraced(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	dir := diskDir(t)
	f := coldFile(t, dir, 1<<20)
	pidFile := filepath.Join(dir, "child.pid")
	doneFile := filepath.Join(dir, "done")
	// --all: every call of a traced process would be a record. The traced
	// shell (and so the trace) lasts until the test says it is done; it
	// writes its child's pid once the child is reaped, so the pid is free.
	cmd := iopathCmd(os.TempDir(), "trace", "--json", "--all", "--", "/bin/sh", "-c",
		`/bin/true & p=$!; wait; echo $p > "$0"; while [ ! -e "$1" ]; do sleep 0.05; done`, pidFile, doneFile)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	defer os.WriteFile(doneFile, nil, 0o644) // never leave the shell waiting
	for i := 0; i < 3000 && pid == 0; i++ {  // 30 s: slow under qemu TCG
		time.Sleep(10 * time.Millisecond)
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 1 {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if pid == 0 {
		cmd.Wait()
		t.Fatalf("the traced shell never wrote its child's pid: %s", errb.String())
	}
	// The shell wrote the pid after wait: the child has exited and been reaped.
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
		cmd.Wait()
		t.Skipf("cannot choose the next pid (%v)", err)
	}
	reuse := exec.Command("dd", "if="+f, "of=/dev/null", "bs=4096", "count=4")
	if err := reuse.Run(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(doneFile, nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if reuse.Process.Pid != pid {
		t.Skipf("another process took pid %d first (dd got %d)", pid, reuse.Process.Pid)
	}
	tr := parseRecords(t, out.Bytes())
	for _, c := range tr.calls {
		if int(c.Pid) == pid && c.Comm == "dd" {
			t.Fatalf("dd reusing the traced child's pid %d was traced: %+v", pid, c)
		}
	}
}

// A directory above a file renamed between two reads of one thread (the
// parent, then the grandparent; the fd kept open) changes the path of the
// reads after it, though the file's own dentry, parent and name did not
// change (issue 10 item 10).
func TestPathAfterDirRename(t *testing.T) {
	needRoot(t)
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("needs /bin/bash")
	}
	dir := diskDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "a", "b", "file")
	if err := os.WriteFile(f, []byte("abcdefgh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ino := inoOf(t, f)
	tr := traceCmd(t, "--all", "--", "/bin/bash", "-c",
		`cd "$0"; exec 3<a/b/file; read -r -n 2 x <&3; mv a/b a/c; read -r -n 2 x <&3; mv a z; read -r -n 2 x <&3`, dir)
	var seq []string
	for _, c := range tr.forIno(ino) {
		if len(seq) == 0 || seq[len(seq)-1] != c.Path {
			seq = append(seq, c.Path)
		}
	}
	want := []string{f, filepath.Join(dir, "a", "c", "file"), filepath.Join(dir, "z", "c", "file")}
	if !slices.Equal(seq, want) {
		t.Fatalf("paths of the reads, in order: %q (want %q)", seq, want)
	}
}
