package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestWorkloadHelperProcess is not a test: when a test starts this binary as
// a child with IOPATH_TEST_HELPER=1, it runs iopath's main with the
// arguments after "--".
func TestWorkloadHelperProcess(t *testing.T) {
	if os.Getenv("IOPATH_TEST_HELPER") != "1" {
		t.Skip("helper process for the workload CLI tests")
	}
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	os.Args = append([]string{"iopath"}, args[1:]...)
	main()
	os.Exit(0)
}

// iopathCmd returns a command running "iopath args..." as a child process with TMPDIR=tmp.
func iopathCmd(tmp string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestWorkloadHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "IOPATH_TEST_HELPER=1", "TMPDIR="+tmp)
	return cmd
}

// runIopath runs iopath as a child and returns stdout, stderr and the exit code.
func runIopath(t *testing.T, tmp string, args ...string) (string, string, int) {
	t.Helper()
	cmd := iopathCmd(tmp, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// leftovers lists what is left in dir.
func leftovers(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
		if p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// checkRefused checks a one-line "iopath: ..." error, exit status 1, and nothing left in tmp.
func checkRefused(t *testing.T, tmp, want string, args ...string) {
	t.Helper()
	stdout, stderr, code := runIopath(t, tmp, args...)
	if code != 1 || stdout != "" {
		t.Errorf("iopath %q: exit %d, stdout %q; want exit 1 and no output", args, code, stdout)
	}
	if !strings.HasPrefix(stderr, "iopath: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("iopath %q: stderr %q, want one line \"iopath: ...%s...\"", args, stderr, want)
	}
	if l := leftovers(tmp); len(l) > 0 {
		t.Errorf("iopath %q left %v", args, l)
	}
}

func TestWorkloadBadInput(t *testing.T) {
	tmp := t.TempDir()
	for _, c := range []struct {
		want string
		args []string
	}{
		{"missing workload kind: run iopath workload KIND, with KIND one of read-1byte", []string{"workload"}},
		{`unknown workload kind "fio": choose one of read-1byte, small-write, seq-read, rand-read, seq-write, rand-write`, []string{"workload", "fio"}},
		{"--size 0: a size of 0 leaves nothing to do; give a positive size, e.g. --size 64m", []string{"workload", "rand-read", "--size", "0"}},
		{"--bs 0: a size of 0", []string{"workload", "rand-read", "--bs", "0"}},
		{`--bs: invalid size "4q"`, []string{"workload", "rand-read", "--bs", "4q"}},
		{"block size 8192 bytes is larger than the file size 4096 bytes", []string{"workload", "seq-read", "--bs", "8k", "--size", "4k"}},
		{`unknown engine "spdk": choose one of psync, sync, mmap, stdio, libaio, io_uring`, []string{"workload", "seq-read", "--engine", "spdk"}},
		{`--iodepth 0 is out of range: give 1 to 1024 requests in flight per job`, []string{"workload", "rand-read", "--engine", "libaio", "--iodepth", "0"}},
		{`--iodepth 100000 is out of range: give 1 to 1024`, []string{"workload", "rand-read", "--engine", "io_uring", "--iodepth", "100000"}},
		{`--iodepth 8 needs --engine libaio or io_uring`, []string{"workload", "rand-read", "--iodepth", "8"}},
		{`--numjobs 0 is out of range: give 1 to 256 jobs`, []string{"workload", "rand-read", "--numjobs", "0"}},
		{`--iodepth-complete-min 9 is out of range: give 1 to --iodepth (8) completions per wait`, []string{"workload", "rand-read", "--engine", "libaio", "--iodepth", "8", "--iodepth-complete-min", "9"}},
		{"read-1byte always reads 1 byte per call", []string{"workload", "read-1byte", "--bs", "4k"}},
		{"directory " + tmp + "/nope does not exist: create it first or choose another --dir", []string{"workload", "seq-read", "--dir", tmp + "/nope"}},
		{"/proc is on proc, a kernel filesystem that holds no files one can create: choose a directory on a disk (or a tmpfs) with --dir, e.g. --dir /var/tmp", []string{"workload", "seq-read", "--dir", "/proc"}},
		{"O_DIRECT needs the psync, sync, libaio or io_uring engine", []string{"workload", "seq-read", "--direct", "--engine", "mmap"}},
		{"choose one of --fsync and --fdatasync, not both", []string{"workload", "small-write", "--fsync", "1", "--fdatasync", "1"}},
		// A number flag's refusal in words, not strconv's (a new user saw
		// `strconv.Atoi: parsing "abc": invalid syntax`).
		{`invalid argument "x" for "--count" flag: not a whole number: see`, []string{"workload", "rand-read", "--count", "x"}},
		{`invalid argument "-1" for "--seed" flag: not a whole number of 0 or more: see`, []string{"workload", "rand-read", "--seed", "-1"}},
		{`invalid argument "abc" for "-p, --pid" flag: not a whole number: see`, []string{"trace", "-p", "abc"}},
		{`invalid argument "99999999999999999999" for "-p, --pid" flag: out of range: see`, []string{"top", "-p", "99999999999999999999"}},
	} {
		checkRefused(t, tmp, c.want, c.args...)
	}
}

func TestWorkloadDirectMisaligned(t *testing.T) {
	tmp := t.TempDir()
	var st unix.Statfs_t
	if unix.Statfs(tmp, &st) == nil && (st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC) {
		t.Skipf("%s is in memory; set TMPDIR to a disk filesystem to test O_DIRECT", tmp)
	}
	checkRefused(t, tmp, "--bs 1000 does not fit O_DIRECT", "workload", "rand-read", "--direct", "--bs", "1000", "--size", "1m")
	checkRefused(t, tmp, "read-1byte cannot use --direct", "workload", "read-1byte", "--direct")
}

// mountTmpfs mounts a tmpfs with opts on a test directory, or skips when not root.
func mountTmpfs(t *testing.T, fstype, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to mount %s; run the tests as root to cover this case", fstype)
	}
	dir := t.TempDir()
	if err := unix.Mount(fstype, dir, fstype, 0, opts); err != nil {
		t.Skipf("cannot mount %s: %v", fstype, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func TestWorkloadFullDisk(t *testing.T) {
	dir := mountTmpfs(t, "tmpfs", "size=1m")
	checkRefused(t, dir, "disk full (ENOSPC: no space left on device) while writing", "workload", "seq-write", "--size", "4m")
	checkRefused(t, dir, "after writing 1048576 bytes (1MiB)", "workload", "seq-write", "--size", "4m", "--dir", dir)
	checkRefused(t, dir, "not enough free space for the workload's file: it needs 4194304 more bytes (4MiB)", "workload", "rand-read", "--size", "4m")
}

func TestWorkloadDirectRefused(t *testing.T) {
	dir := mountTmpfs(t, "ramfs", "")
	checkRefused(t, dir, "(ramfs) does not support O_DIRECT", "workload", "rand-read", "--direct", "--size", "1m")
}

func TestWorkloadText(t *testing.T) {
	tmp := t.TempDir()
	stdout, stderr, code := runIopath(t, tmp, "workload", "rand-read", "--size", "1m", "--count", "100", "--dir", tmp)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"workload     rand-read (engine psync, bs 4KiB, 1MiB region, random offsets (seed 1))", "ops          100\n", "IOPS", "bandwidth", "p99.9", "pread64  100    409600  4096.0", "syscr 100,"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if l := leftovers(tmp); len(l) > 0 {
		t.Errorf("left %v", l)
	}
}

func TestWorkloadJSON(t *testing.T) {
	tmp := t.TempDir()
	stdout, stderr, code := runIopath(t, tmp, "workload", "small-write", "--count", "1000", "--fdatasync", "500", "--json")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var r struct {
		Kind     string             `json:"kind"`
		Ops      int64              `json:"ops"`
		Bytes    int64              `json:"bytes"`
		IOPS     float64            `json:"iops"`
		BW       *float64           `json:"bw_mib_s"`
		Runtime  int64              `json:"runtime_ns"`
		Lat      map[string]float64 `json:"lat_ns"`
		SyncLat  map[string]float64 `json:"sync_lat_ns"`
		CPUSys   *int64             `json:"cpu_sys_ns"`
		Syscalls []struct {
			Name  string `json:"name"`
			Calls int64  `json:"calls"`
			Bytes int64  `json:"bytes"`
		} `json:"syscalls"`
		Kernel map[string]int64 `json:"kernel_io"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if r.Kind != "small-write" || r.Ops != 1000 || r.Bytes != 1000 || r.IOPS <= 0 || r.BW == nil || r.Runtime <= 0 || r.CPUSys == nil {
		t.Errorf("report %+v", r)
	}
	for _, k := range []string{"count", "min", "mean", "p50", "p90", "p99", "p99_9", "max"} {
		if _, ok := r.Lat[k]; !ok {
			t.Errorf("lat_ns has no %q: %v", k, r.Lat)
		}
	}
	if r.SyncLat["count"] != 2 {
		t.Errorf("sync_lat_ns %v, want 2 fdatasyncs", r.SyncLat)
	}
	if len(r.Syscalls) != 2 || r.Syscalls[0].Name != "pwrite64" || r.Syscalls[0].Calls != 1000 || r.Syscalls[1].Name != "fdatasync" || r.Syscalls[1].Calls != 2 {
		t.Errorf("syscalls %+v", r.Syscalls)
	}
	if r.Kernel["syscw"] != 1000 || r.Kernel["wchar"] != 1000 {
		t.Errorf("kernel_io %v, want 1000 write calls of 1 byte", r.Kernel)
	}
	if l := leftovers(tmp); len(l) > 0 {
		t.Errorf("left %v", l)
	}
}

func TestWorkloadKeep(t *testing.T) {
	tmp := t.TempDir()
	path := filepath.Join(tmp, "kept.dat")
	_, stderr, code := runIopath(t, tmp, "workload", "seq-write", "--size", "64k", "--file", path, "--keep")
	if code != 0 || stderr != "kept "+path+"\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 64<<10 {
		t.Errorf("kept file: %v, %v", fi, err)
	}
}

// SIGINT or SIGTERM: the workload reports what it did and exits 130 or
// 143 (SIGTERM gave 130, issue 10 item 6), saying why in one line on
// stderr as trace does (it said nothing: a new user's Ctrl-C left only the
// report's "INTERRUPTED").
func TestWorkloadInterrupt(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		workloadInterrupt(t, c.sig, c.code)
	}
}

func workloadInterrupt(t *testing.T, sig syscall.Signal, want int) {
	tmp := t.TempDir()
	cmd := iopathCmd(tmp, "workload", "read-1byte", "--duration", "1m", "--json")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the file, which exists once the command is ready to handle signals.
	for deadline := time.Now().Add(10 * time.Second); len(leftovers(tmp)) < 2; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the workload never created its file")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != want {
		t.Errorf("after %v: %v, want exit status %d", sig, err, want)
	}
	if got, line := stderr.String(), "iopath: stopped by "+unix.SignalName(sig)+"\n"; got != line {
		t.Errorf("after %v: stderr %q, want %q", sig, got, line)
	}
	var r struct {
		Interrupted bool  `json:"interrupted"`
		Ops         int64 `json:"ops"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || !r.Interrupted || r.Ops == 0 {
		t.Errorf("report after %v: %+v, %v", sig, r, err)
	}
	if l := leftovers(tmp); len(l) > 0 {
		t.Errorf("left %v after %v", l, sig)
	}
}

// skipIfMemoryFS skips a test that needs O_DIRECT when dir is in memory.
func skipIfMemoryFS(t *testing.T, dir string) {
	t.Helper()
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && (st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC) {
		t.Skipf("%s is in memory; set TMPDIR to a disk filesystem to test O_DIRECT", dir)
	}
}

// asyncReport is the part of a workload's JSON report the async tests check.
type asyncReport struct {
	Engine      string             `json:"engine"`
	IODepth     int                `json:"iodepth"`
	NumJobs     int                `json:"numjobs"`
	Thread      bool               `json:"thread"`
	Job         int                `json:"job"`
	Ops         int64              `json:"ops"`
	Bytes       int64              `json:"bytes"`
	MaxInflight int                `json:"max_inflight"`
	Lat         map[string]float64 `json:"lat_ns"`
	Slat        map[string]float64 `json:"slat_ns"`
	Clat        map[string]float64 `json:"clat_ns"`
	Kernel      map[string]int64   `json:"kernel_io"`
	Syscalls    []struct {
		Name  string `json:"name"`
		Calls int64  `json:"calls"`
		Bytes int64  `json:"bytes"`
	} `json:"syscalls"`
	Jobs     []*asyncReport  `json:"jobs"`
	JobHists json.RawMessage `json:"job_histograms"`
}

// TestWorkloadAsyncJobs runs cold O_DIRECT 4 KiB random reads with libaio
// and io_uring at iodepth 16, as 2 job processes and as 2 threads, and
// counts: every job did its 300 requests with 16 in flight, the latency
// split has a value per request, the aggregate sums the jobs, and the
// kernel read from the device exactly the bytes asked (O_DIRECT: no
// readahead, no cache), per thread and for the whole process tree (wait4's
// ru_inblock, in 512-byte units).
func TestWorkloadAsyncJobs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: --cold checks the page cache, and the test counts device reads")
	}
	for _, engine := range []string{"libaio", "io_uring"} {
		for _, thread := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/thread=%v", engine, thread), func(t *testing.T) {
				tmp := t.TempDir()
				skipIfMemoryFS(t, tmp)
				args := []string{"workload", "rand-read", "--engine", engine, "--iodepth", "16", "--numjobs", "2",
					"--direct", "--cold", "--size", "16m", "--count", "300", "--json"}
				if thread {
					args = append(args, "--thread")
				}
				cmd := iopathCmd(tmp, args...)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("%v: %s", err, errb.String())
				}
				var r asyncReport
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					t.Fatalf("%v in %s", err, out.String())
				}
				const want = 2 * 300
				if r.Engine != engine || r.NumJobs != 2 || r.Thread != thread || r.IODepth != 16 || r.Ops != want || r.Bytes != want*4096 || r.MaxInflight != 16 || len(r.JobHists) != 0 {
					t.Errorf("aggregate: %+v", r)
				}
				for _, l := range []map[string]float64{r.Lat, r.Slat, r.Clat} {
					if l["count"] != want || l["min"] <= 0 || l["p50"] < l["min"] || l["max"] < l["p99"] {
						t.Errorf("latency %v, want %d values", l, want)
					}
				}
				if r.Lat["mean"] < r.Clat["mean"] || r.Lat["mean"] < r.Slat["mean"] {
					t.Errorf("lat mean %v below slat %v or clat %v", r.Lat["mean"], r.Slat["mean"], r.Clat["mean"])
				}
				var submitted int64
				for _, c := range r.Syscalls {
					if c.Name == "io_submit" || c.Name == "io_uring_enter (submit)" {
						submitted += c.Bytes
					}
				}
				if submitted != want*4096 {
					t.Errorf("submitted %d bytes, want %d: %+v", submitted, want*4096, r.Syscalls)
				}
				if len(r.Jobs) != 2 {
					t.Fatalf("%d job reports, want 2", len(r.Jobs))
				}
				for i, j := range r.Jobs {
					if j.Job != i || j.Ops != 300 || j.MaxInflight != 16 || j.Slat["count"] != 300 || j.Clat["count"] != 300 {
						t.Errorf("job %d: %+v", i, j)
					}
				}
				if rb := r.Kernel["read_bytes"]; engine == "libaio" && (rb < want*4096 || rb > want*4096+1<<20) {
					// libaio issues the bios in io_submit, on the job's
					// thread; a few pages more are the process's own (seen
					// on Debian 6.1: 12 KiB).
					t.Errorf("kernel read_bytes %d, want %d (+ at most 1 MiB)", rb, want*4096)
				}
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				if got := ru.Inblock * 512; got < want*4096 || got > want*4096+1<<20 {
					t.Errorf("the workload's processes read %d bytes from storage (ru_inblock), want %d", got, want*4096)
				}
				if l := leftovers(tmp); len(l) > 0 {
					t.Errorf("left %v", l)
				}
			})
		}
	}
}

// TestWorkloadIOUringDisabled sets kernel.io_uring_disabled=2 (restored
// after): one line naming the sysctl and the fix, exit 1, no file left.
// Privileged (skipped by `make race`): the sysctl is machine-wide.
func TestWorkloadIOUringDisabled(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/io_uring_disabled"); err != nil {
		t.Skipf("no kernel.io_uring_disabled (Linux 6.6+): %v", err)
	}
	testutil.NeedRoot(t)
	testutil.SetSysctl(t, "kernel.io_uring_disabled", "2")
	tmp := t.TempDir()
	checkRefused(t, tmp, "io_uring is refused here (io_uring_setup: EPERM: operation not permitted): kernel.io_uring_disabled is 2 (io_uring is off for everyone); allow it with sysctl kernel.io_uring_disabled=0, or use --engine libaio",
		"workload", "rand-read", "--engine", "io_uring", "--iodepth", "16", "--numjobs", "2")
}

// TestWorkloadJobsInterrupt: SIGINT to a workload of 2 job processes stops
// both, prints the interrupted aggregate, exits 130 and leaves nothing.
func TestWorkloadJobsInterrupt(t *testing.T) {
	tmp := t.TempDir()
	cmd := iopathCmd(tmp, "workload", "rand-read", "--engine", "io_uring", "--iodepth", "4", "--numjobs", "2", "--size", "1m", "--duration", "1m", "--json")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The jobs are running once both opened the file: 3 descriptors of it in the tree (parent's and two jobs').
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the jobs never started")
		}
		fds, _ := exec.Command("sh", "-c", "ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c "+tmp).Output()
		if n, _ := strconv.Atoi(strings.TrimSpace(string(fds))); n >= 3 {
			break
		}
	}
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("after SIGINT: %v, want exit status 130", err)
	}
	var r asyncReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.NumJobs != 2 || len(r.Jobs) != 2 || r.Ops == 0 || r.Ops != r.Jobs[0].Ops+r.Jobs[1].Ops {
		t.Errorf("report after SIGINT: %+v, %v", r, err)
	}
	if !strings.Contains(out.String(), `"interrupted": true`) {
		t.Error("the report does not say interrupted")
	}
	if l := leftovers(tmp); len(l) > 0 {
		t.Errorf("left %v after SIGINT", l)
	}
}

// `trace --workload KIND -- FLAGS` refuses every bad workload flag before
// anything loads, as `iopath workload` does: it parses them with the same
// flag set. It once read only some of them, so `--madvise bogus` was
// refused by the traced child, after the BPF load and the file's
// preparation.
func TestTracedWorkloadFlagsValidated(t *testing.T) {
	for _, c := range []struct {
		want string
		kind string
		args []string
	}{
		{`unknown --madvise "bogus": choose random, sequential or willneed`, "seq-read", []string{"--engine", "mmap", "--madvise", "bogus"}},
		{"--madvise applies to --engine mmap", "seq-read", []string{"--madvise", "random"}},
		{"--iodepth 0 is out of range", "rand-read", []string{"--engine", "libaio", "--iodepth", "0"}},
		{"--iodepth 8 needs --engine libaio or io_uring", "rand-read", []string{"--iodepth", "8"}},
		{"--numjobs 0 is out of range", "rand-read", []string{"--numjobs", "0"}},
		{"--uring-async, --sqpoll and --fixed-files are io_uring options", "rand-read", []string{"--sqpoll"}},
		{"O_DIRECT needs the psync, sync, libaio or io_uring engine", "seq-read", []string{"--direct", "--engine", "mmap"}},
		{"read-1byte always reads 1 byte per call", "read-1byte", []string{"--bs", "4k"}},
	} {
		_, err := parseTracedWorkload(c.kind, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("trace --workload %s -- %s: %v, want %q", c.kind, strings.Join(c.args, " "), err, c.want)
		}
	}
	if w, err := parseTracedWorkload("rand-read", []string{"--engine", "io_uring", "--iodepth", "16", "--direct", "--cold"}); err != nil || w.spec.IODepth != 16 || !w.spec.Cold {
		t.Errorf("a good command line: %+v, %v", w, err)
	}
}
