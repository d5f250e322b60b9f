// Package metrics exposes the in-kernel aggregates (package aggregate) as
// Prometheus metrics: a Collector that reads the BPF maps at each scrape.
// Namespace iopath_, base units (seconds, bytes), _total counters, disks
// named as node_exporter names them. Per-process labels only for the comm
// values of an allowlist: never per pid or per file.
package metrics

import (
	"sort"
	"sync"

	"github.com/iopath/iopath/aggregate"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector reads the aggregates at scrape time.
type Collector struct {
	mu      sync.Mutex
	read    func() (*aggregate.Snapshot, error)
	perComm map[string]bool
	// Lost returns the kernel's loss counters by name (ring buffer, full
	// maps): iopath_lost_events_total and iopath_map_full_total.
	Lost func() map[string]uint64
	// Missed returns, per attached BPF program, the runs the kernel
	// skipped, zeros included: iopath_missed_runs_total has a series per
	// program from the first scrape, as a counter should. ok false: the
	// kernel does not count them (before 5.12), no series. nil: not
	// reported.
	Missed func() (missed map[string]uint64, ok bool)
}

// New returns a Collector of read (an aggregate.Reader's Read: cumulative
// snapshots); perComm lists the comm values that get per-process series.
func New(read func() (*aggregate.Snapshot, error), perComm []string, lost func() map[string]uint64) *Collector {
	c := &Collector{read: read, perComm: map[string]bool{}, Lost: lost}
	for _, p := range perComm {
		c.perComm[p] = true
	}
	return c
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range All {
		ch <- m.desc
	}
	ch <- scrapeErr.desc
}

// Collect reads the maps once and sends every series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock() // the Reader folds exited processes: one read at a time
	s, err := c.read()
	c.mu.Unlock()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(scrapeErr.desc, err)
		return
	}
	tot := s.Total()
	for op := range aggregate.Ops {
		name := aggregate.OpNames[op]
		counter(ch, syscalls, tot.Calls[op], name)
		counter(ch, syscallErrors, tot.Errors[op], name)
		if op != aggregate.Sync {
			counter(ch, syscallBytes, tot.Bytes[op], name)
		}
		for cache, label := range []string{"hit", "miss"} {
			histogram(ch, syscallDuration, &s.Global.SyscallLat[op][cache], s.Global.SyscallLatNs[op][cache], name, label)
		}
	}
	counter(ch, pageCache, tot.HitPages, "hit")
	counter(ch, pageCache, tot.MissPages, "miss")
	counter(ch, readahead, tot.ReadaheadPages, "inserted")
	counter(ch, callDiskBytes, tot.DiskReadBytes, "read")
	counter(ch, callDiskBytes, tot.DiskWriteBytes+tot.WritebackBytes, "write")
	counter(ch, dirtied, tot.DirtiedPages)
	gauge(ch, dirtyPending, float64(tot.DirtyPending()))
	ch <- prometheus.MustNewConstMetric(throttle.desc, prometheus.CounterValue, float64(tot.ThrottleNs)/1e9)
	histogram(ch, dirtyToDisk, &s.Global.DirtyToDisk, s.Global.DirtyToDiskNs)

	devs := make([]*aggregate.Device, 0, len(s.Devices))
	for _, d := range s.Devices {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool {
		if devs[i].Dev != devs[j].Dev {
			return devs[i].Dev < devs[j].Dev
		}
		return devs[i].Op < devs[j].Op
	})
	for _, d := range devs {
		name, op := aggregate.DeviceName(d.Dev), d.Op.String()
		counter(ch, diskBytes, d.Bytes, name, op)
		counter(ch, diskRequests, d.Requests, name, op)
		counter(ch, diskErrors, d.Errors, name, op)
		counter(ch, diskUnseen, d.Unseen, name, op)
		histogram(ch, bioLatency, &d.D2C, d.D2CNs, name, op, "d2c")
		histogram(ch, bioLatency, &d.Q2C, d.Q2CNs, name, op, "q2c")
	}
	overflowNames := [...]string{aggregate.OverflowProcs: "agg_procs", aggregate.OverflowFiles: "agg_files",
		aggregate.OverflowRqs: "agg_rqs", aggregate.OverflowDevs: "agg_devs"}
	for i, n := range overflowNames {
		counter(ch, mapFull, s.Global.Overflow[i], n)
	}
	if c.Lost != nil {
		l := c.Lost()
		counter(ch, lostEvents, l["ringbuf_lost"])
		for _, n := range []string{"task_ops", "targets", "bio_owners", "dirty_pages", "inflight"} {
			counter(ch, mapFull, l[n], n)
		}
	}
	counter(ch, noDisk, s.Global.Overflow[aggregate.OverflowNoDisk])
	if c.Missed != nil {
		m, _ := c.Missed()
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			counter(ch, missedRuns, m[n], n)
		}
	}
	c.perCommSeries(ch, s)
}

// perCommSeries sends the allowlisted comms' series: their live processes
// plus those that exited.
func (c *Collector) perCommSeries(ch chan<- prometheus.Metric, s *aggregate.Snapshot) {
	if len(c.perComm) == 0 {
		return
	}
	by := map[string]*aggregate.IO{}
	for comm := range c.perComm {
		by[comm] = &aggregate.IO{}
		if r := s.RetiredByComm[comm]; r != nil {
			by[comm].Add(r)
		}
	}
	for _, p := range s.Procs {
		if io := by[p.Comm]; io != nil && !p.Exited {
			io.Add(&p.IO)
		}
	}
	for comm, io := range by {
		for op := range aggregate.Ops {
			counter(ch, procSyscalls, io.Calls[op], comm, aggregate.OpNames[op])
		}
		counter(ch, procBytes, io.Bytes[aggregate.Read], comm, "read")
		counter(ch, procBytes, io.Bytes[aggregate.Write], comm, "write")
		counter(ch, procDiskBytes, io.DiskReadBytes, comm, "read")
		counter(ch, procDiskBytes, io.DiskWriteBytes+io.WritebackBytes, comm, "write")
		counter(ch, procPageCache, io.HitPages, comm, "hit")
		counter(ch, procPageCache, io.MissPages, comm, "miss")
		ch <- prometheus.MustNewConstMetric(procThrottle.desc, prometheus.CounterValue, float64(io.ThrottleNs)/1e9, comm)
	}
}

func counter(ch chan<- prometheus.Metric, m *Metric, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(v), labels...)
}

func gauge(ch chan<- prometheus.Metric, m *Metric, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, v, labels...)
}

// histogram sends a log2 ns histogram in seconds: one bucket per log2
// bound (le = 2^(i+1) ns), the last bucket only in +Inf.
func histogram(ch chan<- prometheus.Metric, m *Metric, h *aggregate.Hist, sumNs uint64, labels ...string) {
	buckets := make(map[float64]uint64, aggregate.Buckets-1)
	var cum uint64
	for i := 0; i < aggregate.Buckets-1; i++ {
		cum += h[i]
		buckets[aggregate.Upper(i)/1e9] = cum
	}
	ch <- prometheus.MustNewConstHistogram(m.desc, h.Count(), float64(sumNs)/1e9, buckets, labels...)
}
