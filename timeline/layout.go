package timeline

import (
	"errors"
	"strconv"

	"github.com/iopath/iopath/record"
)

// Timeline lays records out into tracks, slices and flows for its outputs.
// Its memory is bounded by the number of distinct threads, devices, workers
// and lanes, plus maxRemembered bios: not by the number of records.
type Timeline struct {
	outs    []Output
	threads map[threadKey]*Track
	procs   map[uint32]bool // pids announced
	devs    map[string]*group
	workers map[uint32]*group
	dirty   map[uint32]*group // by traced pid
	wbProc  uint32            // pid of the synthetic "writeback" process (0: none yet)
	nTracks int
	nSynth  uint32
	flowID  uint64
	// syncBios: bios of a Writeback record of a traced call (fsync,
	// O_SYNC), placed on a lane but drawn when the call's own record lists
	// them (with their kind: data, metadata, journal), later.
	syncBios fifo[bioKey, syncBio]
	// wbBios: the first bio of each Writeback record, for its Persisted
	// records (the engine emits them right after it).
	wbBios fifo[bioKey, wbPlaced]
	stats  Stats
}

type threadKey struct{ pid, tid uint32 }

// bioKey names a bio: device, first sector, and a time (issue or completion).
type bioKey struct {
	dev    string
	sector uint64
	ts     uint64
}

// placed is where a bio's slice was drawn.
type placed struct {
	track      *Track
	start, end uint64
}

// syncBio is a placed bio waiting for its call's record.
type syncBio struct {
	placed
	bio    record.Bio
	opID   uint64
	reason string
}

// wbPlaced is where a writeback's bio, and its worker's slice, were drawn.
type wbPlaced struct {
	bio    placed
	worker placed // track nil: submitted by a traced call, no worker slice
}

// group is a device, worker or process's set of lanes.
type group struct {
	kind, process, thread string
	pid                   uint32
	sort                  int
	lanes                 []*Track
	ends                  []uint64 // latest end of the slices on each lane
}

// New returns a Timeline drawing to outs.
func New(outs ...Output) *Timeline {
	return &Timeline{
		outs: outs, threads: map[threadKey]*Track{}, procs: map[uint32]bool{}, devs: map[string]*group{},
		workers: map[uint32]*group{}, dirty: map[uint32]*group{},
		syncBios: newFIFO[bioKey, syncBio](maxRemembered), wbBios: newFIFO[bioKey, wbPlaced](maxRemembered),
	}
}

func (t *Timeline) announce(tr *Track) {
	tr.Index = t.nTracks
	t.nTracks++
	if !t.procs[tr.Pid] {
		t.procs[tr.Pid] = true
		tr.NewProc = true
	}
	for _, o := range t.outs {
		o.Track(tr)
	}
}

func (t *Timeline) slice(s *Slice) {
	for _, o := range t.outs {
		o.Slice(s)
	}
}

// flow draws an arrow through points (at least two).
func (t *Timeline) flow(points ...FlowPoint) {
	if len(points) < 2 {
		return
	}
	t.flowID++
	t.stats.Flows++
	f := &Flow{ID: t.flowID, Points: points}
	for _, o := range t.outs {
		o.Flow(f)
	}
}

func (t *Timeline) synth() uint32 {
	t.nSynth++
	return syntheticBase + t.nSynth
}

// thread is the track of a traced thread (comm "" if unknown yet).
func (t *Timeline) thread(pid, tid uint32, comm string) *Track {
	k := threadKey{pid, tid}
	if tr := t.threads[k]; tr != nil {
		return tr
	}
	name := comm
	if name == "" {
		name = "tid " + strconv.FormatUint(uint64(tid), 10)
	}
	tr := &Track{Kind: KindThread, Pid: pid, Tid: tid, Process: name, Thread: name}
	t.threads[k] = tr
	t.announce(tr)
	return tr
}

// place puts [start, end] on the first lane of g free at start, adding a
// lane if none is (up to MaxLanes; past that the lane that frees first is
// used and the overlap counted).
func (t *Timeline) place(g *group, start, end uint64) *Track {
	best := -1
	for i, e := range g.ends {
		if e <= start {
			best = i
			break
		}
	}
	if best < 0 && len(g.lanes) < MaxLanes {
		n := len(g.lanes)
		name := g.thread
		if n > 0 {
			name += " #" + strconv.Itoa(n+1)
		}
		tr := &Track{Kind: g.kind, Pid: g.pid, Tid: t.synth(), Process: g.process, Thread: name, Sort: g.sort}
		g.lanes = append(g.lanes, tr)
		g.ends = append(g.ends, 0)
		t.announce(tr)
		best = n
	}
	if best < 0 {
		best = 0
		for i, e := range g.ends {
			if e < g.ends[best] {
				best = i
			}
		}
		t.stats.Overlaps++
	}
	g.ends[best] = max(g.ends[best], end)
	return g.lanes[best]
}

func (t *Timeline) device(dev string) *group {
	g := t.devs[dev]
	if g == nil {
		g = &group{kind: KindDevice, process: "disk " + dev, thread: "bios", pid: t.synth(), sort: 1 + len(t.devs)}
		t.devs[dev] = g
	}
	return g
}

func (t *Timeline) worker(tid uint32, comm string) *group {
	g := t.workers[tid]
	if g == nil {
		if t.wbProc == 0 {
			t.wbProc = t.synth()
		}
		g = &group{kind: KindWorker, process: "writeback", pid: t.wbProc, sort: 1 << 20,
			thread: comm + " " + strconv.FormatUint(uint64(tid), 10)}
		t.workers[tid] = g
	}
	return g
}

func (t *Timeline) dirtyLanes(pid uint32) *group {
	g := t.dirty[pid]
	if g == nil {
		proc := ""
		if tr := t.threads[threadKey{pid, pid}]; tr != nil {
			proc = tr.Process
		}
		g = &group{kind: KindDirty, process: proc, thread: "dirty pages → disk", pid: pid}
		t.dirty[pid] = g
	}
	return g
}

// inside is ts moved strictly inside [start, end] when the span allows it:
// a flow binds to the slice enclosing its timestamp.
func inside(ts, start, end uint64) uint64 {
	if end-start < 2 || end < start {
		return start
	}
	return min(max(ts, start+1), end-1)
}

// bioSpan is the bio's slice: queue (or issue, if the queue was not seen) to
// completion (or issue, if not seen).
func bioSpan(b *record.Bio) (start, end uint64) {
	start = b.IssueNs
	if b.QueueNs != 0 && b.QueueNs <= b.IssueNs {
		start = b.QueueNs
	}
	end = max(b.CompleteNs, b.IssueNs, start)
	return start, end
}

// placeBio chooses a bio's lane on its device.
func (t *Timeline) placeBio(b *record.Bio) placed {
	start, end := bioSpan(b)
	return placed{t.place(t.device(b.Dev), start, end), start, end}
}

// drawBio places a bio and draws it.
func (t *Timeline) drawBio(b *record.Bio, opID uint64, reason string) placed {
	p := t.placeBio(b)
	t.drawBioAt(p, b, opID, reason)
	return p
}

// drawBioAt draws a placed bio's slice and its nested D2C slice.
func (t *Timeline) drawBioAt(p placed, b *record.Bio, opID uint64, reason string) {
	tr, start, end := p.track, p.start, p.end
	t.stats.Bios++
	t.slice(&Slice{Track: tr, StartNs: start, DurNs: end - start, Name: bioName(b), Cat: catBio, Args: bioArgs(b, opID, reason)})
	if b.CompleteNs != 0 && b.CompleteNs >= b.IssueNs {
		t.slice(&Slice{Track: tr, StartNs: b.IssueNs, DurNs: b.CompleteNs - b.IssueNs, Name: "D2C", Cat: catD2C,
			Args: map[string]any{"d2c_ns": b.D2CNs}})
	}
}

// Syscall draws a call, the bios it queued (unless a Writeback record drew
// them already) and an arrow from the call to each.
func (t *Timeline) Syscall(c *record.Syscall) {
	tr := t.thread(c.Pid, c.Tid, c.Comm)
	start, end := c.TimeNs, c.TimeNs+c.DurationNs
	t.stats.Calls++
	t.slice(&Slice{Track: tr, StartNs: start, DurNs: c.DurationNs, Name: c.Syscall, Cat: catSyscall, Args: callArgs(c)})
	t.opBios(tr, start, end, c.OpID, c.Bios)
}

// Fault draws a page fault on a file mapping like a call: a slice on its
// thread's track, the bios it queued (read-around) and an arrow to each.
func (t *Timeline) Fault(f *record.Fault) {
	tr := t.thread(f.Pid, f.Tid, f.Comm)
	start, end := f.TimeNs, f.TimeNs+f.DurationNs
	t.stats.Faults++
	t.slice(&Slice{Track: tr, StartNs: start, DurNs: f.DurationNs, Name: faultName(f), Cat: catFault, Args: faultArgs(f)})
	t.opBios(tr, start, end, f.OpID, f.Bios)
}

// opBios draws the bios of a call or fault on track tr ([start, end]),
// unless a Writeback record placed them already, with an arrow to each.
func (t *Timeline) opBios(tr *Track, start, end, opID uint64, bios []record.Bio) {
	for i := range bios {
		b := &bios[i]
		var p placed
		if sb, ok := t.syncBios.take(bioKey{b.Dev, b.Sector, b.IssueNs}); ok {
			p = sb.placed
			t.drawBioAt(p, b, opID, sb.reason) // the call's copy knows the bio's kind
		} else {
			p = t.drawBio(b, opID, "")
		}
		t.flow(FlowPoint{tr, inside(p.start, start, end)}, FlowPoint{p.track, inside(p.start, p.start, p.end)})
	}
}

// Writeback draws a writeback's bios and, for a flusher's, its worker slice.
func (t *Timeline) Writeback(w *record.Writeback) {
	if len(w.Bios) == 0 {
		return
	}
	var wp wbPlaced
	var wStart, wEnd uint64
	for i := range w.Bios {
		b := &w.Bios[i]
		var p placed
		if w.OpID != 0 {
			p = t.placeBio(b)
			if old, unused := t.syncBios.put(bioKey{b.Dev, b.Sector, b.IssueNs}, syncBio{p, *b, w.OpID, string(w.Reason)}); unused {
				t.stats.Forgotten++ // its call's record did not come in time: draw what the writeback said
				t.drawBioAt(old.placed, &old.bio, old.opID, old.reason)
			}
		} else {
			p = t.drawBio(b, 0, string(w.Reason))
		}
		if i == 0 {
			wp.bio = p
			wStart, wEnd = p.start, p.end
		}
		wStart, wEnd = min(wStart, p.start), max(wEnd, p.end)
	}
	if w.OpID == 0 {
		tr := t.place(t.worker(w.WorkerTid, w.Worker), wStart, wEnd)
		t.stats.WritebackSlices++
		t.slice(&Slice{Track: tr, StartNs: wStart, DurNs: wEnd - wStart, Name: "writeback (" + string(w.Reason) + ")", Cat: catWriteback,
			Args: writebackArgs(w)})
		wp.worker = placed{tr, wStart, wEnd}
	}
	var complete uint64
	for _, b := range w.Bios {
		complete = max(complete, b.CompleteNs)
	}
	t.wbBios.put(bioKey{w.Bios[0].Dev, w.Bios[0].Sector, complete}, wp)
}

// Persisted draws the span from dirtying to disk of one write's pages and
// the arrow write → writeback worker → bio → span end.
func (t *Timeline) Persisted(p *record.Persisted) {
	if p.DirtiedNs == 0 || p.PersistedNs == 0 || p.PersistedNs < p.DirtiedNs {
		t.stats.Unplaced++ // removed before writeback: no times to draw
		return
	}
	tr := t.place(t.dirtyLanes(p.Pid), p.DirtiedNs, p.PersistedNs)
	t.stats.DirtySpans++
	t.slice(&Slice{Track: tr, StartNs: p.DirtiedNs, DurNs: p.PersistedNs - p.DirtiedNs, Name: dirtyName(p), Cat: catDirty,
		Args: persistedArgs(p)})
	writer := t.thread(p.Pid, uint32(p.OpID>>32), "")
	points := []FlowPoint{{writer, p.DirtiedNs}}
	if wp, ok := t.wbBios.get(bioKey{p.Dev, p.Sector, p.PersistedNs}); ok {
		if w := wp.worker; w.track != nil {
			points = append(points, FlowPoint{w.track, inside(w.start, w.start, w.end)})
		}
		b := wp.bio
		points = append(points, FlowPoint{b.track, inside(b.start+1, b.start, b.end)})
	}
	points = append(points, FlowPoint{tr, inside(p.PersistedNs, p.DirtiedNs, p.PersistedNs)})
	t.flow(points...)
}

// Summary passes the trace's summary to the outputs.
func (t *Timeline) Summary(s *record.Summary) {
	for _, o := range t.outs {
		o.Summary(s)
	}
}

// Close draws the bios still waiting for their call's record (it never
// came: lost, or the trace ended first) and finishes every output.
func (t *Timeline) Close() error {
	for _, sb := range t.syncBios.drain() {
		t.stats.Forgotten++
		t.drawBioAt(sb.placed, &sb.bio, sb.opID, sb.reason)
	}
	var errs []error
	for _, o := range t.outs {
		errs = append(errs, o.Close(t.stats))
	}
	return errors.Join(errs...)
}

// Stats returns what the layout drew so far.
func (t *Timeline) Stats() Stats { return t.stats }
