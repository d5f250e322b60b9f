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

// untracedSyscalls names x86-64 system calls that queue bios and that
// iopath does not trace (arch/x86/entry/syscalls/syscall_64.tbl).
var untracedSyscalls = map[uint32]string{
	2: "open", 4: "stat", 5: "fstat", 6: "lstat", 9: "mmap", 10: "mprotect", 16: "ioctl", 21: "access",
	26: "msync", 28: "madvise", 59: "execve", 60: "exit", 76: "truncate", 77: "ftruncate", 78: "getdents",
	82: "rename", 83: "mkdir", 84: "rmdir", 87: "unlink", 89: "readlink", 217: "getdents64", 221: "fadvise64",
	231: "exit_group", 257: "openat", 258: "mkdirat", 262: "newfstatat", 263: "unlinkat", 264: "renameat",
	285: "fallocate", 316: "renameat2", 332: "statx", 437: "openat2", 439: "faccessat2",
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
		if n, ok := untracedSyscalls[nr]; ok {
			return "syscall:" + n
		}
		return "syscall:" + strconv.FormatUint(uint64(nr), 10)
	case bpf.IopathUnattributedCauseCAUSE_FAULT:
		return "page_fault"
	}
	return "unknown"
}

// unattributed counts one bio a traced process queued outside any traced
// call (bytes at issue) under its cause.
func (e *Engine) unattributed(pid, flags, bytes uint32) {
	e.unattributedAs(pid, bytes, causeName(flags))
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
