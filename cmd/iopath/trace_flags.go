package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/timeline"
	"github.com/spf13/cobra"
)

// checkTraceFlags refuses flag values that would trace nothing or wrongly.
func checkTraceFlags(f *traceFlags) error {
	if f.ringbuf < 4096 || f.ringbuf > 1<<30 || f.ringbuf&(f.ringbuf-1) != 0 {
		return fmt.Errorf("--ringbuf-size %d is not a power of two from 4096 to 1073741824 bytes: e.g. --ringbuf-size 8388608 (8 MiB, the default)", f.ringbuf)
	}
	if f.maxDirty < 1 || f.maxDirty > 1<<26 {
		return fmt.Errorf("--max-dirty-pages %d is out of range: choose 1 to 67108864 folios", f.maxDirty)
	}
	for _, d := range []struct {
		flag, example string
		v             time.Duration
	}{{"--duration", "10s, or 0 for no limit", f.duration}, {"--settle", "2s, or 0 not to wait", f.settle},
		{"--wait-writeback", "40s", f.waitWriteback}, {"--interval", "1s, or 0 for none", f.interval}} {
		if d.v < 0 {
			return fmt.Errorf("%s %s is negative: give a duration of 0 or more, e.g. %s %s", d.flag, d.v, d.flag, d.example)
		}
	}
	if f.output != "" {
		// -o and --timeline/--report naming one file would leave only the
		// last writer's output in it.
		for _, x := range []struct{ flag, path string }{{"--timeline", f.timeline.trace}, {"--report", f.timeline.report}} {
			if x.path != "" && samePath(f.output, x.path) {
				return fmt.Errorf("-o and %s both name %s: give them different files", x.flag, f.output)
			}
		}
	}
	return checkForce(f.force)
}

// samePath says whether a and b name one file: the same cleaned absolute
// path, or the same existing inode.
func samePath(a, b string) bool {
	aa, errA := filepath.Abs(a)
	bb, errB := filepath.Abs(b)
	if errA == nil && errB == nil && aa == bb {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// checkPid refuses a -p that cannot be traced: no such process, a zombie, a
// kernel thread (it makes no system calls) or iopath itself (whose own IO
// is never traced).
func checkPid(pid int) error {
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
	if tgid(pid) == os.Getpid() {
		return fmt.Errorf("pid %d is iopath itself, whose own IO is never traced: give the pid of another process", pid)
	}
	return nil
}

// tgid maps a thread id to its process id (pid itself if unknown).
func tgid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return pid
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return pid
}

// traceOutput returns where iopath's records, stories and summary go: the
// -o file, stdout shared with the traced command (each record then starts
// on a new line, see session.SharedStdout), or stdout. done closes it; a
// file -o created is removed again when the run failed without output.
func traceOutput(cmd *cobra.Command, path string, withCommand bool) (w io.Writer, shared *session.SharedStdout, done func(failed error), err error) {
	if path != "" {
		_, statErr := os.Stat(path)
		if err := timeline.CheckOutputPath("-o", path, statErr != nil); err != nil {
			return nil, nil, nil, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("-o %s: %w: give a writable path", path, err)
		}
		return f, nil, func(failed error) {
			fi, _ := f.Stat()
			f.Close()
			if failed != nil && os.IsNotExist(statErr) && fi != nil && fi.Size() == 0 {
				os.Remove(path)
			}
		}, nil
	}
	out := cmd.OutOrStdout()
	if f, ok := out.(*os.File); ok && withCommand && f == os.Stdout {
		sh, err := session.ShareStdout(f)
		if err != nil {
			return nil, nil, nil, err
		}
		return sh, sh, func(error) { sh.Close() }, nil
	}
	return out, nil, func(error) {}, nil
}

// regularFileChunk is the largest write of several records to a regular
// file of iopath's own (render.Printer.SetChunk): the kernel keeps any
// write to a file in one piece, so only pipes need PIPE_BUF-sized writes.
const regularFileChunk = 64 << 10

// setChunk lets out write larger batches when w (not shared with a traced
// command) is a regular file.
func setChunk(out *render.Printer, w io.Writer, shared *session.SharedStdout) {
	f, ok := w.(*os.File)
	if !ok || shared != nil {
		return
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		out.SetChunk(regularFileChunk)
	}
}
