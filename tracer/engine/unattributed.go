package engine

import (
	"strconv"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
)

// Unattributed bios: bios a traced process queued outside any traced call.
// bpf/unattributed.h puts why in the bio owner's flags at queue time:
// enum unattributed_cause in bits OWN_CAUSE_SHIFT.., the syscall number of
// CAUSE_SYSCALL in bits OWN_SYSNR_SHIFT.. (bpf/events.h).
const (
	causeShift = uint32(bpf.IopathOwnFlagOWN_CAUSE_SHIFT)
	sysNrShift = uint32(bpf.IopathOwnFlagOWN_SYSNR_SHIFT)
)

// syscallNames names x86-64 system calls by number
// (arch/x86/entry/syscalls/syscall_64.tbl): those that queue bios outside
// a traced call (page faults aside), the asynchronous IO calls whose
// processing iopath attributes per request (io_submit, io_uring_enter: a
// bio of theirs no request claimed lands here), and the common rest, so
// that an unattributed cause is a name; a number missing here prints as
// syscall:N.
var syscallNames = map[uint32]string{
	0: "read", 1: "write", 2: "open", 3: "close", 4: "stat", 5: "fstat", 6: "lstat", 7: "poll", 8: "lseek",
	9: "mmap", 10: "mprotect", 11: "munmap", 12: "brk", 16: "ioctl", 17: "pread64", 18: "pwrite64",
	19: "readv", 20: "writev", 21: "access", 22: "pipe", 23: "select", 25: "mremap", 26: "msync",
	27: "mincore", 28: "madvise", 32: "dup", 33: "dup2", 35: "nanosleep", 40: "sendfile", 41: "socket",
	42: "connect", 43: "accept", 44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 56: "clone",
	57: "fork", 58: "vfork", 59: "execve", 60: "exit", 61: "wait4", 62: "kill", 72: "fcntl", 73: "flock",
	74: "fsync", 75: "fdatasync", 76: "truncate", 77: "ftruncate", 78: "getdents", 79: "getcwd",
	80: "chdir", 81: "fchdir", 82: "rename", 83: "mkdir", 84: "rmdir", 85: "creat", 86: "link",
	87: "unlink", 88: "symlink", 89: "readlink", 90: "chmod", 91: "fchmod", 92: "chown", 93: "fchown",
	95: "umask", 137: "statfs", 138: "fstatfs", 149: "mlock", 151: "mlockall", 155: "pivot_root",
	161: "chroot", 162: "sync", 165: "mount", 166: "umount2", 167: "swapon", 168: "swapoff",
	187: "readahead", 188: "setxattr", 190: "fsetxattr", 191: "getxattr", 193: "fgetxattr",
	194: "listxattr", 196: "flistxattr", 197: "removexattr", 202: "futex", 206: "io_setup",
	207: "io_destroy", 208: "io_getevents", 209: "io_submit", 210: "io_cancel", 217: "getdents64",
	221: "fadvise64", 228: "clock_gettime", 230: "clock_nanosleep", 231: "exit_group", 232: "epoll_wait",
	257: "openat", 258: "mkdirat", 259: "mknodat", 260: "fchownat", 262: "newfstatat", 263: "unlinkat",
	264: "renameat", 265: "linkat", 266: "symlinkat", 267: "readlinkat", 268: "fchmodat", 269: "faccessat",
	270: "pselect6", 271: "ppoll", 275: "splice", 276: "tee", 277: "sync_file_range", 278: "vmsplice",
	280: "utimensat", 281: "epoll_pwait", 285: "fallocate", 295: "preadv", 296: "pwritev",
	306: "syncfs", 316: "renameat2", 319: "memfd_create", 322: "execveat", 323: "userfaultfd",
	326: "copy_file_range", 327: "preadv2", 328: "pwritev2", 332: "statx", 333: "io_pgetevents",
	425: "io_uring_setup", 426: "io_uring_enter", 427: "io_uring_register", 428: "open_tree",
	429: "move_mount", 430: "fsopen", 431: "fsconfig", 432: "fsmount", 435: "clone3", 436: "close_range",
	437: "openat2", 439: "faccessat2", 440: "process_madvise", 441: "epoll_pwait2", 442: "mount_setattr",
	448: "process_mrelease", 451: "cachestat", 452: "fchmodat2",
}

// causeName names the cause the kernel put in a bio owner's flags.
func causeName(flags uint32) string {
	switch bpf.IopathUnattributedCause((flags >> causeShift) & 0xf) {
	case bpf.IopathUnattributedCauseCAUSE_EXEC:
		return "exec"
	case bpf.IopathUnattributedCauseCAUSE_META:
		return "metadata"
	case bpf.IopathUnattributedCauseCAUSE_SYSCALL:
		nr := (flags >> sysNrShift) & 0xfff
		if n, ok := syscallNames[nr]; ok {
			return "syscall:" + n
		}
		return "syscall:" + strconv.FormatUint(uint64(nr), 10)
	case bpf.IopathUnattributedCauseCAUSE_FAULT:
		return "page_fault"
	case bpf.IopathUnattributedCauseCAUSE_AIO_TRUNC:
		return "aio_iocbs_truncated" // iocbs of an io_submit beyond what bpf/aio.c reports
	}
	return "unknown"
}

// unattributed counts one bio a traced process queued outside any traced
// call (bytes at issue) under its cause.
func (e *Engine) unattributed(pid, flags, bytes uint32) {
	e.unattributedAs(pid, bytes, causeName(flags))
}

// unattributedBio counts one unattributed bio under the cause name, and its
// bytes in the process's disk reads or writes.
func (e *Engine) unattributedBio(pid, bytes uint32, name string, read, write bool) {
	e.unattributedAs(pid, bytes, name)
	ps := e.pid(pid, "")
	if read {
		ps.DiskBytesRead += uint64(bytes)
	} else if write {
		ps.DiskBytesWrite += uint64(bytes)
	}
}

// unattributedAs counts one unattributed bio under the cause name.
func (e *Engine) unattributedAs(pid, bytes uint32, name string) {
	e.counters.UnattributedBios++
	e.counters.UnattributedBytes += uint64(bytes)
	e.pid(pid, "").Unattributed++
	if e.unattr == nil {
		e.unattr = map[string]*record.CauseTotals{}
	}
	c := e.unattr[name]
	if c == nil {
		c = &record.CauseTotals{}
		e.unattr[name] = c
	}
	c.Bios++
	c.Bytes += uint64(bytes)
}

// unattributedCauses copies the per-cause totals for the summary.
func (e *Engine) unattributedCauses() map[string]record.CauseTotals {
	out := map[string]record.CauseTotals{}
	for k, v := range e.unattr {
		out[k] = *v
	}
	return out
}
