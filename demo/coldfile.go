package demo

import (
	"crypto/rand"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// makeColdFile writes size random bytes to path, syncs them and evicts the
// file from the page cache with posix_fadvise(DONTNEED) (never a global
// drop_caches). It returns the pages still cached afterwards (mincore).
func makeColdFile(path string, size int64) (int, error) {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", path, err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		rand.Read(buf[:n])
		if _, err := unix.Pwrite(fd, buf[:n], off); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return 0, fmt.Errorf("writing %s: the disk is full after %d bytes: free space or use --dir elsewhere", path, off)
			}
			return 0, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := unix.Fsync(fd); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", path, err)
	}
	return evict(path)
}

// evict drops a file's clean pages (posix_fadvise DONTNEED) and returns how
// many remain cached.
func evict(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, fmt.Errorf("posix_fadvise(DONTNEED) on %s: %w", path, err)
	}
	return cachedPages(fd)
}

// cachedPages counts a file's pages resident in the page cache (mincore on a
// read-only mapping, which does not fault pages in).
func cachedPages(fd int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	if st.Size == 0 {
		return 0, nil
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(m)
	vec := make([]byte, (st.Size+4095)/4096)
	if err := mincore(m, vec); err != nil {
		return 0, err
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, nil
}

func mincore(b []byte, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}
