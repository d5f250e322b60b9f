package workloads

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The engines issue their per-op system calls (read, write, pread64,
// pwrite64, lseek) through sysIO, which by default uses RawSyscall: the
// call is made the way a C program like fio makes it, without telling the
// Go scheduler. On the ordinary path (entersyscall/exitsyscall) Go 1.26's
// sysmon takes the P away during blocking calls and wakes another thread
// to run it: on a 2-CPU VM that measured 1.8 context switches per O_DIRECT
// read instead of fio's 1.0, and under taskset to one CPU, 0.85x fio's
// O_DIRECT IOPS and 0.93x its 1-byte read IOPS (raw: 0.95x and 1.31x).
// The price: while an op blocks, its P runs no other goroutine, so with
// GOMAXPROCS=1 the process's other goroutines wait for the op to return
// (as they would for a busy loop). fsync and fdatasync, which can block
// for long, use the ordinary path.

// rawSyscalls selects raw system calls for the engines' ops; tests turn it
// off to cover the ordinary path.
var rawSyscalls = true

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
