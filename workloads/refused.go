package workloads

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uringRefused is io_uring_setup(2) failing: the kernel, a sysctl or a
// seccomp filter refuses io_uring. Its message names the cause and the fix.
type uringRefused struct {
	errno unix.Errno
	why   string
}

func (e *uringRefused) Error() string {
	return fmt.Sprintf("io_uring is refused here (io_uring_setup: %v): %s", errnoOf(e.errno), e.why)
}

func (e *uringRefused) Unwrap() error { return e.errno }

// refusedError explains an io_uring_setup errno: kernel.io_uring_disabled
// (Linux 6.6+: 1 allows only kernel.io_uring_group and CAP_SYS_ADMIN, 2
// allows nobody), a seccomp filter (container runtimes block io_uring), a
// kernel without CONFIG_IO_URING, or locked-memory limits (before 5.12 the
// rings count against RLIMIT_MEMLOCK).
func refusedError(e unix.Errno) error {
	disabled := strings.TrimSpace(readSmall("/proc/sys/kernel/io_uring_disabled"))
	seccomp := seccompMode()
	var why string
	switch {
	case e == unix.EPERM && disabled == "2":
		why = "kernel.io_uring_disabled is 2 (io_uring is off for everyone); allow it with sysctl kernel.io_uring_disabled=0, or use --engine libaio"
	case e == unix.EPERM && disabled == "1":
		why = "kernel.io_uring_disabled is 1 (only members of kernel.io_uring_group and CAP_SYS_ADMIN may use it); run as root, add yourself to that group, set kernel.io_uring_disabled=0, or use --engine libaio"
	case (e == unix.EPERM || e == unix.ENOSYS) && seccomp == "2":
		why = "a seccomp filter on this process (Seccomp: 2 in /proc/self/status, e.g. a container runtime's default profile) blocks io_uring_setup; allow the io_uring system calls in the profile, or use --engine libaio"
	case e == unix.EPERM:
		why = "no sysctl or seccomp filter explains it (a security module such as SELinux may); use --engine libaio"
	case e == unix.ENOSYS:
		why = "this kernel was built without io_uring (CONFIG_IO_URING); use --engine libaio"
	case e == unix.ENOMEM:
		why = "not enough locked memory for the rings (before Linux 5.12 they count against RLIMIT_MEMLOCK); raise ulimit -l, or use a smaller --iodepth"
	default:
		why = "use --engine libaio"
	}
	return &uringRefused{errno: e, why: why}
}

// seccompMode returns the Seccomp field of /proc/self/status: "0" none,
// "1" strict, "2" filter; "" if unknown.
func seccompMode() string {
	for line := range strings.Lines(readSmall("/proc/self/status")) {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// readSmall returns a small file's contents, or "" if it cannot be read.
func readSmall(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(bytes.TrimRight(b, "\x00"))
}

// aioSetupError explains an io_setup(2) errno.
func aioSetupError(e unix.Errno, depth int) error {
	switch {
	case errors.Is(e, unix.EAGAIN):
		return fmt.Errorf("io_setup(%d) failed with %w: the machine's AIO contexts are used up (fs.aio-nr %s of fs.aio-max-nr %s); raise it with sysctl fs.aio-max-nr=1048576, or use a smaller --iodepth",
			depth, errnoOf(e), strings.TrimSpace(readSmall("/proc/sys/fs/aio-nr")), strings.TrimSpace(readSmall("/proc/sys/fs/aio-max-nr")))
	case errors.Is(e, unix.ENOSYS):
		return fmt.Errorf("io_setup failed with %w: this kernel was built without AIO (CONFIG_AIO), or a seccomp filter blocks it; use --engine io_uring or psync", errnoOf(e))
	case errors.Is(e, unix.EPERM):
		return fmt.Errorf("io_setup failed with %w: a seccomp filter or security module blocks libaio; allow io_setup/io_submit/io_getevents/io_destroy, or use --engine psync", errnoOf(e))
	}
	return fmt.Errorf("io_setup(%d) failed: %w", depth, errnoOf(e))
}

// probeEngine checks that the kernel lets this process use the engine, by
// setting up and tearing down its smallest context.
func probeEngine(engine string) error {
	switch engine {
	case EngineIOUring:
		r, err := newRing(1, 0)
		if err != nil {
			return err
		}
		return r.close()
	case EngineLibaio:
		var ctx uintptr
		if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
			return aioSetupError(e, 1)
		}
		unix.Syscall(unix.SYS_IO_DESTROY, ctx, 0, 0)
	}
	return nil
}
