package demo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
	"golang.org/x/sys/unix"
)

// traced is what a demo's trace gave: every record, the summary, the hooks,
// and the unattributed bios of traced processes (no record carries them).
type traced struct {
	recs   []any
	sum    *record.Summary
	hooks  []tracer.HookStatus
	unattr []pidBio
}

// pidBio is an unattributed bio and the process that queued it.
type pidBio struct {
	pid   uint32
	cause string // the summary's unattributed cause: syscall:NAME, exec, metadata, page_fault, unknown
	bio   record.Bio
}

// traceWorkloads traces the runs one after another under one tracer (the
// BPF programs load once). SIGINT/SIGTERM interrupt the child and end the
// demo with 130 or 143.
func traceWorkloads(o *Options, topts tracer.Options, runs []*session.WorkloadRun) (*traced, *session.WorkloadRunsResult, error) {
	tr := &traced{}
	s, err := open(o, topts, 2*time.Second, tr)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	res, err := s.RunWorkloads(runs)
	if err != nil {
		return nil, nil, err
	}
	tr.sum, tr.hooks = res.Summary, s.T.Hooks
	o.summary(tr.sum)
	return tr, res, nil
}

// runViews are the demo's view of each run: its calls' stats (from the
// streamed records) and its workload record (withAfter: with its file's
// residency now). A run without a traced call is an error.
func runViews(tr *traced, res *session.WorkloadRunsResult, runs []*session.WorkloadRun, withAfter bool) ([]*Run, []*record.Workload, error) {
	vs := make([]*Run, len(runs))
	wrecs := make([]*record.Workload, len(runs))
	for i, r := range runs {
		var after *workloads.Residency
		if withAfter {
			after = r.File.CachedNow()
		}
		wrecs[i] = res.Record(r, after)
		vs[i] = &Run{Stats: CallStatsOf(FileRecords(tr.recs, r.File.Dev, r.File.Ino)), Rec: wrecs[i]}
		if vs[i].Stats.Calls == 0 {
			return nil, nil, fmt.Errorf("saw no traced read of %s (lost events: %d): run `iopath doctor`", r.File.Path, tr.sum.LostEvents)
		}
	}
	return vs, wrecs, nil
}

// tracedLines are the "traced:" lines of the runs.
func tracedLines(w io.Writer, runs []*session.WorkloadRun, wrecs []*record.Workload) {
	for i, r := range runs {
		fmt.Fprintf(w, "traced: iopath workload %s (pid %d, %s)\n", strings.Join(r.Args, " "), r.Pid, coldLine(wrecs[i]))
	}
}

// traceChild traces `iopath __demo-child ARGS...` (Child) and, after it
// exited, waits up to waitWB for its dirty pages to reach the disk (0: not).
// The tracer streams every call (--all) so warm hits are shown too.
func traceChild(o *Options, settle, waitWB time.Duration, args ...string) (*traced, error) {
	return traceChildOut(o, nil, settle, waitWB, args...)
}

// traceChildOut is traceChild with the child's stdout (a pipe: not traced)
// going to stdout (nil: /dev/null).
func traceChildOut(o *Options, stdout io.Writer, settle, waitWB time.Duration, args ...string) (*traced, error) {
	tr := &traced{}
	s, err := open(o, tracer.Options{All: true}, settle, tr)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	self, argv, err := workloads.SelfCommand(append([]string{"__demo-child"}, args...)...)
	if err != nil {
		return nil, err
	}
	res, err := s.Trace(session.Trace{WaitWriteback: waitWB,
		Command: &session.Command{Path: self, Args: argv, Stdout: stdout, Stderr: o.Notes, DeathSignal: syscall.SIGKILL}})
	switch {
	case err != nil:
		return nil, err
	case res.Signal != 0:
		return nil, session.Interrupted{Signal: res.Signal}
	case res.Command.Code != 0:
		return nil, fmt.Errorf("demo child: exit status %d", res.Command.Code)
	}
	tr.sum, tr.hooks = res.Summary, s.T.Hooks
	o.summary(tr.sum)
	return tr, nil
}

// summary hands the run's summary to OnSummary.
func (o *Options) summary(s *record.Summary) {
	if o.OnSummary != nil {
		o.OnSummary(s)
	}
}

// Child is the traced side of read-1byte, write-1byte and mmap-vs-read
// (`iopath __demo-child KIND PATH`): exactly the system calls (and loads)
// the demo explains, nothing else on the demo's file.
func Child(kind, path string) error {
	var c [1]byte
	switch kind {
	case "mmap-vs-read:read", "mmap-vs-read:mmap", "mmap-vs-read:mmap-random":
		return mmapChild(kind, path)
	case "read-1byte":
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		for i := 0; i < 2; i++ { // cold, then warm, both read(2) at offset 0
			if _, err := unix.Seek(fd, 0, 0); err != nil {
				return err
			}
			if _, err := unix.Read(fd, c[:]); err != nil {
				return err
			}
		}
		return unix.Close(fd)
	case "write-1byte", "write-1byte-fsync":
		fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		c[0] = 'x'
		if _, err := unix.Write(fd, c[:]); err != nil {
			return err
		}
		if kind == "write-1byte-fsync" {
			if err := unix.Fsync(fd); err != nil {
				return err
			}
		}
		return unix.Close(fd)
	}
	return fmt.Errorf("unknown demo child %q", kind)
}

// FileRecords picks the syscall records of one file, in call order.
func FileRecords(recs []any, dev uint32, ino uint64) []*record.Syscall {
	var out []*record.Syscall
	for _, r := range recs {
		if s, ok := r.(*record.Syscall); ok && s.Ino == ino && s.Dev == kernel.Dev(dev) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *record.Syscall) int { return cmp.Compare(a.TimeNs, b.TimeNs) })
	return out
}

// Kdev parses "major:minor" back to the kernel's dev_t encoding.
func Kdev(dev string) uint32 {
	var major, minor uint32
	fmt.Sscanf(dev, "%d:%d", &major, &minor)
	return major<<20 | minor
}

// printJSON prints a demo's raw evidence as JSON Lines: the syscall records
// of each run's file (once for runs that share it), the summary, then one
// "workload" record per run.
func printJSON(w io.Writer, recs []any, sum *record.Summary, wrecs []*record.Workload) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	type file struct {
		dev string
		ino uint64
	}
	done := map[file]bool{}
	for _, wr := range wrecs {
		if done[file{wr.Dev, wr.Ino}] {
			continue
		}
		done[file{wr.Dev, wr.Ino}] = true
		for _, c := range FileRecords(recs, Kdev(wr.Dev), wr.Ino) {
			enc.Encode(c)
		}
	}
	enc.Encode(sum)
	for _, wr := range wrecs {
		enc.Encode(wr)
	}
}

// mech is the mechanism a hook runs on ("?" if unknown).
func mech(hooks []tracer.HookStatus, name string) string {
	for _, h := range hooks {
		if h.Hook == name {
			return string(h.Mechanism)
		}
	}
	return "?"
}

// lostWarning is the line a demo ends with when events were lost.
func lostWarning(w io.Writer, sum *record.Summary) {
	if sum.LostEvents > 0 {
		fmt.Fprintf(w, "\nwarning: %d events were lost; the numbers above may be incomplete\n", sum.LostEvents)
	}
}

// SyscallCount is the workload's own count of one system call (0 if absent).
func SyscallCount(rep *workloads.Report, name string) int64 {
	for _, c := range rep.Syscalls {
		if c.Name == name {
			return c.Calls
		}
	}
	return 0
}

// mmapChild is the traced side of mmap-vs-read: one byte of every 4 KiB
// page of the file, in order, by pread(2) or by loads from a private
// read-only mapping (after madvise(MADV_RANDOM) for mmap-vs-read:mmap-random).
// It prints the kernel's count of the thread's faults during the accesses
// (getrusage RUSAGE_THREAD: "maj_flt N min_flt M").
func mmapChild(kind, path string) error {
	runtime.LockOSThread() // the accesses and both counts on one thread
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var before, after unix.Rusage
	if kind == "mmap-vs-read:read" {
		var c [1]byte
		unix.Getrusage(unix.RUSAGE_THREAD, &before)
		for off := int64(0); off < mmapDemoSize; off += 4096 {
			if _, err := unix.Pread(fd, c[:], off); err != nil {
				return err
			}
		}
		unix.Getrusage(unix.RUSAGE_THREAD, &after)
		_, err := fmt.Printf("maj_flt %d min_flt %d\n", after.Majflt-before.Majflt, after.Minflt-before.Minflt)
		return err
	}
	m, err := unix.Mmap(fd, 0, mmapDemoSize, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	if kind == "mmap-vs-read:mmap-random" {
		if err := unix.Madvise(m, unix.MADV_RANDOM); err != nil {
			return err
		}
	}
	var sum byte
	unix.Getrusage(unix.RUSAGE_THREAD, &before)
	for off := 0; off < mmapDemoSize; off += 4096 {
		sum += m[off]
	}
	unix.Getrusage(unix.RUSAGE_THREAD, &after)
	runtime.KeepAlive(sum) // the loads must happen
	_, err = fmt.Printf("maj_flt %d min_flt %d\n", after.Majflt-before.Majflt, after.Minflt-before.Minflt)
	return err
}
