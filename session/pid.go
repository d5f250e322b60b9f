package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/iopath/iopath/tracer"
)

// CheckPid refuses a -p that cannot be traced: no such process, a zombie, a
// kernel thread (it makes no system calls) or iopath itself (whose own IO
// is never traced).
func CheckPid(pid int) error {
	if pid <= 0 || pid > 1<<22 || syscall.Kill(pid, 0) == syscall.ESRCH {
		return fmt.Errorf("no process with pid %d: check it with `ps -p %d`", pid, pid)
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil // gone meanwhile, or hidden: the tracer says what it can
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags ...
	i := strings.LastIndexByte(string(st), ')')
	fields := strings.Fields(string(st)[i+1:])
	if len(fields) > 6 && fields[0] == "Z" {
		return fmt.Errorf("pid %d is a zombie (exited, not yet reaped): it will do no more IO", pid)
	}
	const pfKthread = 0x00200000 // include/linux/sched.h
	if len(fields) > 6 {
		if flags, err := strconv.ParseUint(fields[6], 10, 64); err == nil && flags&pfKthread != 0 {
			return fmt.Errorf("pid %d is a kernel thread: it makes no system calls to trace; give the pid of a user process", pid)
		}
	}
	if tracer.Tgid(pid) == os.Getpid() {
		return fmt.Errorf("pid %d is iopath itself, whose own IO is never traced: give the pid of another process", pid)
	}
	return nil
}

// PidNote says on stderr what -p follows: the process, its threads and
// the children it forks from now on; not processes other ones fork (a
// database's workers are often forked by its postmaster, not by the
// backend one traces).
func PidNote(pids []int) string {
	ps := make([]string, len(pids))
	for i, p := range pids {
		ps[i] = strconv.Itoa(p)
	}
	return "iopath: -p follows children of PID " + strings.Join(ps, ",") +
		"; processes forked by others are not traced: use --comm or -p of the parent"
}
