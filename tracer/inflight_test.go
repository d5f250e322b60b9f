package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/tracer/engine/enginetest"
	"golang.org/x/sys/unix"
)

// diskInflight reads reads + writes from M:m/inflight, and only when the
// disk accounts its requests (queue/iostats 1): without that the kernel's
// count stays 0 and would complete every request iopath holds.
func TestDiskInflight(t *testing.T) {
	root := t.TempDir()
	const kdev = 254<<20 | 16 // 254:16
	disk := filepath.Join(root, "254:16")
	if err := os.MkdirAll(filepath.Join(disk, "queue"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(disk, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		iostats, inflight string // "-": no such file
		n                 uint64
		ok                bool
	}{
		{"1\n", "       3       13\n", 16, true},
		{"1\n", "0 0\n", 0, true},
		{"0\n", "0 0\n", 0, false},      // not accounted: the count says nothing
		{"-", "0 0\n", 0, false},        // no queue (a partition's directory)
		{"1\n", "-", 0, false},          // no count
		{"1\n", "7\n", 0, false},        // not reads and writes
		{"1\n", "1 x\n", 0, false},      // not numbers
		{"1\n", "-1 2\n", 0, false},     // not counts
		{"1\n", "1 2 3\n", 0, false},    // not two fields
		{"2\n", "  1   2\n", 0, false},  // iostats other than 1
		{" 1 \n", "  1   2\n", 3, true}, // spaces around
	} {
		for name, v := range map[string]string{"queue/iostats": c.iostats, "inflight": c.inflight} {
			os.Remove(filepath.Join(disk, name))
			if v != "-" {
				write(name, v)
			}
		}
		if n, ok := diskInflight(root, kdev); n != c.n || ok != c.ok {
			t.Errorf("iostats %q, inflight %q: %d, %v; want %d, %v", c.iostats, c.inflight, n, ok, c.n, c.ok)
		}
	}
	if _, ok := diskInflight(root, 254<<20|17); ok {
		t.Errorf("a disk with no directory has a count")
	}
}

// The real sysfs: the disk of this test's working directory, when it is a
// whole disk that accounts its requests, gives a count.
func TestDiskInflightSysfs(t *testing.T) {
	var st unix.Stat_t
	if err := unix.Stat(".", &st); err != nil {
		t.Fatal(err)
	}
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	dir := filepath.Join(sysDevBlock, fmt.Sprintf("%d:%d", major, minor))
	if b, err := os.ReadFile(filepath.Join(dir, "queue", "iostats")); err != nil || string(b) != "1\n" {
		t.Skipf("%s: not a whole disk accounting its requests (queue/iostats: %q, %v)", dir, b, err)
	}
	if _, ok := diskInflight(sysDevBlock, major<<20|minor); !ok {
		t.Errorf("%s: no count of requests in flight", dir)
	}
}

// The end of a trace reads a busy disk's count of requests in flight more
// than once: three requests held (their completions unseen) on a disk
// whose count is 5 at the first read (other processes' requests), then 2,
// then 0. Each read is a bound: after the second the oldest held request
// has ended, after the third all three. A single read (the old end)
// completed none. The reads stop once nothing is held.
func TestBoundHeldReadsAgain(t *testing.T) {
	s := enginetest.NewStream()
	for i, ts := range []uint64{1000, 2000, 3000} {
		id := uint64(i+1)<<32 | 1
		s.E.HandleIssue(enginetest.Issue(0xa0+uint64(i), ts, enginetest.FlRead,
			enginetest.Own{Op: id, Bio: 0xb0 + uint64(i), Sector: uint64(i) * 8, Bytes: 4096, Queue: ts - 5}))
		o := enginetest.Op(id, bpf.IopathOpSysSYS_PREAD64, uint64(i)*4096, 4096, 4096, ts-10, ts+100)
		o.BiosQueued = 1
		s.E.HandleOp(o)
	}
	counts := []uint64{5, 2, 0, 0, 0}
	var reads, drains int
	clock := uint64(10_000)
	now := func() uint64 { clock += 100; return clock }
	inflight := func(kdev uint32) (uint64, bool) {
		if kdev != enginetest.Dev {
			t.Errorf("count read for disk %x", kdev)
		}
		n := counts[reads]
		reads++
		return n, true
	}
	boundHeld(s.E, inflight, now, func() { drains++ }, 2, 0)
	if _, held := s.E.Pending(); held != 2 || reads != 2 {
		t.Fatalf("after 2 reads (counts 5, 2): %d requests held, want 2; %d reads", held, reads)
	}
	boundHeld(s.E, inflight, now, func() { drains++ }, 5, 0)
	if _, held := s.E.Pending(); held != 0 {
		t.Errorf("after the count 0: %d requests held", held)
	}
	if reads != 3 || drains != 3 {
		t.Errorf("%d reads, %d drains: want 3 each (none once nothing is held)", reads, drains)
	}
	if got := s.E.Counters().RequestsUnseenAtEnd; got != 3 {
		t.Errorf("requests unseen at end %d, want 3", got)
	}
}
