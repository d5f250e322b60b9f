package livelag

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A call record's lag is counted from the latest of its return and its
// bios' completions (seen or inferred); other records and non-JSON lines
// are not calls; a line longer than the reader's buffer is read whole.
func TestRead(t *testing.T) {
	now := MonotonicNs()
	s := uint64(time.Second)
	long := strings.Repeat("x", 3<<20)
	in := strings.Join([]string{
		// due at its last bio's completion, now - 0.5 s
		fmt.Sprintf(`{"type":"syscall","time_ns":%d,"duration_ns":%d,"bios":[{"complete_ns":%d},{"complete_ns":0,"completed_before_ns":%d}]}`, now-3*s, s, now-s, now-s/2),
		// due at its return, now - 2 s
		fmt.Sprintf(`{"type":"syscall","time_ns":%d,"duration_ns":%d,"path":%q}`, now-3*s, s, long),
		fmt.Sprintf(`{"type":"persisted","time_ns":%d}`, now-10*s),
		"iopath: not a record",
	}, "\n") + "\n"
	// Every line read at now: the lags are exact, however slow the machine.
	r, err := readAt(strings.NewReader(in), func() uint64 { return now })
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines != 4 || len(r.Lags) != 2 {
		t.Fatalf("lines %d, lags %v", r.Lines, r.Lags)
	}
	if r.Lags[0] != s/2 || r.Lags[1] != 2*s {
		t.Errorf("lags %v, want [%d %d]", r.Lags, s/2, 2*s)
	}
	// The real clock stamps after now.
	if r, err := Read(strings.NewReader(in)); err != nil || len(r.Lags) != 2 || r.Lags[0] < s/2 || r.Lags[1] < 2*s {
		t.Errorf("Read: lags %v, %v; want at least [%d %d]", r.Lags, err, s/2, 2*s)
	}
	if r.Quantile(0.5) != r.Lags[1] || r.Quantile(1) != r.Lags[1] || r.Quantile(0) != r.Lags[0] {
		t.Errorf("quantiles of %v: %d %d %d", r.Lags, r.Quantile(0), r.Quantile(0.5), r.Quantile(1))
	}
	if _, err := Read(strings.NewReader("{\"type\":\n")); err == nil {
		t.Error("bad JSON line: no error")
	}
}

func TestRSSWindows(t *testing.T) {
	s := RSS{Every: time.Second, Samples: []uint64{9, 1, 2, 3, 4, 5}}
	if s.MaxIn(0, 0) != 9 || s.MaxIn(1*time.Second, 3*time.Second) != 2 || s.MaxLast(2*time.Second) != 5 ||
		s.MaxIn(10*time.Second, 20*time.Second) != 0 || s.MaxLast(time.Minute) != 9 {
		t.Errorf("windows of %v", s.Samples)
	}
}
