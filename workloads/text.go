package workloads

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the report as aligned, human-readable tables.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	var desc []string
	desc = append(desc, "engine "+r.Engine, "bs "+FormatSize(r.BlockSize))
	region := FormatSize(r.FileSize) + " region"
	if r.Base > 0 {
		region += fmt.Sprintf(" from offset %d", r.Base)
	}
	desc = append(desc, region)
	if r.Random {
		desc = append(desc, fmt.Sprintf("random offsets (seed %d)", r.Seed))
	} else {
		desc = append(desc, "sequential")
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{r.IODepth > 1 || r.SubmitLatency != nil, fmt.Sprintf("iodepth %d", r.IODepth)}, {r.NumJobs > 1, fmt.Sprintf("%d jobs (%s)", r.NumJobs, jobKind(r.Thread))}, {r.Direct, "O_DIRECT"}, {r.Cold, "cold cache"}, {r.Fadvise != "", "fadvise " + r.Fadvise}, {r.Madvise != "", "madvise " + r.Madvise}, {r.Interrupted, "INTERRUPTED"}} {
		if f.on {
			desc = append(desc, f.name)
		}
	}
	fmt.Fprintf(tw, "workload\t%s (%s)\n", r.Kind, strings.Join(desc, ", "))
	fmt.Fprintf(tw, "file\t%s\n", r.File)
	fmt.Fprintf(tw, "ops\t%d\n", r.Ops)
	fmt.Fprintf(tw, "bytes\t%d (%s)\n", r.Bytes, mib(r.Bytes))
	fmt.Fprintf(tw, "runtime\t%s\n", r.Runtime.Round(time.Microsecond))
	fmt.Fprintf(tw, "IOPS\t%.0f\n", r.IOPS)
	fmt.Fprintf(tw, "bandwidth\t%.1f MiB/s\n", r.Bandwidth)
	fmt.Fprintf(tw, "cpu\tuser %s, sys %s\n", r.CPUUser, r.CPUSys)
	fmt.Fprintf(tw, "page faults\tminor %d, major %d\n", r.MinorFaults, r.MajorFaults)
	if f := r.Faults; f != nil {
		per := "-"
		if f.Major > 0 && r.Kernel != nil {
			per = FormatSize(int64(f.DiskBytesPerMajor))
		}
		ra := "unknown"
		switch {
		case r.Madvise == MadviseRandom:
			ra = "off (MADV_RANDOM: a fault reads only its page)"
		case r.Madvise == MadviseSequential:
			ra = "none (MADV_SEQUENTIAL: faults read ahead like read(2))"
		case f.ReadAroundPages >= 0:
			ra = fmt.Sprintf("%d pages (%s, read_ahead_kb)", f.ReadAroundPages, FormatSize(int64(f.ReadAroundPages)*4096))
		}
		fmt.Fprintf(tw, "mapping\tdisk read per major fault %s; read-around window %s\n", per, ra)
	}
	if r.MaxInflight > 0 {
		fmt.Fprintf(tw, "in flight\tat most %d requests per job\n", r.MaxInflight)
	}
	fmt.Fprintln(tw)

	fmt.Fprintln(tw, "latency\tcount\tmin\tmean\tp50\tp90\tp99\tp99.9\tmax")
	op := "read"
	if isWrite(r.Kind) {
		op = "write"
	}
	if r.SubmitLatency != nil {
		writeLatency(tw, op+" slat", r.SubmitLatency)
		writeLatency(tw, op+" clat", r.CompletionLatency)
		op += " lat"
	}
	writeLatency(tw, op, &r.Latency)
	if r.SyncLatency != nil {
		writeLatency(tw, "sync", r.SyncLatency)
	}
	fmt.Fprintln(tw)

	if len(r.Jobs) > 0 {
		fmt.Fprintln(tw, "job\tops\tIOPS\tMiB/s\tlat p50\tlat p99\tcpu user\tcpu sys")
		for _, j := range r.Jobs {
			fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.1f\t%s\t%s\t%s\t%s\n", j.Job, j.Ops, j.IOPS, j.Bandwidth,
				time.Duration(j.Latency.P50), time.Duration(j.Latency.P99), j.CPUUser, j.CPUSys)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "syscall\tcalls\tbytes\tbytes/call")
	if len(r.Syscalls) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t")
	}
	for _, c := range r.Syscalls {
		per := "-"
		if c.Bytes > 0 {
			per = fmt.Sprintf("%.1f", c.BytesPerCall)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", c.Name, c.Calls, c.Bytes, per)
	}
	fmt.Fprintln(tw)
	if k := r.Kernel; k != nil {
		fmt.Fprintf(tw, "kernel count\tsyscr %d, syscw %d, rchar %d, wchar %d, read_bytes %d, write_bytes %d (%s)\n",
			k.ReadCalls, k.WriteCalls, k.ReadChars, k.WriteChars, k.ReadBytes, k.WriteBytes, cmp.Or(r.KernelScope, threadIO))
	}
	if c := r.Cache; c != nil {
		fmt.Fprintf(tw, "cache after --cold\t%d of %d pages cached (%s)\n", c.CachedPages, c.TotalPages, c.Method)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	return tw.Flush()
}

// jobKind names what the jobs were.
func jobKind(thread bool) string {
	if thread {
		return "threads"
	}
	return "processes"
}

func writeLatency(w io.Writer, name string, l *Latency) {
	ns := func(v int64) string { return time.Duration(v).String() }
	fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, l.Count, ns(l.Min),
		time.Duration(l.Mean).Round(time.Nanosecond), ns(l.P50), ns(l.P90), ns(l.P99), ns(l.P999), ns(l.Max))
}

// mib renders bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }
