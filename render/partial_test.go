package render

import (
	"regexp"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
)

// Lost records (lost_events > 0) make every row's totals lower bounds: the
// text marks every process and file row PARTIAL and says why in one line
// (20,000 pwrites with --ringbuf-size 4096 showed write_calls 1282 with only
// an "INCOMPLETE ... events were lost" line above).
func TestSummaryTextPartialWhenRecordsLost(t *testing.T) {
	tot := record.Totals{Calls: 1282, WriteCalls: 1282, DirtiedPages: 1282, Faults: 3}
	s := &record.Summary{LostEvents: 18718,
		Pids:  []record.PidSummary{{Pid: 100, Comm: "writer", Totals: tot}},
		Files: []record.FileSummary{{Dev: "254:0", Ino: 42, Path: "/var/tmp/f", Totals: tot}}}
	s.MarkPartialLost()
	got := SummaryText(s, DefaultFileRows)
	if !strings.Contains(got, "PARTIAL: 18718 records lost (the ring buffer was full: raise --ringbuf-size): every row marked PARTIAL below (JSON: partial) is a lower bound") {
		t.Errorf("no line says the totals are lower bounds:\n%s", got)
	}
	for _, row := range []string{`(?m)^100 +writer +1282 .* PARTIAL$`, `(?m)^/var/tmp/f +254:0 +42 +1282 .* PARTIAL$`,
		`(?m)^100 +writer +3 +0 .* PARTIAL$`, `(?m)^/var/tmp/f +254:0 +42 +3 .* PARTIAL$`} {
		if !regexp.MustCompile(row).MatchString(got) {
			t.Errorf("no row matches %s:\n%s", row, got)
		}
	}
	if !s.Pids[0].Partial || !s.Files[0].Partial {
		t.Errorf("rows not marked partial in JSON: %+v", s)
	}
	s = &record.Summary{Pids: []record.PidSummary{{Pid: 100, Comm: "writer", Totals: tot}}}
	s.MarkPartialLost()
	if got := SummaryText(s, DefaultFileRows); strings.Contains(got, "PARTIAL") || s.Pids[0].Partial {
		t.Errorf("nothing lost, yet PARTIAL:\n%s", got)
	}
}

// The losses are said on stderr too, one line each, none without a loss.
func TestLossLines(t *testing.T) {
	if l := LossLines(&record.Summary{}); len(l) != 0 {
		t.Errorf("no loss: %q", l)
	}
	l := LossLines(&record.Summary{LostEvents: 180533, MissedRuns: map[string]uint64{"raw_sys_exit": 2, "tp_block_rq_complete": 1}})
	want := []string{
		"iopath: 180533 records lost (the ring buffer was full: raise --ringbuf-size): the summary's rows marked PARTIAL are lower bounds",
		"iopath: 3 BPF program runs skipped by the kernel (already running on that CPU): what they would have seen is not counted (missed_runs in the summary)",
	}
	if len(l) != 2 || l[0] != want[0] || l[1] != want[1] {
		t.Errorf("lines %q\nwant %q", l, want)
	}
}
