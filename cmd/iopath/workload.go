package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/workloads"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newWorkloadCmd) }

// workloadFlags are the command line of "iopath workload".
type workloadFlags struct {
	spec     workloads.Spec
	bs, size string
	json     bool
}

func newWorkloadCmd() *cobra.Command {
	var f workloadFlags
	cmd := &cobra.Command{
		Use:   "workload KIND",
		Short: "Run a small, measurable IO workload and report it like fio",
		Long: `Run one IO pattern on a file and report ops, IOPS, bandwidth, latency
percentiles, CPU time and the system calls issued (checked against the
kernel's /proc/thread-self/io).

Kinds:
  read-1byte   read(2) of 1 byte per call, sequential (--random for random offsets)
  small-write  writes of --bs bytes (default 1), appending (or --overwrite)
  seq-read     sequential reads of --bs bytes (default 4k)
  rand-read    random block-aligned reads
  seq-write    sequential writes, appending to an empty file (or --overwrite)
  rand-write   random block-aligned overwrites

Engines:
  psync  pread/pwrite (default)
  sync   lseek (when the position is elsewhere) + read/write
  mmap   copy through a shared mapping: page faults instead of calls
  stdio  a 4096-byte user-space buffer over read/write, like glibc fread/fwrite
  libaio    --iodepth requests in flight: io_submit/io_getevents (Linux native AIO)
  io_uring  --iodepth requests in flight on an io_uring (Linux 5.6+)

Sizes take k, m, g suffixes (powers of 1024). By default the file is written
with real data in a new directory under $TMPDIR, synced, and removed at the end;
it is left in the page cache unless --cold.`,
		Example: `  iopath workload rand-read --size 1g --duration 10s
  iopath workload read-1byte --engine stdio
  iopath workload small-write --fdatasync 100 --dir /mnt/data
  iopath workload rand-read --direct --cold --json
  iopath workload rand-read --direct --engine io_uring --iodepth 16 --numjobs 2`,
		Args:      workloadArgs,
		ValidArgs: workloads.Kinds(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorkload(cmd, args[0], &f)
		},
	}
	bindWorkloadFlags(cmd.Flags(), &f)
	return cmd
}

// bindWorkloadFlags defines the workload's flags on fl, bound to f: the
// workload command's, and `trace --workload`'s after -- (parseTracedWorkload),
// which so validate every one of them the same way.
func bindWorkloadFlags(fl *pflag.FlagSet, f *workloadFlags) {
	s := &f.spec
	fl.StringVar(&s.Engine, "engine", workloads.EnginePsync, "how ops reach the kernel: "+strings.Join(workloads.Engines(), ", "))
	fl.StringVar(&f.bs, "bs", "", "bytes per op (default 1 for read-1byte and small-write, 4k otherwise)")
	fl.StringVar(&f.size, "size", "", "bytes of file the ops cover (default 1m for read-1byte and small-write, 64m otherwise; an existing --file's size)")
	fl.Int64Var(&s.Count, "count", 0, "number of ops (default: one pass over --size, or unlimited with --duration)")
	fl.DurationVar(&s.Duration, "duration", 0, "run for this long (e.g. 10s); with --count, whichever ends first")
	fl.BoolVar(&s.Random, "random", false, "random offsets for read-1byte, and small-write --overwrite")
	fl.Uint64Var(&s.Seed, "seed", workloads.DefaultSeed, "seed of the random offsets: the same seed gives the same offsets")
	fl.BoolVar(&s.Overwrite, "overwrite", false, "small-write and seq-write: write over a full file instead of appending")
	fl.Int64Var(&s.FsyncEvery, "fsync", 0, "call fsync after every N writes")
	fl.Int64Var(&s.FdatasyncEvery, "fdatasync", 0, "call fdatasync after every N writes")
	fl.BoolVar(&s.Direct, "direct", false, "open with O_DIRECT (bypass the page cache; --bs must be a multiple of the device's alignment)")
	fl.BoolVar(&s.Cold, "cold", false, "drop the file from the page cache before the run (fdatasync + POSIX_FADV_DONTNEED), and check it worked")
	fl.StringVar(&s.Fadvise, "fadvise", "", "access advice before the run: random or sequential")
	fl.StringVar(&s.Madvise, "madvise", "", "--engine mmap: madvise the mapping before the run: random, sequential or willneed")
	fl.Int64Var(&s.MsyncEvery, "msync", 0, "--engine mmap writes: call msync(MS_SYNC) after every N writes")
	fl.BoolVar(&s.Prealloc, "prealloc", false, "reserve the file with fallocate instead of writing data into it (its reads then return zeros without disk IO)")
	fl.StringVar(&s.Dir, "dir", "", "directory for the workload's file (default: a new directory under $TMPDIR)")
	fl.StringVar(&s.File, "file", "", "file to use; an existing file is never removed, a new one is removed unless --keep")
	fl.BoolVar(&s.Keep, "keep", false, "keep the files the workload created")
	workloads.AddFlags(fl, s)
	fl.BoolVar(&f.json, "json", false, "print the report as JSON (units in field names: _ns, _bytes, _mib_s)")
}

// workloadArgs requires exactly one known kind, naming the choices otherwise.
func workloadArgs(_ *cobra.Command, args []string) error {
	kinds := strings.Join(workloads.Kinds(), ", ")
	switch {
	case len(args) == 0:
		return fmt.Errorf("missing workload kind: run iopath workload KIND, with KIND one of %s", kinds)
	case len(args) > 1:
		return fmt.Errorf("too many arguments %q: give one workload kind and flags", args[1:])
	}
	return workloads.Spec{Kind: args[0]}.Validate()
}

func runWorkload(cmd *cobra.Command, kind string, f *workloadFlags) error {
	f.spec.Kind = kind
	if err := f.spec.SetSizes(f.bs, f.size); err != nil {
		return err
	}
	if err := f.spec.Validate(); err != nil {
		return err
	}
	if f.spec.Dir == "" && f.spec.File == "" {
		// The file goes to a new directory in $TMPDIR (workloads.Prepare):
		// first remove those of runs killed by SIGKILL.
		session.CleanStale(os.TempDir(), "workload", cmd.ErrOrStderr())
	}
	sig := session.Catch()
	defer sig.Stop()
	interrupted, err := workloads.RunReported(sig.Context(), f.spec, cmd.OutOrStdout(), cmd.ErrOrStderr(), f.json)
	if err != nil {
		return err
	}
	if interrupted {
		// 130 or 143, after the report, with trace's one line on stderr
		// (under `trace --workload` the trace prints it).
		if os.Getenv(session.UnderTraceEnv) == "1" {
			return exitError{code: session.ExitCode(sig.Signal(), nil)}
		}
		return session.Interrupted{Signal: sig.Signal()}
	}
	return nil
}
