package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
