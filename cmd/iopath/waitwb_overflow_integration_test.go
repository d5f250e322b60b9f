package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"golang.org/x/sys/unix"
)

// kernelDirty is cachestat(2)'s dirty plus under-writeback pages of path.
func kernelDirty(t *testing.T, path string) uint64 {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var cs unix.Cachestat_t
	if err := unix.Cachestat(uint(fd), &unix.CachestatRange{}, &cs, 0); err != nil {
		t.Fatalf("cachestat(2): %v", err)
	}
	return cs.Dirty + cs.Writeback
}

// overflowSetup needs root and cachestat(2) and sets periodic writeback to
// expire centisecs (restored after the test).
func overflowSetup(t *testing.T, expire string) string {
	t.Helper()
	needRoot(t)
	dir := diskDir(t)
	if !haveCachestat(dir) {
		t.Skip("no cachestat(2) (Linux 6.5+): no kernel count to wait on")
	}
	testutil.SetSysctl(t, "vm.dirty_expire_centisecs", expire)
	testutil.SetSysctl(t, "vm.dirty_writeback_centisecs", expire)
	return dir
}

// waitOnKernelCount traces cmd with the dirty-page map overflowed and a 30 s
// --wait-writeback (expire 1 s: overflowSetup(t, "100")), and checks that
// iopath waited on the kernel's count of file (what: which file, for the
// messages) and ended with file written: by iopath's own words, not the
// clock (a wall-clock bound failed at 11.1 s in a busy VM, where a trace's
// start alone takes 10-30 s). Either the wait saw the count reach 0 ("all
// dirty pages reached the disk"), or the kernel had written the pages
// before it began ("no dirty page left"); the limit ends it with "pages
// still dirty after 30s".
func waitOnKernelCount(t *testing.T, file, what string, cmd ...string) *traced {
	t.Helper()
	tr := traceCmd(t, append([]string{"--max-dirty-pages", "10", "--wait-writeback", "30s", "--"}, cmd...)...)
	t.Logf("stderr:\n%s", tr.stderr)
	if !waitedOnKernel(tr.stderr, "counted by the kernel: cachestat of 1 written file)") {
		t.Errorf("did not wait on %s's kernel count until it was written", what)
	}
	if n := kernelDirty(t, file); n != 0 {
		t.Errorf("after the wait %s still has %d dirty pages", what, n)
	}
	return tr
}

// Issue 10 item 4, pages dirtied through a shared mapping (write faults,
// no write call): with the tracking overflowed and writeback held off
// (expire 30 s), --wait-writeback 2s must wait on the mapped file's own
// count, not say that no dirty page is left while the kernel has them.
func TestWaitWritebackOverflowedMmap(t *testing.T) {
	needPython(t) // the VMs have none: the host run covers it
	dir := overflowSetup(t, "3000")
	f := filepath.Join(dir, "mapped")
	defer os.Remove(f)
	prog := fmt.Sprintf(`import mmap
f = open(%q, "w+b")
f.truncate(16 << 20)
m = mmap.mmap(f.fileno(), 16 << 20)
for i in range(0, 16 << 20, 4096):
    m[i] = 1
m.close()
`, f)
	tr := traceCmd(t, "--max-dirty-pages", "10", "--wait-writeback", "2s", "--", "python3", "-c", prog)
	t.Logf("stderr:\n%s", tr.stderr)
	left := kernelDirty(t, f)
	if left == 0 {
		t.Skip("the kernel wrote the mapped pages within 2 s despite expire 30 s")
	}
	if strings.Contains(tr.stderr, "no dirty page left") || strings.Contains(tr.stderr, "all dirty pages reached the disk") {
		t.Errorf("said the pages were written while the kernel has %d dirty", left)
	}
	if !strings.Contains(tr.stderr, "pages still dirty after 2s") || !strings.Contains(tr.stderr, "counted by the kernel: cachestat of 1 written file") {
		t.Errorf("does not report the mapped file's kernel count")
	}
}

// Issue 10 item 4, a file renamed (into another directory) after the
// writes: --wait-writeback follows it by its file handle and ends when the
// kernel wrote it, not after the whole limit on a name that is gone.
func TestWaitWritebackOverflowedRename(t *testing.T) {
	dir := overflowSetup(t, "100")
	for _, d := range []string{"d1", "d2"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	from, to := filepath.Join(dir, "d1", "x"), filepath.Join(dir, "d2", "y")
	defer os.Remove(to)
	waitOnKernelCount(t, to, "the renamed file", "sh", "-c",
		"dd if=/dev/zero of="+from+" bs=1M count=64 status=none && mv "+from+" "+to)
}

// Issue 10 item 4, a file deleted after the writes: its pages were dropped,
// so there is nothing to wait for and iopath says why.
func TestWaitWritebackOverflowedDelete(t *testing.T) {
	dir := overflowSetup(t, "3000")
	f := filepath.Join(dir, "deleted")
	tr := traceCmd(t, "--max-dirty-pages", "10", "--wait-writeback", "20s", "--", "sh", "-c",
		"dd if=/dev/zero of="+f+" bs=1M count=64 status=none && rm "+f)
	t.Logf("stderr:\n%s", tr.stderr)
	if !waitedOnKernel(tr.stderr, "1 deleted since (their pages were dropped))") {
		t.Errorf("did not count the deleted file's pages as dropped")
	}
	// The summary agrees: no page pending (the breaker saw the dropped
	// pages counted as "not yet on disk"), the dropped ones said.
	if tr.summary.DirtyPending != 0 || tr.summary.Diagnostics["dirty_pages_dropped_unseen"] == 0 {
		t.Errorf("summary: dirty_pages_pending %d, dirty_pages_dropped_unseen %d; want 0 pending, the dropped pages counted",
			tr.summary.DirtyPending, tr.summary.Diagnostics["dirty_pages_dropped_unseen"])
	}
}

// waitedOnKernel says whether --wait-writeback's messages (stderr) say that
// it waited on the kernel's count (note: the end of the overflow note) and
// ended with no dirty page: either the count reached 0 while it waited,
// or there was none left when the wait began. Not "pages still dirty
// after" the limit, nor interrupted.
func waitedOnKernel(stderr, note string) bool {
	for _, l := range strings.Split(stderr, "\n") {
		ended := strings.Contains(l, "iopath: all dirty pages reached the disk after ") ||
			strings.Contains(l, "iopath: --wait-writeback: the kernel reports no dirty page left in the files the traced command wrote")
		if ended && strings.HasSuffix(l, note) {
			return !strings.Contains(stderr, "still dirty")
		}
	}
	return false
}

// Issue 10 item 4, cp (copy_file_range): the dirtied pages are the copy's
// output's, the file --wait-writeback must ask the kernel about.
func TestWaitWritebackOverflowedCopy(t *testing.T) {
	dir := overflowSetup(t, "100")
	src := testutil.ColdFile(t, dir, "copy-src", 64<<20)
	dst := filepath.Join(dir, "copy-dst")
	defer os.Remove(dst)
	waitOnKernelCount(t, dst, "the copy's output", "cp", src, dst)
}

// Issue 10 item 4, a path deeper than a record keeps (8 names: the record
// says ".../..."): found through the writer's open fd.
func TestWaitWritebackOverflowedDeepPath(t *testing.T) {
	dir := overflowSetup(t, "100")
	deep := filepath.Join(dir, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Join(dir, "a"))
	f := filepath.Join(deep, "x")
	tr := waitOnKernelCount(t, f, "the deep file", "dd", "if=/dev/zero", "of="+f, "bs=1M", "count=64", "status=none")
	cut := false
	for _, c := range tr.forIno(inoOf(t, f)) {
		cut = cut || strings.HasPrefix(c.Path, "...")
	}
	if !cut {
		t.Errorf("the records name the whole path: not a path too deep")
	}
}

// Issue 10 item 4: after the overflow, the rows of the file dd wrote and of
// dd itself say their disk bytes written are partial (the flusher wrote all
// 64 MiB: --wait-writeback ended on the kernel's count); without the
// overflow neither is marked. Both rows count the same bytes.
func TestOverflowDiskBytesMarked(t *testing.T) {
	dir := overflowSetup(t, "100")
	for _, c := range []struct {
		args    []string
		partial bool
	}{
		{[]string{"--max-dirty-pages", "10"}, true},
		{nil, false},
	} {
		f := filepath.Join(dir, "marked")
		args := append(slices.Clone(c.args), "--wait-writeback", "30s", "--", "dd", "if=/dev/zero", "of="+f, "bs=1M", "count=64", "status=none")
		tr := traceCmd(t, args...)
		ino := inoOf(t, f)
		var file, pid *bool
		var fileBytes, pidBytes uint64
		for i := range tr.summary.Files {
			if r := &tr.summary.Files[i]; r.Ino == ino {
				file, fileBytes = &r.DiskBytesWritePartial, r.DiskBytesWrite
			}
		}
		for i := range tr.summary.Pids {
			if r := &tr.summary.Pids[i]; r.Comm == "dd" {
				pid, pidBytes = &r.DiskBytesWritePartial, r.DiskBytesWrite
			}
		}
		t.Logf("%v: file row %d bytes written, dd's row %d; stderr:\n%s", c.args, fileBytes, pidBytes, tr.stderr)
		if file == nil || pid == nil {
			t.Fatalf("%v: no summary row of the file or of dd", c.args)
		}
		if *file != c.partial || *pid != c.partial {
			t.Errorf("%v: disk_bytes_written_partial file %v, dd %v; want %v", c.args, *file, *pid, c.partial)
		}
		// dd is the file's one writer: its row and the file's count the
		// same bytes (the file's once counted whole bios: 16.0 MiB
		// against dd's 10.0 MiB).
		if fileBytes != pidBytes {
			t.Errorf("%v: file row %d bytes written, dd's row %d: want the same", c.args, fileBytes, pidBytes)
		}
		if !c.partial && (fileBytes < 64<<20 || pidBytes < 64<<20) {
			t.Errorf("without overflow: file row %d, dd's row %d bytes written; want 64 MiB each", fileBytes, pidBytes)
		}
		_ = os.Remove(f)
	}
}
