package main

import (
	"github.com/iopath/iopath/internal/testutil"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Issue 10 item 4: with the dirty-page map overflowed (--max-dirty-pages 10
// against 64 MiB of writes) --wait-writeback waits on the kernel's count of
// the written file, ends once the kernel has written it (expire shortened
// to 1 s, so well before the 50 s limit) and says tracking overflowed.
func TestWaitWritebackOverflowed(t *testing.T) {
	needRoot(t)
	testutil.SetSysctl(t, "vm.dirty_expire_centisecs", "100")
	testutil.SetSysctl(t, "vm.dirty_writeback_centisecs", "100")
	dir := diskDir(t)
	f := filepath.Join(dir, "overflow")
	if !haveCachestat(dir) {
		// Before Linux 6.5 there is no kernel count to wait on: iopath
		// waits the whole limit on its own count and says why.
		tr := traceCmd(t, "--max-dirty-pages", "10", "--wait-writeback", "3s", "--",
			"dd", "if=/dev/zero", "of="+f, "bs=1M", "count=64")
		if tr.code != 0 || !strings.Contains(tr.stderr, "dirty-page tracking overflowed") ||
			!strings.Contains(tr.stderr, "the kernel's count of a written file is unavailable") {
			t.Errorf("without cachestat(2): exit %d, stderr:\n%s", tr.code, tr.stderr)
		}
		return
	}
	start := time.Now()
	tr := traceCmd(t, "--max-dirty-pages", "10", "--wait-writeback", "50s", "--",
		"dd", "if=/dev/zero", "of="+f, "bs=1M", "count=64")
	took := time.Since(start)
	t.Logf("took %s; stderr:\n%s", took, tr.stderr)
	if tr.code != 0 {
		t.Fatalf("exit %d", tr.code)
	}
	if !strings.Contains(tr.stderr, "dirty-page tracking overflowed") || !strings.Contains(tr.stderr, "counted by the kernel") {
		t.Errorf("stderr does not say tracking overflowed and whose count it waited on")
	}
	// The kernel may have written everything before the first look (dd is
	// slow under TCG and the expire is 1 s: seen on Debian 6.12): iopath then
	// says no dirty page is left instead of waiting.
	if !strings.Contains(tr.stderr, "all dirty pages reached the disk") && !strings.Contains(tr.stderr, "the kernel reports no dirty page left") {
		t.Errorf("stderr does not say the pages reached the disk")
	}
	if took > 30*time.Second {
		t.Errorf("took %s: waited (nearly) the whole 50 s instead of the kernel's writeback", took)
	}
	// When iopath said so, the kernel had written everything.
	if n := kernelDirty(t, f); n != 0 {
		t.Errorf("after the wait the kernel still has %d dirty or under-writeback pages", n)
	}
	if ev := tr.summary.MapEvictions["dirty_pages"]; ev == 0 {
		t.Errorf("map_evictions.dirty_pages = 0 with --max-dirty-pages 10")
	}
	_ = os.Remove(f)
}

// haveCachestat says whether the kernel has cachestat(2) (Linux 6.5+).
func haveCachestat(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var cs unix.Cachestat_t
	return unix.Cachestat(uint(fd), &unix.CachestatRange{}, &cs, 0) != unix.ENOSYS
}

// A write to tmpfs is reported as a memory-only write: no page-cache hit
// in its record (issue 10 item 10).
func TestTmpfsWriteMemoryOnly(t *testing.T) {
	needRoot(t)
	f := filepath.Join("/dev/shm", "iopath-test-memonly")
	defer os.Remove(f)
	tr := traceCmd(t, "--", "sh", "-c", "printf 12345678 > "+f)
	calls := tr.forIno(inoOf(t, f))
	if len(calls) != 1 {
		t.Fatalf("tmpfs write records %+v", calls)
	}
	c := calls[0]
	if !c.MemoryOnly || c.Cache.PagesHit != 0 || c.Cache.PagesMissed != 0 || c.Cache.PagesRequested != 1 {
		t.Errorf("tmpfs write: memory_only %v, cache %+v; want memory_only, 1 page requested, 0 hit, 0 missed", c.MemoryOnly, c.Cache)
	}
}
