package tracer

import "strconv"

// Causes of unattributed bios, mirrored from bpf/unattributed.h: why a
// traced process queued a bio outside any traced call.
const (
	causeExec    = 1
	causeMeta    = 2
	causeSyscall = 3
	causeFault   = 4
)

// CauseTotals counts unattributed bios of one cause.
type CauseTotals struct {
	Bios  uint64 `json:"bios"`
	Bytes uint64 `json:"bytes"`
}

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
	switch (flags >> 8) & 0xf {
	case causeExec:
		return "exec"
	case causeMeta:
		return "metadata"
	case causeSyscall:
		nr := (flags >> 16) & 0xfff
		if n, ok := untracedSyscalls[nr]; ok {
			return "syscall:" + n
		}
		return "syscall:" + strconv.FormatUint(uint64(nr), 10)
	case causeFault:
		return "page_fault"
	}
	return "unknown"
}

// unattributed counts one bio a traced process queued outside any traced
// call (bytes at issue) under its cause.
func (e *Engine) unattributed(pid, flags, bytes uint32) {
	e.counters.UnattributedBios++
	e.counters.UnattributedBytes += uint64(bytes)
	e.pid(pid, "").Unattributed++
	if e.unattr == nil {
		e.unattr = map[string]*CauseTotals{}
	}
	c := e.unattr[causeName(flags)]
	if c == nil {
		c = &CauseTotals{}
		e.unattr[causeName(flags)] = c
	}
	c.Bios++
	c.Bytes += uint64(bytes)
}

// unattributedCauses copies the per-cause totals for the summary.
func (e *Engine) unattributedCauses() map[string]CauseTotals {
	out := map[string]CauseTotals{}
	for k, v := range e.unattr {
		out[k] = *v
	}
	return out
}
