package timeline

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/iopath/iopath/record"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/timeline")

type ev = Event

// trace is a Trace with the tests' look-ups.
type trace struct{ Trace }

func chromeOf(t *testing.T, recs []any) []byte {
	out, _ := chromeAndStats(t, recs)
	return out
}

// chromeAndStats lays recs out into a Chrome trace.
func chromeAndStats(t *testing.T, recs []any) ([]byte, Stats) {
	t.Helper()
	var b bytes.Buffer
	tl := New(NewChrome(&b))
	for _, r := range recs {
		Feed(tl, r)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), tl.Stats()
}

// golden compares got with testdata/timeline/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "timeline", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./timeline -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./timeline -run %s -update rewrites it after review):\n%s", path, t.Name(), got)
	}
}

// checkTrace parses a trace and checks the rules every trace keeps: slices
// on a track nest, every flow starts with one "s", ends with one "f"
// (bp "e"), runs forward in time, and each of its points lies inside a
// slice of its track; every track and process is named.
func checkTrace(t *testing.T, data []byte) *trace {
	t.Helper()
	var tr trace
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("not a JSON trace: %v", err)
	}
	type tk struct{ pid, tid uint32 }
	slices := map[tk][]ev{}
	threadNamed, procNamed := map[tk]bool{}, map[uint32]bool{}
	flows := map[uint64][]ev{}
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "X":
			if e.Dur == nil || *e.Dur < 0 || e.Name == "" || e.Cat == "" {
				t.Errorf("bad slice %+v", e)
			}
			slices[tk{e.Pid, e.Tid}] = append(slices[tk{e.Pid, e.Tid}], e)
		case "M":
			switch e.Name {
			case "thread_name":
				threadNamed[tk{e.Pid, e.Tid}] = true
			case "process_name":
				procNamed[e.Pid] = true
			}
		case "s", "t", "f":
			flows[e.ID] = append(flows[e.ID], e)
		default:
			t.Errorf("unexpected phase %q", e.Ph)
		}
	}
	for k, ss := range slices {
		if !threadNamed[k] || !procNamed[k.pid] {
			t.Errorf("track %v has no thread_name or process_name", k)
		}
		for i, a := range ss {
			for _, b := range ss[i+1:] {
				// In ns, as viewers read them (µs × 1000, rounded).
				as, ae, bs, be := ns(a.Ts), ns(a.Ts)+ns(a.DurUs()), ns(b.Ts), ns(b.Ts)+ns(b.DurUs())
				disjoint := ae <= bs || be <= as
				aInB := bs <= as && ae <= be
				bInA := as <= bs && be <= ae
				if !disjoint && !aInB && !bInA {
					t.Errorf("slices %q [%v+%v] and %q [%v+%v] on track %v overlap without nesting", a.Name, a.Ts, a.DurUs(), b.Name, b.Ts, b.DurUs(), k)
				}
			}
		}
	}
	for id, fs := range flows {
		if id == 0 || len(fs) < 2 || fs[0].Ph != "s" || fs[len(fs)-1].Ph != "f" || fs[len(fs)-1].Bp != "e" {
			t.Errorf("flow %d is not s, t…, f(bp e): %+v", id, fs)
		}
		for i, p := range fs {
			if i > 0 && (p.Ph == "s" || fs[i-1].Ph == "f" || p.Ts < fs[i-1].Ts) {
				t.Errorf("flow %d goes back in time or repeats s/f: %+v", id, fs)
			}
			if p.Name != flowName || p.Cat != flowName {
				t.Errorf("flow %d point named %q/%q", id, p.Name, p.Cat)
			}
			bound := false
			for _, s := range slices[tk{p.Pid, p.Tid}] {
				if ns(s.Ts) <= ns(p.Ts) && ns(p.Ts) <= ns(s.Ts)+ns(s.DurUs()) {
					bound = true
				}
			}
			if !bound {
				t.Errorf("flow %d point %s at %v on %d/%d is inside no slice", id, p.Ph, p.Ts, p.Pid, p.Tid)
			}
		}
	}
	return &tr
}

// find returns the slices with category cat (and name, if not "").
func (tr *trace) find(cat, name string) []ev {
	var out []ev
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && e.Cat == cat && (name == "" || e.Name == name) {
			out = append(out, e)
		}
	}
	return out
}

// flowsBetween counts flows with one point inside a and a later one inside b.
func (tr *trace) flowsBetween(a, b ev) int {
	in := func(p, s ev) bool {
		return p.Pid == s.Pid && p.Tid == s.Tid && ns(s.Ts) <= ns(p.Ts) && ns(p.Ts) <= ns(s.Ts)+ns(s.DurUs())
	}
	byID := map[uint64][]ev{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "s" || e.Ph == "t" || e.Ph == "f" {
			byID[e.ID] = append(byID[e.ID], e)
		}
	}
	n := 0
	for _, ps := range byID {
		for i := range ps {
			for j := i + 1; j < len(ps); j++ {
				if in(ps[i], a) && in(ps[j], b) && ps[i].Pid == a.Pid {
					n++
				}
			}
		}
	}
	return n
}

func one(t *testing.T, tr *trace, cat, name string) ev {
	t.Helper()
	got := tr.find(cat, name)
	if len(got) != 1 {
		t.Fatalf("want 1 %s slice %q, got %d", cat, name, len(got))
	}
	return got[0]
}

// ns is a trace time (µs) in ns, as viewers read it.
func ns(us float64) int64 { return int64(math.Round(us * 1000)) }

// usOf is a record's ns time in the trace's µs.
func usOf(ns uint64) float64 { return float64(ns) / 1000 }

func sameUs(a float64, n uint64) bool { return ns(a) == int64(n) }

func TestChromeRead1Byte(t *testing.T) {
	recs := read1Byte()
	out := chromeOf(t, recs)
	golden(t, "read-1byte.json", out)
	checkRead1Byte(t, checkTrace(t, out), recs[0].(*record.Syscall))
}

// checkRead1Byte checks the timeline of a cold then warm 1-byte read: both
// read slices in the thread's track, in µs; the cold one's readahead bio on
// the device's track with its D2C nested; one arrow from the cold read to
// the bio, none from the warm one.
func checkRead1Byte(t *testing.T, tr *trace, cold *record.Syscall) {
	t.Helper()
	reads := tr.find(catSyscall, "read")
	if len(reads) != 2 {
		t.Fatalf("want the cold and the warm read, got %d read slices", len(reads))
	}
	r := reads[0]
	if !sameUs(r.Ts, cold.TimeNs) || !sameUs(r.DurUs(), cold.DurationNs) || r.Pid != cold.Pid || r.Tid != cold.Tid {
		t.Errorf("cold read slice at %v µs for %v µs on %d/%d; want %v, %v on %d/%d (ns → µs)",
			r.Ts, r.DurUs(), r.Pid, r.Tid, usOf(cold.TimeNs), usOf(cold.DurationNs), cold.Pid, cold.Tid)
	}
	if r.Args["pages_missed"] != 1.0 || r.Args["readahead"] != "sync 4 pages from page 0" || r.Args["returned_bytes"] != 1.0 {
		t.Errorf("cold read args %v: want pages_missed 1, the readahead window, returned_bytes 1", r.Args)
	}
	bio := one(t, tr, catBio, "RA 16 KiB")
	if bio.Args["sector"] != float64(cold.Bios[0].Sector) {
		t.Errorf("bio args %v: want the cold read's bio", bio.Args)
	}
	b := cold.Bios[0]
	if !sameUs(bio.Ts, b.QueueNs) || !sameUs(bio.DurUs(), b.CompleteNs-b.QueueNs) || bio.Pid < syntheticBase {
		t.Errorf("bio slice %+v: want queue→completion %v+%v µs on a device track", bio, usOf(b.QueueNs), usOf(b.CompleteNs-b.QueueNs))
	}
	d2c := one(t, tr, catD2C, "D2C")
	if d2c.Pid != bio.Pid || d2c.Tid != bio.Tid || !sameUs(d2c.Ts, b.IssueNs) || !sameUs(d2c.DurUs(), b.D2CNs) {
		t.Errorf("D2C slice %+v: want issue→completion nested in the bio on its track", d2c)
	}
	if n := tr.flowsBetween(r, bio); n != 1 {
		t.Errorf("%d arrows from the cold read to its readahead bio, want 1", n)
	}
	if n := tr.flowsBetween(reads[1], bio); n != 0 {
		t.Errorf("%d arrows from the warm read (a hit) to a bio, want 0", n)
	}
	if name := procName(tr, bio.Pid); name != "disk "+cold.Bios[0].Dev {
		t.Errorf("device process named %q", name)
	}
}

func procName(tr *trace, pid uint32) string {
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" && e.Pid == pid {
			return fmt.Sprint(e.Args["name"])
		}
	}
	return ""
}

func TestChromeWrite1ByteFsync(t *testing.T) {
	recs := write1ByteFsync()
	out := chromeOf(t, recs)
	golden(t, "write-1byte-fsync.json", out)
	checkWriteFsync(t, checkTrace(t, out), recs[2].(*record.Persisted), 3)
}

// checkWriteFsync checks the timeline of a 1-byte write then fsync: both
// slices; the fsync's bios (nbios) once each on the device's track with an
// arrow from the fsync to each; an arrow from the write's dirtied page to
// the data bio and on to the end of the dirty-pages span (p); no flusher
// slice.
func checkWriteFsync(t *testing.T, tr *trace, p *record.Persisted, nbios int) {
	t.Helper()
	write := one(t, tr, catSyscall, "write")
	fsync := one(t, tr, catSyscall, "fsync")
	bios := tr.find(catBio, "")
	if len(bios) != nbios {
		t.Fatalf("want the fsync's %d bios once each on the device track, got %d bio slices: %+v", nbios, len(bios), bios)
	}
	for _, b := range bios {
		if b.Pid < syntheticBase || procName(tr, b.Pid) != "disk "+p.Dev {
			t.Errorf("bio %q not on the device's track", b.Name)
		}
		if n := tr.flowsBetween(fsync, b); n != 1 {
			t.Errorf("%d arrows from fsync to bio %q, want 1", n, b.Name)
		}
	}
	data := one(t, tr, catBio, "WS 4 KiB data")
	if n := tr.flowsBetween(write, data); n != 1 {
		t.Errorf("%d arrows from the write's dirtied page to the data bio, want 1", n)
	}
	span := one(t, tr, catDirty, "1 dirty page → disk")
	if span.Pid != p.Pid || !sameUs(span.Ts, p.DirtiedNs) || !sameUs(span.Ts+span.DurUs(), p.PersistedNs) {
		t.Errorf("dirty span %+v: want dirtied→persisted in the writer's process", span)
	}
	if n := tr.flowsBetween(data, span); n != 1 {
		t.Errorf("%d arrows from the data bio to the persisted completion, want 1", n)
	}
	if n := len(tr.find(catWriteback, "")); n != 0 {
		t.Errorf("%d writeback-worker slices for an fsync's own writeback, want 0 (its slice is the fsync)", n)
	}
}

func TestChromePeriodicWriteback(t *testing.T) {
	out := chromeOf(t, write1BytePeriodic())
	tr := checkTrace(t, out)
	write := one(t, tr, catSyscall, "write")
	worker := one(t, tr, catWriteback, "writeback (periodic)")
	bio := one(t, tr, catBio, "W 4 KiB")
	span := one(t, tr, catDirty, "1 dirty page → disk")
	if procName(tr, worker.Pid) != "writeback" {
		t.Errorf("worker slice not in the writeback process")
	}
	for _, pair := range [][2]ev{{write, worker}, {worker, bio}, {bio, span}} {
		if n := tr.flowsBetween(pair[0], pair[1]); n != 1 {
			t.Errorf("%d arrows %q → %q, want 1", n, pair[0].Name, pair[1].Name)
		}
	}
}

// Bios that overlap in time go on separate lanes of their device; later
// ones reuse a free lane.
func TestChromeLanes(t *testing.T) {
	var recs []any
	for i := range 4 {
		start := uint64(base + i*100)
		end := start + 1000
		if i == 3 {
			start, end = base+5000, base+6000 // after all: back on the first lane
		}
		recs = append(recs, &record.Syscall{Type: "syscall", OpID: opID(uint32(10+i), 1), Pid: 10, Tid: uint32(10 + i), Comm: "t",
			Syscall: "read", TimeNs: start, DurationNs: end - start + 10, Dev: disk,
			Bios: []record.Bio{{Dev: disk, Sector: uint64(i) * 8, Bytes: 4096, Rwbs: "R", QueueNs: start + 1, IssueNs: start + 2, CompleteNs: end}}})
	}
	tr := checkTrace(t, chromeOf(t, recs))
	bios := tr.find(catBio, "")
	lanes := map[uint32]int{}
	for _, b := range bios {
		lanes[b.Tid]++
	}
	if len(lanes) != 3 || bios[3].Tid != bios[0].Tid {
		t.Errorf("bios on lanes %v (tids %d %d %d %d): want 3 lanes, the 4th bio on the first", lanes, bios[0].Tid, bios[1].Tid, bios[2].Tid, bios[3].Tid)
	}
}

// An fsync's writeback bio whose call record never comes (lost) is still
// drawn, at Close, and counted.
func TestChromeSyncBioWithoutCall(t *testing.T) {
	out, st := chromeAndStats(t, write1ByteFsync()[:3]) // write, writeback, persisted; no fsync record
	tr := checkTrace(t, out)
	bio := one(t, tr, catBio, "WS 4 KiB")
	if st.Forgotten != 1 || st.Bios != 1 {
		t.Errorf("stats %+v: want the bio drawn once and counted as forgotten", st)
	}
	if n := tr.flowsBetween(one(t, tr, catSyscall, "write"), bio); n != 1 {
		t.Errorf("%d arrows from the write to its writeback bio, want 1", n)
	}
}

// ts and dur survive a viewer's conversion back to ns (µs × 1000,
// truncated, as Perfetto's importer does): exact, never 1 ns early.
func TestMicrosTruncateToNs(t *testing.T) {
	for _, n := range []uint64{0, 1, 999, 1001, 5000000130001, 1297003519686, 1415390462954, 1<<50 + 12345, 1<<52 - 1} {
		for d := range uint64(2000) {
			x := n + d*7919
			if x >= 1<<52 {
				continue
			}
			if got := int64(us(x) * 1000); got != int64(x) {
				t.Fatalf("us(%d) = %v: × 1000 truncates to %d", x, us(x), got)
			}
		}
	}
}
