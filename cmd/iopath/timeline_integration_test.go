package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/timeline"
	"github.com/iopath/iopath/timeline/headless"
)

func readChrome(t *testing.T, path string) *timeline.Trace {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr timeline.Trace
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("%s is not a JSON trace: %v", path, err)
	}
	return &tr
}

// artifacts is $IOPATH_ARTIFACTS (kept) or a temp dir.
func artifacts(t *testing.T) string {
	d, err := headless.ArtifactDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Must be true 1 on the real kernel: the timeline of `demo read-1byte` has
// the cold read, its readahead bio on the device track, and the arrow.
func TestDemoReadTimeline(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	dir := artifacts(t)
	tl := filepath.Join(dir, "read-1byte.json")
	_, stderr, code := runIopath(t, t.TempDir(), "demo", "read-1byte", "--timeline", tl)
	if code != 0 {
		t.Fatalf("demo read-1byte: exit %d: %s", code, stderr)
	}
	tr := readChrome(t, tl)
	type span struct {
		pid, tid   uint32
		start, end float64
	}
	var cold *span
	bios := map[string]span{} // by op_id
	for _, e := range tr.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		if e.Cat == "syscall" && e.Name == "read" && e.Args["pages_missed"] == 1.0 && e.Args["returned_bytes"] == 1.0 && cold == nil {
			cold = &span{e.Pid, e.Tid, e.Ts, e.Ts + e.DurUs()}
		}
		if e.Cat == "bio" && strings.Contains(e.Name, "A") {
			bios[e.Args["op_id"].(string)] = span{e.Pid, e.Tid, e.Ts, e.Ts + e.DurUs()}
		}
	}
	if cold == nil || len(bios) == 0 {
		t.Fatalf("no cold 1-byte read (%v) or no readahead bio (%d) in %s", cold, len(bios), tl)
	}
	// An arrow from inside the cold read to inside a readahead bio.
	points := map[uint64][]span{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "s" || e.Ph == "f" {
			points[e.ID] = append(points[e.ID], span{e.Pid, e.Tid, e.Ts, e.Ts})
		}
	}
	in := func(p, s span) bool {
		return p.pid == s.pid && p.tid == s.tid && s.start <= p.start && p.start <= s.end
	}
	found := false
	for _, ps := range points {
		for _, b := range bios {
			if len(ps) == 2 && in(ps[0], *cold) && in(ps[1], b) {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no arrow from the cold read to its readahead bio in %s", tl)
	}
}

// Must be true 2: the report of `demo seq-vs-rand` loads in headless
// Chromium without console errors and holds every bio the trace saw.
func TestDemoSeqRandReport(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	if skip, err := headless.Check(); err != nil {
		t.Fatal(err)
	} else if skip != "" {
		t.Skip(skip)
	}
	dir := artifacts(t)
	rep, tl := filepath.Join(dir, "seq-vs-rand.html"), filepath.Join(dir, "seq-vs-rand.json")
	stdout, stderr, code := runIopath(t, t.TempDir(), "demo", "seq-vs-rand", "--json", "--report", rep, "--timeline", tl)
	if code != 0 {
		t.Fatalf("demo seq-vs-rand: exit %d: %s", code, stderr)
	}
	// The demo's own records of its two files: their calls and bios.
	fileOps := map[string]bool{}
	fileBios := 0
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c record.Syscall
		if strings.HasPrefix(sc.Text(), `{"type":"syscall"`) && json.Unmarshal(sc.Bytes(), &c) == nil {
			fileOps[strconv.FormatUint(c.OpID, 10)] = true
			fileBios += len(c.Bios)
		}
	}
	if len(fileOps) < 8192 || fileBios == 0 {
		t.Fatalf("demo printed %d calls with %d bios: want its 8192 reads", len(fileOps), fileBios)
	}
	// Bios in the trace: those of the files' calls, and any others (other
	// files the workload read, writeback).
	ofFiles, others := 0, 0
	for _, e := range readChrome(t, tl).TraceEvents {
		if e.Ph == "X" && e.Cat == "bio" {
			if id, _ := e.Args["op_id"].(string); fileOps[id] {
				ofFiles++
			} else {
				others++
			}
		}
	}
	if ofFiles != fileBios {
		t.Errorf("trace has %d bio slices of the demo's calls, its records %d bios", ofFiles, fileBios)
	}
	shot := filepath.Join(dir, "seq-vs-rand.png")
	page, err := headless.Load(rep, shot, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report %s (screenshot %s): %d bios of the demo's files, %d others", rep, shot, ofFiles, others)
	if len(page.Console) > 0 || page.Attr("data-errors") != "" || page.Attr("data-rendered") != "1" {
		t.Errorf("page: console %q, errors %q, rendered %q", page.Console, page.Attr("data-errors"), page.Attr("data-rendered"))
	}
	if got := page.Attr("data-bio-slices"); got != strconv.Itoa(ofFiles+others) {
		t.Errorf("page holds %s bio slices, want %d (%d of the demo's calls + %d others)", got, ofFiles+others, ofFiles, others)
	}
}
