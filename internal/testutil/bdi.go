package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// BDIOf returns the sysfs directory of the bdi (backing device info: the
// per-device dirty-page accounting) of the filesystem holding path: the
// whole disk's for a partition.
func BDIOf(t testing.TB, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		sys = filepath.Join(sys, "..")
	}
	b, err := os.ReadFile(filepath.Join(sys, "dev"))
	if err != nil {
		t.Skipf("%s is not on a block device: %v", path, err)
	}
	return filepath.Join("/sys/class/bdi", strings.TrimSpace(string(b)))
}

// ThrottleBDI makes every writer to bdi throttled in balance_dirty_pages as
// soon as it has dirtied more than maxBytes there: strict_limit=1 makes the
// bdi's own dirty count and limit decide (not the machine-wide ones, where
// other processes' pages and the disk's speed decide), and max_bytes caps
// the bdi's share of the dirty limit. A writer enters balance_dirty_pages
// every 32 dirtied pages (ratelimit_pages), and once the bdi's dirty pages
// reach its limit the kernel pauses the writer (pos_ratio 0: the longest
// pause, ≥ 1 jiffy) until writeback has cleaned them, however fast the
// device. Restored when the test ends. The strict_limit and max_bytes files
// exist since Linux 6.2; skips on older kernels.
func ThrottleBDI(t testing.TB, bdi string, maxBytes int64) {
	t.Helper()
	for _, f := range []string{"strict_limit", "max_bytes", "max_ratio_fine"} {
		if _, err := os.Stat(filepath.Join(bdi, f)); err != nil {
			t.Skipf("needs %s (Linux 6.2+) to throttle one device's writers: %v", filepath.Join(bdi, f), err)
		}
	}
	// max_bytes is stored as max_ratio_fine (a share of the dirty limit, in
	// millionths): restoring max_ratio_fine restores exactly what was there,
	// where writing the old max_bytes back would round.
	setBDI(t, bdi, "max_ratio_fine", "")
	setBDI(t, bdi, "strict_limit", "1")
	p := filepath.Join(bdi, "max_bytes")
	if err := os.WriteFile(p, []byte(fmt.Sprint(maxBytes)), 0o644); err != nil {
		t.Fatalf("setting %s=%d: %v", p, maxBytes, err)
	}
}

// setBDI writes value to a bdi attribute and restores the old value when the
// test ends; an empty value only saves and restores.
func setBDI(t testing.TB, bdi, name, value string) {
	t.Helper()
	p := filepath.Join(bdi, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.TrimSpace(string(b))
	t.Cleanup(func() {
		if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
			t.Errorf("restoring %s=%s: %v", p, old, err)
		}
		if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) != old {
			t.Errorf("%s not restored: %s, was %s", p, strings.TrimSpace(string(b)), old)
		}
	})
	if value == "" {
		return
	}
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		t.Fatalf("setting %s=%s: %v", p, value, err)
	}
}
