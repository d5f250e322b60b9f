package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer"
)

// CheckPid refuses a -p that cannot be traced: a pid no process can have
// (0, negative, beyond the kernel's limit), no such process, a zombie, a
// kernel thread (it makes no system calls) or iopath itself (whose own IO
// is never traced).
func CheckPid(pid int) error {
	if err := CheckPidNamespace(); err != nil {
		return err // its pids are not the kernel's
	}
	if err := checkPidRange(pid); err != nil {
		return err
	}
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return fmt.Errorf("no process with pid %d: check it with `ps -p %d`", pid, pid)
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags ...
	fields, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if !ok {
		return nil // gone meanwhile, or hidden: the tracer says what it can
	}
	if len(fields) > 6 && zombieGone(fields) {
		return fmt.Errorf("pid %d is a zombie (exited, not yet reaped): it will do no more IO", pid)
	}
	if kthread(fields) {
		return fmt.Errorf("pid %d is a kernel thread: it makes no system calls to trace; give the pid of a user process", pid)
	}
	if tracer.Tgid(pid) == os.Getpid() {
		return fmt.Errorf("pid %d is iopath itself, whose own IO is never traced: give the pid of another process", pid)
	}
	return nil
}

// pidLimit is the kernel's PID_MAX_LIMIT on 64-bit (4194304): every pid
// is below it, whatever kernel.pid_max says.
const pidLimit = 1 << 22

// checkPidRange refuses a pid no process can have: 0 (the kernel's idle
// task, which `ps -p 0` does not show either), a negative one, or one at
// or above pidLimit. -p 0 was told to check it with `ps -p 0`.
func checkPidRange(pid int) error {
	const fix = "give the pid of a running process, e.g. from `pgrep NAME`"
	switch {
	case pid == 0:
		return fmt.Errorf("-p 0 is not a process: pid 0 is the kernel's idle task, which makes no system calls; %s", fix)
	case pid < 0:
		return fmt.Errorf("-p %d is not a process: pids are positive; %s", pid, fix)
	case pid >= pidLimit:
		return fmt.Errorf("-p %d is not a process: pids are below %d (the kernel's limit); %s", pid, pidLimit, fix)
	}
	return nil
}

// CheckPids checks every -p (CheckPid) and returns them without repeats:
// a pid given twice, or a thread's id and its process's (both trace the
// process), is kept once, first come (`-p X -p X` said "PID X,X"). A
// kernel thread among user processes (`-p 2 -p 1`) is refused like any
// other -p that cannot be traced, with the fix: drop it.
func CheckPids(pids []int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, pid := range pids {
		if err := CheckPid(pid); err != nil {
			if fields, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid)); ok && len(pids) > 1 && kthread(fields) {
				return nil, fmt.Errorf("pid %d is a kernel thread: it makes no system calls to trace; drop -p %d and keep the user processes' -p", pid, pid)
			}
			return nil, err
		}
		if tg := tracer.Tgid(pid); !seen[tg] {
			seen[tg] = true
			out = append(out, pid)
		}
	}
	return out, nil
}

// kthread says whether the fields of /proc/PID/stat after "(comm)" are
// those of a kernel thread (PF_KTHREAD in flags).
func kthread(fields []string) bool {
	const pfKthread = 0x00200000 // include/linux/sched.h
	if len(fields) <= 6 {
		return false
	}
	flags, err := strconv.ParseUint(fields[6], 10, 64)
	return err == nil && flags&pfKthread != 0
}

// statFields are the fields of a /proc/.../stat file after "(comm)".
// zombieGone says whether a process's /proc/PID/stat fields (those after
// the comm) describe a process that has exited: a zombie with no thread
// left (num_threads 1: the leader, kept until reaped). A zombie leader
// whose other threads still run (the main thread called pthread_exit) is
// a running process: its threads do IO, and -p traces them.
func zombieGone(fields []string) bool {
	if len(fields) == 0 || fields[0] != "Z" {
		return false
	}
	if len(fields) > 17 { // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime priority nice num_threads
		if n, err := strconv.Atoi(fields[17]); err == nil && n > 1 {
			return false
		}
	}
	return true
}

// exited says whether process pid has exited: no such process, or a
// zombie with no thread left (zombieGone). kill(pid, 0) succeeds on a
// zombie until its parent reaps it, which may be never.
func exited(pid int) bool {
	if fields, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid)); ok {
		return zombieGone(fields)
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func statFields(path string) ([]string, bool) {
	st, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(st), ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(st)[i+1:]), true
}

// CheckComm refuses a --comm no task can have, longer than the kernel's
// 15 bytes (TASK_COMM_LEN 16 with its NUL: a longer name is cut, so it
// would never match), and one that names only kernel threads (kthreadd,
// kworker/0:1): they make no system calls, so the trace would be empty. A
// name no task has yet is accepted: the process may start later. Checked
// with the other flags, before anything loads (before, the tracer refused
// a long one while loading, as a BPF load failure, and dropped the probe
// cache).
func CheckComm(comm string) error {
	if err := tracer.CommLength(comm); err != nil {
		return err
	}
	if err := CheckPidNamespace(); err != nil {
		return err
	}
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	kernel := 0
	for _, t := range tasks {
		c, err := os.ReadFile(filepath.Join(t, "comm"))
		if err != nil || strings.TrimSuffix(string(c), "\n") != comm {
			continue
		}
		fields, ok := statFields(filepath.Join(t, "stat"))
		if !ok || !kthread(fields) {
			return nil // a user task (or one gone meanwhile) has the name
		}
		kernel++
	}
	if kernel > 0 {
		return fmt.Errorf("--comm %s names only kernel threads (%d): they make no system calls to trace; give the name of a user process", comm, kernel)
	}
	return nil
}

// PidNote says on stderr what -p follows: the process, its threads and
// the children it forks from now on; not processes other ones fork (a
// database's workers are often forked by its postmaster, not by the
// backend one traces). A -p of a thread id is named as the thread of its
// process (the one traced), with the process's comm.
func PidNote(pids []int) string {
	ps := make([]string, len(pids))
	for i, p := range pids {
		ps[i] = "PID " + strconv.Itoa(p)
		if tg := tracer.Tgid(p); tg != p {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", tg))
			ps[i] = fmt.Sprintf("thread %d of process %d (%s)", p, tg, render.Safe(strings.TrimSuffix(string(comm), "\n")))
		}
	}
	note := "iopath: -p follows children of " + strings.Join(ps, ", ") +
		" forked from now on; processes forked by others are not traced: use --comm or -p of the parent"
	if kids := existingChildren(pids); len(kids) > 0 {
		// A postmaster's checkpointer, WAL writer and backends are such
		// children: -p of it alone missed their IO (a DBA's trial).
		shown := kids[:min(len(kids), 8)]
		list := make([]string, len(shown))
		for i, k := range shown {
			list[i] = strconv.Itoa(k)
		}
		if len(kids) > len(shown) {
			list = append(list, "…")
		}
		what := fmt.Sprintf("%d children already running (%s) are", len(kids), strings.Join(list, ", "))
		if len(kids) == 1 {
			what = fmt.Sprintf("child already running (%s) is", list[0])
		}
		note += "; the " + what + " not traced: add -p for each, or use --comm"
	}
	return note
}

// existingChildren lists the children, now, of the processes of pids that
// are not themselves among them, sorted.
func existingChildren(pids []int) []int {
	given := map[int]bool{}
	for _, p := range pids {
		given[p] = true
		given[tracer.Tgid(p)] = true
	}
	seen := map[int]bool{}
	var kids []int
	for _, p := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", tracer.Tgid(p)))
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			for _, f := range strings.Fields(string(b)) {
				if k, err := strconv.Atoi(f); err == nil && !given[k] && !seen[k] {
					seen[k] = true
					kids = append(kids, k)
				}
			}
		}
	}
	slices.Sort(kids)
	return kids
}
