package workloads

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/iopath/iopath/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestSeccompHelper is not a test: in a child started by
// TestIOUringRefusedBySeccomp it installs a seccomp filter that fails
// io_uring_setup with EPERM, prepares an io_uring workload in
// $IOPATH_SECCOMP_DIR and prints the error.
func TestSeccompHelper(t *testing.T) {
	dir := os.Getenv("IOPATH_SECCOMP_DIR")
	if dir == "" {
		t.Skip("helper process of TestIOUringRefusedBySeccomp")
	}
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		t.Fatalf("seccomp: %v", e)
	}
	_, err := Prepare(Spec{Kind: KindRandRead, Engine: EngineIOUring, IODepth: 16, FileSize: 1 << 20, Dir: dir})
	os.Stdout.WriteString("ERROR: " + err.Error() + "\n")
}

// TestIOUringRefusedBySeccomp: a seccomp filter refusing io_uring_setup
// gives one line naming the filter and the fix, and leaves no file.
func TestIOUringRefusedBySeccomp(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeccompHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "IOPATH_SECCOMP_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	_, msg, _ := strings.Cut(string(out), "ERROR: ")
	msg, _, _ = strings.Cut(msg, "\n")
	want := "io_uring is refused here (io_uring_setup: EPERM: operation not permitted): a seccomp filter on this process (Seccomp: 2 in /proc/self/status"
	if !strings.HasPrefix(msg, want) || !strings.Contains(msg, "or use --engine libaio") {
		t.Errorf("error %q, want %q... or use --engine libaio", msg, want)
	}
	assertEmpty(t, dir)
}

// TestIOUringDisabledSysctl sets kernel.io_uring_disabled=2 (restored
// after): Prepare refuses io_uring naming the sysctl, and leaves no file.
// Privileged (testutil.NeedRoot): the sysctl is machine-wide, so `make
// race`, which runs the packages in parallel, must not set it while other
// packages' tests use io_uring; `make unit` runs packages one at a time.
func TestIOUringDisabledSysctl(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/io_uring_disabled"); err != nil {
		t.Skipf("no kernel.io_uring_disabled (Linux 6.6+): %v", err)
	}
	testutil.NeedRoot(t)
	testutil.SetSysctl(t, "kernel.io_uring_disabled", "2")
	dir := t.TempDir()
	_, err := Prepare(Spec{Kind: KindRandRead, Engine: EngineIOUring, FileSize: 1 << 20, Dir: dir})
	want := "io_uring is refused here (io_uring_setup: EPERM: operation not permitted): kernel.io_uring_disabled is 2 (io_uring is off for everyone); allow it with sysctl kernel.io_uring_disabled=0, or use --engine libaio"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	assertEmpty(t, dir)
	// libaio still works.
	p := prepare(t, Spec{Kind: KindRandRead, Engine: EngineLibaio, FileSize: 1 << 20, Count: 10, Dir: dir})
	if r := run(t, p); r.Ops != 10 {
		t.Errorf("libaio with io_uring disabled: %d ops", r.Ops)
	}
}
