package main

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func init() {
	demos["read-vs-fread"] = struct {
		short string
		run   func(cmd *cobra.Command, f *demoFlags, args []string) error
	}{"a cached 64 KiB file read 1 byte at a time: read(2) per byte vs a stdio (fread-like) buffer", runDemoReadFread}
}

// freadFileSize is the size of the read-vs-fread demo's files, in bytes.
const freadFileSize = 64 << 10

// shortDur renders a duration in ns, in whole ns below 1 µs (dur would print 0.0 µs).
func shortDur(ns uint64) string {
	if ns < 1000 {
		return fmt.Sprintf("%d ns", ns)
	}
	return dur(ns)
}

// syscallCount is the workload's own count of one system call (0 if absent).
func syscallCount(rep *workloads.Report, name string) int64 {
	for _, c := range rep.Syscalls {
		if c.Name == name {
			return c.Calls
		}
	}
	return 0
}

// freadTable compares the two runs; every cell comes from the runs' summary
// totals (their files' read calls) and the workloads' reports.
func freadTable(raw, buf *workloadRecord) string {
	row := func(name string, f func(r *workloadRecord) string) []string { return []string{name, f(raw), f(buf)} }
	return demoTable([][]string{
		{"", "read(2) per byte", "stdio buffer"},
		row("bytes the program read", func(r *workloadRecord) string {
			return fmt.Sprintf("%d in %d ops", r.Report.Bytes, r.Report.Ops)
		}),
		row("read calls (tracer)", func(r *workloadRecord) string { return fmt.Sprint(r.FileReadCalls) }),
		row("bytes per read call", func(r *workloadRecord) string {
			return fmt.Sprintf("%.1f", fdiv(float64(r.ReadBytesRequested), float64(r.FileReadCalls)))
		}),
		row("read calls (workload)", func(r *workloadRecord) string {
			return fmt.Sprintf("%d, and %d lseek", syscallCount(r.Report, "read"), syscallCount(r.Report, "lseek"))
		}),
		row("read calls (kernel syscr)", func(r *workloadRecord) string {
			if r.Report.Kernel == nil {
				return "-"
			}
			return fmt.Sprint(r.Report.Kernel.ReadCalls)
		}),
		row("page-cache hits", func(r *workloadRecord) string {
			return fmt.Sprintf("%d of %d pages", r.PagesHit, r.PagesRequested)
		}),
		row("disk bytes read", func(r *workloadRecord) string { return human(r.DiskBytesRead) }),
		row("total time (workload)", func(r *workloadRecord) string { return dur(uint64(r.Report.Runtime)) }),
		row("time per byte", func(r *workloadRecord) string {
			return shortDur(div(uint64(r.Report.Runtime), uint64(r.Report.Bytes)))
		}),
		row("CPU time in the kernel", func(r *workloadRecord) string { return dur(uint64(r.Report.CPUSys)) }),
	})
}

// freadWhy explains the table with its own numbers; blksize is the files'
// st_blksize in bytes.
func freadWhy(raw, buf *workloadRecord, blksize int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Why: glibc's fread/getc give a FILE a buffer of st_blksize bytes (stat says %d for these files)\n", blksize)
	fmt.Fprintf(&b, "  and refill it with read(fd, buf, %d); the stdio engine does the same with a %d-byte buffer.\n", blksize, workloads.StdioBufferSize)
	if blksize != workloads.StdioBufferSize {
		fmt.Fprintf(&b, "  (Here glibc would use %d bytes, not %d: its calls would move %d bytes each.)\n", blksize, workloads.StdioBufferSize, blksize)
	}
	fmt.Fprintf(&b, "  So %d 1-byte reads from the buffer cost %d read(2) calls of %.0f bytes, against %d calls of %.0f byte without it:\n",
		buf.Report.Ops, buf.FileReadCalls, fdiv(float64(buf.ReadBytesRequested), float64(buf.FileReadCalls)),
		raw.FileReadCalls, fdiv(float64(raw.ReadBytesRequested), float64(raw.FileReadCalls)))
	fmt.Fprintf(&b, "  %.0fx fewer system calls. Every call pays the kernel entry and exit, the fd lookup, a page-cache lookup\n",
		fdiv(float64(raw.FileReadCalls), float64(buf.FileReadCalls)))
	fmt.Fprintf(&b, "  and a copy, whatever its size (%s per call here, traced), so the byte-at-a-time run took %s against %s: %.0fx.\n",
		dur(div(uint64(raw.Report.Runtime), raw.FileReadCalls)), dur(uint64(raw.Report.Runtime)), dur(uint64(buf.Report.Runtime)),
		fdiv(float64(raw.Report.Runtime), float64(buf.Report.Runtime)))
	fmt.Fprintf(&b, "  Both read cached pages only (%s and %s from disk): the difference comes from the system calls.\n",
		human(raw.DiskBytesRead), human(buf.DiskBytesRead))
	return b.String()
}

func runDemoReadFread(cmd *cobra.Command, f *demoFlags, _ []string) error {
	dir, fs, cleanup, err := demoSetup(f)
	if err != nil {
		return err
	}
	defer cleanup()
	spec := workloads.Spec{Kind: workloads.KindRead1Byte, FileSize: freadFileSize}
	files, closeFiles, err := demoFiles(dir, f.keep, spec, spec)
	if err != nil {
		return err
	}
	defer closeFiles()
	var st unix.Stat_t
	if err := unix.Stat(files[0].path, &st); err != nil {
		return err
	}
	runs := []*workloadRun{
		{args: []string{workloads.KindRead1Byte, "--engine=" + workloads.EngineSync}, file: files[0]},
		{args: []string{workloads.KindRead1Byte, "--engine=" + workloads.EngineStdio}, file: files[1]},
	}
	var cached []string
	for _, r := range runs {
		c := r.file.cachedNow()
		if c == nil {
			return fmt.Errorf("cannot measure the page-cache residency of %s", r.file.path)
		}
		cached = append(cached, fmt.Sprintf("%d of %d", c.CachedPages, c.TotalPages))
	}
	// Pure cache hits are counted in the kernel (not streamed): 65536 calls
	// cost no ring-buffer records, and the summary still counts every call.
	recs, sum, hooks, err := traceWorkloads(tracer.Options{}, runs)
	if err != nil {
		return err
	}
	wrecs := make([]*workloadRecord, len(runs))
	for i, r := range runs {
		wrecs[i] = r.record(recs, sum, nil)
		if wrecs[i].FileReadCalls == 0 {
			return fmt.Errorf("saw no traced read of %s (lost events: %d): run `iopath doctor`", r.file.path, sum.LostEvents)
		}
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "iopath demo read-vs-fread: a cached %s file read 1 byte at a time, with read(2) per byte vs through a stdio buffer\n\n", human(freadFileSize))
	fmt.Fprintf(w, "files: two %s files in %s (%s on %s), written and left cached: %s pages in the page cache (cachestat); st_blksize %d\n",
		human(freadFileSize), dir, fs.fsType, kernel.Dev(fs.dev), strings.Join(cached, " and "), st.Blksize)
	for _, r := range runs {
		fmt.Fprintf(w, "traced: iopath workload %s (pid %d)\n", strings.Join(r.args, " "), r.pid)
	}
	fmt.Fprintf(w, "hooks: vfs_read=%s (cache hits counted in the kernel)\n\n", mech(hooks, "vfs_read"))
	fmt.Fprint(w, freadTable(wrecs[0], wrecs[1]))
	fmt.Fprintln(w)
	fmt.Fprint(w, freadWhy(wrecs[0], wrecs[1], int64(st.Blksize)))
	if sum.LostEvents > 0 {
		fmt.Fprintf(w, "\nwarning: %d events were lost; the numbers above may be incomplete\n", sum.LostEvents)
	}
	if f.json {
		demoJSON(w, recs, sum, wrecs)
	}
	return nil
}
