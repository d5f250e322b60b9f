package topview

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/aggregate"
)

// Interval is the JSON object `iopath top --json` prints per interval
// (type "interval"), and once at the end over the whole run (type
// "total"). Latencies in ns, sizes in bytes, pages of 4 KiB.
type Interval struct {
	Type       string    `json:"type"`
	Time       time.Time `json:"time"`
	IntervalNs int64     `json:"interval_ns"`
	Total      IOJSON    `json:"total"`
	Processes  []IOJSON  `json:"processes"`
	Files      []IOJSON  `json:"files"`
	// RowsOmitted counts active rows beyond --rows (they are in Total).
	RowsOmitted map[string]int `json:"rows_omitted"`
	Devices     []DeviceJSON   `json:"devices"`
	// Overflow counts, in this interval, what the bounded maps refused:
	// processes and files whose calls went to the total only, requests
	// whose latency was not measured, disks not counted.
	Overflow map[string]uint64 `json:"overflow"`
	// LostEvents is the kernel's count of records lost since the start
	// (the ring buffer; none are sent per call in top).
	LostEvents uint64 `json:"lost_events"`
	// MissedRuns counts, per BPF program, the runs the kernel skipped
	// since the start (recursion protection): what they would have
	// counted is in no number here. Empty when none was missed.
	MissedRuns map[string]uint64 `json:"missed_runs"`
	// Kernel is the system's dirty and writeback pages (/proc/vmstat).
	Kernel map[string]uint64 `json:"kernel,omitempty"`
}

// IOJSON is one row (or the total).
type IOJSON struct {
	Pid    uint32 `json:"pid,omitempty"`
	Comm   string `json:"comm,omitempty"`
	Exited bool   `json:"exited,omitempty"`
	Dev    string `json:"dev,omitempty"` // files: the filesystem's MAJ:MIN
	Ino    uint64 `json:"ino,omitempty"`
	Gen    uint32 `json:"generation,omitempty"` // files: the inode's i_generation (a reused inode number is another file, another row)
	Name   string `json:"name,omitempty"`       // files: the last path component at its latest call

	Reads           uint64   `json:"reads"`
	Writes          uint64   `json:"writes"`
	Syncs           uint64   `json:"syncs"`
	Errors          uint64   `json:"errors"`
	ReadBytes       uint64   `json:"read_bytes"`
	WriteBytes      uint64   `json:"write_bytes"`
	HitPages        uint64   `json:"cache_hit_pages"`
	MissPages       uint64   `json:"cache_miss_pages"`
	HitRatio        *float64 `json:"cache_hit_ratio"`   // null without read pages of block-backed files (O_DIRECT: the cache is bypassed)
	NoBdevPages     uint64   `json:"nobdev_pages"`      // read pages of files without a block device (proc, sysfs, cgroup, tmpfs): not in the ratio
	DirectReadBytes uint64   `json:"direct_read_bytes"` // bytes of O_DIRECT reads: they bypass the cache, not in the ratio
	ReadaheadPages  uint64   `json:"readahead_pages"`
	DiskReadBytes   uint64   `json:"disk_read_bytes"`
	DiskWriteBytes  uint64   `json:"disk_write_bytes"` // the calls' own bios
	WritebackBytes  uint64   `json:"writeback_bytes"`  // their dirty pages, written by the flusher
	Amplification   *float64 `json:"amplification"`    // disk bytes per byte read or written; null without bytes
	DirtiedPages    uint64   `json:"dirtied_pages"`
	DirtyPending    uint64   `json:"dirty_pending_pages"` // since the start: dirtied, not yet written back or dropped
	ThrottleNs      uint64   `json:"throttle_ns"`
	// Call latency percentiles per op (a read's and an fsync's are never
	// mixed); null without calls of that op.
	ReadP50Ns  *float64 `json:"read_lat_p50_ns"`
	ReadP99Ns  *float64 `json:"read_lat_p99_ns"`
	WriteP50Ns *float64 `json:"write_lat_p50_ns"`
	WriteP99Ns *float64 `json:"write_lat_p99_ns"`
	SyncP50Ns  *float64 `json:"sync_lat_p50_ns"` // fsync, fdatasync, sync_file_range, sync, syncfs, msync
	SyncP99Ns  *float64 `json:"sync_lat_p99_ns"`
}

// DeviceJSON is one disk and request class.
type DeviceJSON struct {
	Device    string   `json:"device"` // as node_exporter names it (sda, nvme0n1)
	Op        string   `json:"op"`     // read, write, flush, discard
	Requests  uint64   `json:"requests"`
	Bytes     uint64   `json:"bytes"`
	Errors    uint64   `json:"errors"`
	RateHz    float64  `json:"requests_per_s"`
	D2CP50Ns  *float64 `json:"d2c_p50_ns"`
	D2CP99Ns  *float64 `json:"d2c_p99_ns"`
	Q2CP50Ns  *float64 `json:"q2c_p50_ns"`
	Q2CP99Ns  *float64 `json:"q2c_p99_ns"`
	Q2CUnknwn uint64   `json:"q2c_unknown,omitempty"`
	// Unseen: requests whose completion no BPF program saw (counted in
	// requests and bytes, not in the D2C/Q2C percentiles).
	Unseen uint64 `json:"completions_unseen,omitempty"`
}

func ptr(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

// IOOf converts one row's numbers; cum gives the pending dirty pages.
func IOOf(io, cum *aggregate.IO) IOJSON {
	j := IOJSON{
		Reads: io.Calls[aggregate.Read], Writes: io.Calls[aggregate.Write], Syncs: io.Calls[aggregate.Sync],
		Errors:    io.Errors[aggregate.Read] + io.Errors[aggregate.Write] + io.Errors[aggregate.Sync],
		ReadBytes: io.Bytes[aggregate.Read], WriteBytes: io.Bytes[aggregate.Write],
		HitPages: io.HitPages, MissPages: io.MissPages, NoBdevPages: io.NoBdevPages, DirectReadBytes: io.DirectReadBytes, ReadaheadPages: io.ReadaheadPages,
		DiskReadBytes: io.DiskReadBytes, DiskWriteBytes: io.DiskWriteBytes, WritebackBytes: io.WritebackBytes,
		DirtiedPages: io.DirtiedPages, DirtyPending: cum.DirtyPending(), ThrottleNs: io.ThrottleNs,
	}
	j.HitRatio = ptr(io.HitRatio())
	j.Amplification = ptr(io.Amplification())
	for op, q := range [aggregate.Ops][2]**float64{aggregate.Read: {&j.ReadP50Ns, &j.ReadP99Ns},
		aggregate.Write: {&j.WriteP50Ns, &j.WriteP99Ns}, aggregate.Sync: {&j.SyncP50Ns, &j.SyncP99Ns}} {
		*q[0] = ptr(io.Lat[op].Quantile(0.5))
		*q[1] = ptr(io.Lat[op].Quantile(0.99))
	}
	return j
}

// Build makes the interval object of d (ending at the cumulative cur);
// rows caps the process and file lists (0: no cap); lost and missed are the
// tracer's lost records and missed program runs since the start.
func Build(typ string, d, cur *aggregate.Snapshot, k SortKey, rows int, lost uint64, missed map[string]uint64) *Interval {
	if missed == nil {
		missed = map[string]uint64{}
	}
	iv := &Interval{Type: typ, Time: d.At, IntervalNs: int64(d.Elapsed), RowsOmitted: map[string]int{},
		Overflow: map[string]uint64{}, LostEvents: lost, MissedRuns: missed, Kernel: vmstatDirty()}
	tot, cumTot := d.Total(), cur.Total()
	iv.Total = IOOf(&tot, &cumTot)
	for _, by := range []By{ByProcess, ByFile} {
		rs := Rows(d, cur, by, k)
		if rows > 0 && len(rs) > rows {
			iv.RowsOmitted[string(by)] = len(rs) - rows
			rs = rs[:rows]
		}
		out := make([]IOJSON, 0, len(rs))
		for i := range rs {
			r := &rs[i]
			j := IOOf(&r.IO, &r.Cum)
			if by == ByFile {
				j.Dev, j.Ino, j.Gen, j.Name = DevName(r.File.Dev), r.File.Ino, r.File.Gen, r.Name
			} else {
				j.Pid, j.Comm, j.Exited = r.Pid, r.Comm, r.Exited
			}
			out = append(out, j)
		}
		if by == ByFile {
			iv.Files = out
		} else {
			iv.Processes = out
		}
	}
	iv.Devices = Devices(d)
	g := d.Global.Overflow
	iv.Overflow["processes"], iv.Overflow["files"] = g[aggregate.OverflowProcs], g[aggregate.OverflowFiles]
	iv.Overflow["requests"], iv.Overflow["devices"] = g[aggregate.OverflowRqs], g[aggregate.OverflowDevs]
	iv.Overflow["requests_without_disk"] = g[aggregate.OverflowNoDisk]
	return iv
}

// Devices lists the disks with requests in d, by name and class.
func Devices(d *aggregate.Snapshot) []DeviceJSON {
	var out []DeviceJSON
	for _, v := range d.Devices {
		if v.Requests == 0 && v.Bytes == 0 {
			continue
		}
		j := DeviceJSON{Device: aggregate.DeviceName(v.Dev), Op: v.Op.String(), Requests: v.Requests, Bytes: v.Bytes,
			Errors: v.Errors, Q2CUnknwn: v.Q2CUnknown, Unseen: v.Unseen}
		if d.Elapsed > 0 {
			j.RateHz = float64(v.Requests) / d.Elapsed.Seconds()
		}
		j.D2CP50Ns, j.D2CP99Ns = ptr(v.D2C.Quantile(0.5)), ptr(v.D2C.Quantile(0.99))
		j.Q2CP50Ns, j.Q2CP99Ns = ptr(v.Q2C.Quantile(0.5)), ptr(v.Q2C.Quantile(0.99))
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b DeviceJSON) int {
		if a.Device != b.Device {
			return strings.Compare(a.Device, b.Device)
		}
		return strings.Compare(a.Op, b.Op)
	})
	return out
}

// vmstatDirty reads the system's nr_dirty and nr_writeback pages.
func vmstatDirty() map[string]uint64 {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return nil
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && (k == "nr_dirty" || k == "nr_writeback") {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				out[k+"_pages"] = n
			}
		}
	}
	return out
}
