package workloads

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The engines issue their per-op system calls (read, write, pread64,
// pwrite64, lseek) through sysIO. With raw set they use RawSyscall, which
// is what a C program like fio does: the Go scheduler is not told, so the
// call costs no runtime bookkeeping, and sysmon does not take the P away
// during a blocking call and wake another thread to run it (which, for
// O_DIRECT reads under Go 1.26, measured as a second context switch per op).
// The price is that this P runs nothing else during the call, so raw mode
// is used only when another P can run the rest of the program.

// rawIO reports whether the engines may use raw system calls now.
func rawIO() bool { return runtime.GOMAXPROCS(0) >= 2 }

// sysIO makes system call trap(fd, b, len(b), arg) and returns its result
// or errno. b must not be on a goroutine stack, which can move: the
// engines' buffers are mappings outside Go memory or heap slices.
func sysIO(raw bool, trap uintptr, fd int, b []byte, arg int64) (int, error) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	var r uintptr
	var e unix.Errno
	if raw {
		r, _, e = unix.RawSyscall6(trap, uintptr(fd), uintptr(p), uintptr(len(b)), uintptr(arg), 0, 0)
	} else {
		r, _, e = unix.Syscall6(trap, uintptr(fd), uintptr(p), uintptr(len(b)), uintptr(arg), 0, 0)
	}
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// sysSeek is lseek(fd, off, SEEK_SET).
func sysSeek(raw bool, fd int, off int64) error {
	var e unix.Errno
	if raw {
		_, _, e = unix.RawSyscall(unix.SYS_LSEEK, uintptr(fd), uintptr(off), 0)
	} else {
		_, _, e = unix.Syscall(unix.SYS_LSEEK, uintptr(fd), uintptr(off), 0)
	}
	if e != 0 {
		return e
	}
	return nil
}
