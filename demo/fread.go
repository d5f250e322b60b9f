package demo

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/iopath/iopath/workloads"
	"golang.org/x/sys/unix"
)

func init() {
	register(&Demo{Name: "read-vs-fread", Run: runReadFread,
		Short: "a cached 64 KiB file read 1 byte at a time: read(2) per byte vs a stdio (fread-like) buffer"})
}

// freadFileSize is the size of the read-vs-fread demo's files, in bytes.
const freadFileSize = 64 << 10

// shortDur renders a duration in ns, in whole ns below 1 µs (dur would print 0.0 µs).
func shortDur(ns uint64) string {
	if ns < 1000 {
		return fmt.Sprintf("%d ns", ns)
	}
	return render.Duration(ns)
}

// FreadTable compares the two runs; every cell comes from the runs' summary
// totals (their files' read calls) and the workloads' reports.
func FreadTable(raw, buf *record.Workload) string {
	row := func(name string, f func(r *record.Workload) string) []string { return []string{name, f(raw), f(buf)} }
	return demoTable([][]string{
		{"", "read(2) per byte", "stdio buffer"},
		row("bytes the program read", func(r *record.Workload) string {
			return fmt.Sprintf("%d in %d ops", r.Report.Bytes, r.Report.Ops)
		}),
		row("read calls (tracer)", func(r *record.Workload) string { return fmt.Sprint(r.FileReadCalls) }),
		row("bytes per read call", func(r *record.Workload) string {
			return fmt.Sprintf("%.1f", fdiv(float64(r.ReadBytesRequested), float64(r.FileReadCalls)))
		}),
		row("read calls (workload)", func(r *record.Workload) string {
			return fmt.Sprintf("%d, and %d lseek", SyscallCount(r.Report, "read"), SyscallCount(r.Report, "lseek"))
		}),
		row("read calls (kernel syscr)", func(r *record.Workload) string {
			if r.Report.Kernel == nil {
				return "-"
			}
			return fmt.Sprint(r.Report.Kernel.ReadCalls)
		}),
		row("page-cache hits", func(r *record.Workload) string {
			return fmt.Sprintf("%d of %d pages", r.PagesHit, r.PagesRequested)
		}),
		row("disk bytes read", func(r *record.Workload) string { return render.Bytes(r.DiskBytesRead) }),
		row("total time (workload)", func(r *record.Workload) string { return render.Duration(uint64(r.Report.Runtime)) }),
		row("time per byte", func(r *record.Workload) string {
			return shortDur(div(uint64(r.Report.Runtime), uint64(r.Report.Bytes)))
		}),
		row("CPU time in the kernel", func(r *record.Workload) string { return render.Duration(uint64(r.Report.CPUSys)) }),
	})
}

// FreadWhy explains the table with its own numbers; blksize is the files'
// st_blksize in bytes.
func FreadWhy(raw, buf *record.Workload, blksize int64) string {
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
		render.Duration(div(uint64(raw.Report.Runtime), raw.FileReadCalls)), render.Duration(uint64(raw.Report.Runtime)), render.Duration(uint64(buf.Report.Runtime)),
		fdiv(float64(raw.Report.Runtime), float64(buf.Report.Runtime)))
	fmt.Fprintf(&b, "  Both read cached pages only (%s and %s from disk): the difference comes from the system calls.\n",
		render.Bytes(raw.DiskBytesRead), render.Bytes(buf.DiskBytesRead))
	return b.String()
}

func runReadFread(o *Options) error {
	spec := workloads.Spec{Kind: workloads.KindRead1Byte, FileSize: freadFileSize}
	ws, err := setupFiles(o, "its reads never reach a disk", spec, spec)
	if err != nil {
		return err
	}
	defer ws.close()
	dir, fs, files := ws.dir, ws.fs, ws.files
	var st unix.Stat_t
	if err := unix.Stat(files[0].Path, &st); err != nil {
		return err
	}
	runs := []*session.WorkloadRun{
		{Args: []string{workloads.KindRead1Byte, "--engine=" + workloads.EngineSync}, File: files[0]},
		{Args: []string{workloads.KindRead1Byte, "--engine=" + workloads.EngineStdio}, File: files[1]},
	}
	var cached []string
	for _, r := range runs {
		c := r.File.CachedNow()
		if c == nil {
			return fmt.Errorf("cannot measure the page-cache residency of %s", r.File.Path)
		}
		cached = append(cached, fmt.Sprintf("%d of %d", c.CachedPages, c.TotalPages))
	}
	// Pure cache hits are counted in the kernel (not streamed): 65536 calls
	// cost no ring-buffer records, and the summary still counts every call.
	tr, res, err := traceWorkloads(o, tracer.Options{}, runs)
	if err != nil {
		return err
	}
	recs, sum, hooks := tr.recs, tr.sum, tr.hooks
	wrecs := make([]*record.Workload, len(runs))
	for i, r := range runs {
		wrecs[i] = res.Record(r, nil)
		if wrecs[i].FileReadCalls == 0 {
			return fmt.Errorf("saw no traced read of %s (lost events: %d): run `iopath doctor`", r.File.Path, sum.LostEvents)
		}
	}
	w := o.Out
	fmt.Fprintf(w, "iopath demo read-vs-fread: a cached %s file read 1 byte at a time, with read(2) per byte vs through a stdio buffer\n\n", render.Bytes(freadFileSize))
	fmt.Fprintf(w, "files: two %s files in %s (%s on %s), written and left cached: %s pages in the page cache (cachestat); st_blksize %d\n",
		render.Bytes(freadFileSize), dir, fs.Type, kernel.Dev(fs.Dev), strings.Join(cached, " and "), st.Blksize)
	for _, r := range runs {
		fmt.Fprintf(w, "traced: iopath workload %s (pid %d)\n", strings.Join(r.Args, " "), r.Pid)
	}
	fmt.Fprintf(w, "hooks: vfs_read=%s (cache hits counted in the kernel)\n\n", mech(hooks, "vfs_read"))
	fmt.Fprint(w, FreadTable(wrecs[0], wrecs[1]))
	fmt.Fprintln(w)
	fmt.Fprint(w, FreadWhy(wrecs[0], wrecs[1], int64(st.Blksize)))
	lostWarning(w, sum)
	if o.JSON {
		printJSON(w, recs, sum, wrecs)
	}
	return nil
}
