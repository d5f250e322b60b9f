package topview

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/iopath/iopath/aggregate"
	"github.com/iopath/iopath/render"
)

// Table renders the interval d as text: a total line, the rows (at most
// rows, 0: all) and the disks. Used by the terminal UI and by `iopath
// trace --interval`.
func Table(d, cur *aggregate.Snapshot, by By, k SortKey, rows int) string {
	var b strings.Builder
	tot, cumTot := d.Total(), cur.Total()
	fmt.Fprintf(&b, "interval %.1fs  calls %d (%d read, %d write, %d sync)  read %s  written %s  disk %s  hit %s  dirty pending %s  throttled %s\n",
		d.Elapsed.Seconds(), tot.AllCalls(), tot.Calls[aggregate.Read], tot.Calls[aggregate.Write], tot.Calls[aggregate.Sync],
		render.Bytes(tot.Bytes[aggregate.Read]), render.Bytes(tot.Bytes[aggregate.Write]), render.Bytes(tot.DiskBytes()),
		hitText(&tot, true), render.Count(cumTot.DirtyPending(), "page"), render.Duration(tot.ThrottleNs))
	rs := Rows(d, cur, by, k)
	omitted := 0
	if rows > 0 && len(rs) > rows {
		omitted = len(rs) - rows
		rs = rs[:rows]
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	first := "PID COMM"
	if by == ByFile {
		first = "FILE"
	}
	fmt.Fprintf(tw, "%s\tREADS\tWRITES\tREAD\tWRITTEN\tHIT\tDISK R\tDISK W\tAMP\tRA PAGES\tDIRTY\tTHROTTLE\tREAD P50/P99\tWRITE P50/P99\tSYNC P50/P99\t\n", first)
	reused := reusedInodes(rs)
	for i := range rs {
		r := &rs[i]
		io := &r.IO
		amp, okAmp := io.Amplification()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n",
			r.Label(by, reused[aggregate.FileKey{Dev: r.File.Dev, Ino: r.File.Ino}]),
			io.Calls[aggregate.Read], io.Calls[aggregate.Write], render.Bytes(io.Bytes[aggregate.Read]),
			render.Bytes(io.Bytes[aggregate.Write]), hitText(io, false), render.Bytes(io.DiskReadBytes),
			render.Bytes(io.DiskWriteBytes+io.WritebackBytes), times(amp, okAmp), io.ReadaheadPages,
			r.Cum.DirtyPending(), render.Duration(io.ThrottleNs),
			pcts(&io.Lat[aggregate.Read]), pcts(&io.Lat[aggregate.Write]), pcts(&io.Lat[aggregate.Sync]))
	}
	tw.Flush()
	if omitted > 0 {
		fmt.Fprintf(&b, "(%d more %s rows)\n", omitted, by)
	}
	if devs := Devices(d); len(devs) > 0 {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "DEVICE\tOP\tREQ/S\tBYTES\tD2C P50\tD2C P99\tQ2C P50\tQ2C P99\t\n")
		var unseen uint64
		for _, v := range devs {
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", v.Device, v.Op, v.RateHz, render.Bytes(v.Bytes),
				durp(v.D2CP50Ns), durp(v.D2CP99Ns), durp(v.Q2CP50Ns), durp(v.Q2CP99Ns))
			unseen += v.Unseen
		}
		tw.Flush()
		if unseen > 0 {
			fmt.Fprintf(&b, "request completions no BPF program saw this interval: %d (counted at issue, not in D2C/Q2C)\n", unseen)
		}
	}
	if o := d.Global.Overflow; o[aggregate.OverflowProcs]+o[aggregate.OverflowFiles]+o[aggregate.OverflowRqs]+o[aggregate.OverflowDevs] > 0 {
		fmt.Fprintf(&b, "maps full this interval: %d process, %d file, %d request, %d device entries refused (counted in the total only)\n",
			o[aggregate.OverflowProcs], o[aggregate.OverflowFiles], o[aggregate.OverflowRqs], o[aggregate.OverflowDevs])
	}
	if n := d.Global.Overflow[aggregate.OverflowNoDisk]; n > 0 {
		fmt.Fprintf(&b, "requests without a disk this interval: %d (not counted per disk)\n", n)
	}
	return b.String()
}

// MissedLine says how many BPF program runs the kernel skipped since the
// start (empty when none): their counts are missing from every number.
func MissedLine(missed map[string]uint64) string {
	if len(missed) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(missed))
	var total uint64
	parts := make([]string, 0, len(names))
	for _, n := range names {
		total += missed[n]
		parts = append(parts, fmt.Sprintf("%s %d", n, missed[n]))
	}
	return fmt.Sprintf("missed BPF runs since the start: %d, not counted (%s)\n", total, strings.Join(parts, ", "))
}

// hitText is io's page-cache hit ratio; reads with O_DIRECT bypass the
// cache: "bypass" when they were all its reads, and on the total line the
// bytes they read beside the ratio of the others.
func hitText(io *aggregate.IO, total bool) string {
	r, ok := io.HitRatio()
	switch {
	case io.DirectReadBytes == 0:
		return ratio(r, ok)
	case !ok:
		return "bypass"
	case total:
		return ratio(r, ok) + " (" + render.Bytes(io.DirectReadBytes) + " O_DIRECT)"
	}
	return ratio(r, ok) + "+bypass"
}

func ratio(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

func times(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

// pcts is a latency histogram's p50/p99 ("-" without calls).
func pcts(h *aggregate.Hist) string {
	p50, ok := h.Quantile(0.5)
	if !ok {
		return "-"
	}
	p99, _ := h.Quantile(0.99)
	return render.Duration(uint64(p50)) + "/" + render.Duration(uint64(p99))
}

func durp(ns *float64) string {
	if ns == nil {
		return "-"
	}
	return render.Duration(uint64(*ns))
}
