package workloads

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// MaxNumJobs is the largest --numjobs.
const MaxNumJobs = 256

// AddFlags defines the command-line flags of the spec's queue-depth and job
// options on fl, bound to s: --iodepth, --numjobs, --thread, and the hidden
// --job a job process gets from Run. Out-of-range values are refused when
// parsed, with the range in the message.
func AddFlags(fl *pflag.FlagSet, s *Spec) {
	fl.Var(&rangeFlag{v: &s.IODepth, name: "--iodepth", lo: 1, hi: MaxIODepth, what: "requests in flight per job", def: 1}, "iodepth",
		fmt.Sprintf("requests each job keeps in flight, 1 to %d (libaio and io_uring engines)", MaxIODepth))
	fl.Var(&rangeFlag{v: &s.IODepthBatch, name: "--iodepth-batch", lo: 1, hi: MaxIODepth, what: "requests per submit call", def: 1}, "iodepth-batch",
		"most requests one io_submit/io_uring_enter submits (fio's iodepth_batch_submit), 1 to --iodepth")
	fl.Var(&rangeFlag{v: &s.IODepthCompleteMin, name: "--iodepth-complete-min", lo: 1, hi: MaxIODepth, what: "completions per wait", def: 1}, "iodepth-complete-min",
		"fewest completions one io_getevents/io_uring_enter waits for (fio's iodepth_batch_complete_min), 1 to --iodepth")
	fl.Var(&rangeFlag{v: &s.NumJobs, name: "--numjobs", lo: 1, hi: MaxNumJobs, what: "jobs", def: 1}, "numjobs",
		"jobs running the workload at once on the same file, each with its own file descriptor, engine and offsets (seed+i); processes, or threads with --thread")
	fl.BoolVar(&s.Thread, "thread", false, "run --numjobs jobs as threads of one process instead of processes")
	fl.BoolVar(&s.UringAsync, "uring-async", false, "--engine io_uring: set IOSQE_ASYNC on every request (the kernel runs each in an io-wq worker thread)")
	fl.BoolVar(&s.UringFixed, "fixed-files", false, "--engine io_uring: register the file with the ring (IORING_REGISTER_FILES) and name it by index (IOSQE_FIXED_FILE), as fio's registerfiles")
	fl.IntVar(&s.UringLink, "uring-link", 0, "--engine io_uring: chain every N requests of a submit call with IOSQE_IO_LINK (each starts when the one before it completed; a failed or short one cancels the rest with ECANCELED), 2 to --iodepth-batch")
	fl.BoolVar(&s.SQPoll, "sqpoll", false, "--engine io_uring: a kernel polling thread (IORING_SETUP_SQPOLL) submits the requests")
	fl.Var(&s.job, "job", "internal: run as job I of N started by a workload with --numjobs (protocol on fds 3 and 4)")
	fl.MarkHidden("job")
}

// rangeFlag is an int flag that refuses values outside [lo, hi].
type rangeFlag struct {
	v           *int
	name, what  string
	lo, hi, def int
}

func (f *rangeFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return strconv.Itoa(f.def)
	}
	return strconv.Itoa(*f.v)
}

func (f *rangeFlag) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%s %q is not a number: give %d to %d %s", f.name, s, f.lo, f.hi, f.what)
	}
	if n < f.lo || n > f.hi {
		return fmt.Errorf("%s %d is out of range: give %d to %d %s", f.name, n, f.lo, f.hi, f.what)
	}
	*f.v = n
	return nil
}

func (f *rangeFlag) Type() string { return "int" }

// jobRole is set in a process that Run started as one job of several.
type jobRole struct {
	index, of int // job index (0-based) of `of` jobs; of == 0: not a job process
}

func (j *jobRole) String() string {
	if j.of == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", j.index, j.of)
}

func (j *jobRole) Set(s string) error {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return fmt.Errorf("--job %q: is internal, for job processes; give I/N with 0 <= I < N", s)
	}
	j.index, j.of = i, n
	return nil
}

func (j *jobRole) Type() string { return "I/N" }

// validateQueue checks IODepth, NumJobs and the engines they need.
func (s *Spec) validateQueue() error {
	switch {
	case s.IODepth < 1 || s.IODepth > MaxIODepth:
		return fmt.Errorf("--iodepth %d is out of range: give 1 to %d requests in flight per job", s.IODepth, MaxIODepth)
	case s.IODepthBatch < 1 || s.IODepthBatch > s.IODepth:
		return fmt.Errorf("--iodepth-batch %d is out of range: give 1 to --iodepth (%d) requests per submit call", s.IODepthBatch, s.IODepth)
	case s.IODepthCompleteMin < 1 || s.IODepthCompleteMin > s.IODepth:
		return fmt.Errorf("--iodepth-complete-min %d is out of range: give 1 to --iodepth (%d) completions per wait", s.IODepthCompleteMin, s.IODepth)
	case s.NumJobs < 1 || s.NumJobs > MaxNumJobs:
		return fmt.Errorf("--numjobs %d is out of range: give 1 to %d jobs", s.NumJobs, MaxNumJobs)
	case s.IODepth > 1 && !async(s.Engine):
		return fmt.Errorf("--iodepth %d needs --engine libaio or io_uring: the %s engine has one request in flight, inside its system call", s.IODepth, s.Engine)
	case (s.UringAsync || s.SQPoll || s.UringFixed) && s.Engine != EngineIOUring:
		return fmt.Errorf("--uring-async, --sqpoll and --fixed-files are io_uring options: add --engine io_uring")
	case s.UringLink != 0 && s.Engine != EngineIOUring:
		return fmt.Errorf("--uring-link is an io_uring option: add --engine io_uring")
	case s.UringLink != 0 && (s.UringLink < 2 || s.UringLink > s.IODepthBatch):
		return fmt.Errorf("--uring-link %d is out of range: a chain is 2 to --iodepth-batch (%d) requests of one submit call", s.UringLink, s.IODepthBatch)
	case s.NumJobs > 1 && s.appends():
		return fmt.Errorf("--numjobs %d with appending %s: the jobs would all append to the same file; use --overwrite (or rand-write), or --numjobs 1", s.NumJobs, s.Kind)
	}
	return nil
}
