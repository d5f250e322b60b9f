package tracer

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"golang.org/x/sys/unix"
)

const taskHitsCalls = 1000

// TestTaskHitsHelperProcess is the traced process of TestSummaryTaskHits:
// taskHitsCalls 1-byte preads of a cached file on one thread, then "done"
// on stdout, then it waits (alive) until its stdin closes.
func TestTaskHitsHelperProcess(t *testing.T) {
	path := os.Getenv("IOPATH_TEST_TASKHITS_FILE")
	if path == "" {
		t.Skip("helper process")
	}
	runtime.LockOSThread()
	f, err := os.Open(path)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	bufio.NewReader(os.Stdin).ReadString('\n') // traced from now on
	b := make([]byte, 1)
	for i := range taskHitsCalls {
		if _, err := unix.Pread(int(f.Fd()), b, int64(i)); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
	}
	fmt.Println("done")
	bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// TestSummaryTaskHits: cache hits of a thread still alive at the end are
// summed in its task_ops slot only; the summary counts every one
// (Tracer.addTaskHits reads the slots handed out so far).
func TestSummaryTaskHits(t *testing.T) {
	testutil.NeedRoot(t)
	dir, err := os.MkdirTemp("/var/tmp", "iopath-taskhits") // a disk filesystem: tmpfs reads are not page-cache hits
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(path); err != nil { // cached
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTaskHitsHelperProcess$")
	cmd.Env = append(os.Environ(), "IOPATH_TEST_TASKHITS_FILE="+path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	tr, err := New(Options{Pids: []int{cmd.Process.Pid}}, func(any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	fmt.Fprintln(in, "go")
	if line, _ := bufio.NewReader(outp).ReadString('\n'); line != "done\n" {
		t.Fatalf("helper: %q", line)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	s := tr.Summary()
	var calls uint64
	for _, f := range s.Files {
		if f.Ino == st.Ino {
			calls += f.Calls
		}
	}
	if calls != taskHitsCalls {
		t.Errorf("summary counts %d calls of the file, want %d (hits of the live thread lost)", calls, taskHitsCalls)
	}
}
