package testutil

import (
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OnBlockDevice reports whether path's filesystem is backed by a block
// device (ext4 on a disk or loop device; not tmpfs, ramfs or overlay).
func OnBlockDevice(path string) bool {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	return err == nil
}

// DiskDir returns a new directory on a disk-backed filesystem ($TMPDIR, or
// /var/tmp when $TMPDIR is in memory), removed when the test ends.
func DiskDir(t testing.TB) string {
	t.Helper()
	base := os.TempDir()
	if !OnBlockDevice(base) {
		base = "/var/tmp"
	}
	if !OnBlockDevice(base) {
		t.Skip("no disk-backed directory ($TMPDIR and /var/tmp are memory-backed)")
	}
	d, err := os.MkdirTemp(base, "iopath-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// ColdFile writes size random bytes to dir/name, syncs them and evicts the
// file from the page cache with posix_fadvise(DONTNEED) (never a global
// drop_caches, which would disturb other processes). It fails the test when
// mincore still finds a page cached. The file goes with dir.
func ColdFile(t testing.TB, dir, name string, size int64) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		rand.Read(buf)
		if _, err := f.Write(buf[:min(int64(len(buf)), size-off)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatalf("posix_fadvise(DONTNEED) on %s: %v", p, err)
	}
	if n := CachedPages(t, p); n != 0 {
		t.Fatalf("%s: %d pages still cached after posix_fadvise(DONTNEED)", p, n)
	}
	return p
}

// EvictTree drops the cached pages of every regular file under dir (the
// files' own, not the machine's: fsync, then posix_fadvise(DONTNEED), which
// leaves dirty pages cached). Files that vanish meanwhile are skipped.
func EvictTree(t testing.TB, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", p, err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("posix_fadvise(DONTNEED) on %s: %w", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// CachedPages counts path's pages resident in the page cache (mincore on a
// read-only shared mapping, which faults nothing in).
func CachedPages(t testing.TB, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		return 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap %s: %v", path, err)
	}
	defer unix.Munmap(m)
	pg := int64(os.Getpagesize())
	vec := make([]byte, (fi.Size()+pg-1)/pg)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore %s: %v", path, e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
