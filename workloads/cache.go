package workloads

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Residency is how much of a file range is in the page cache.
type Residency struct {
	CachedPages int64  `json:"cached_pages"` // pages of the range in the page cache
	TotalPages  int64  `json:"total_pages"`  // pages in the range
	Method      string `json:"method"`       // "cachestat" (Linux 6.5+) or "mincore"
}

// CacheResidency reports how many pages of the first size bytes of the open
// file f are in the page cache, using cachestat(2) where the kernel has it
// and mincore(2) on a temporary mapping otherwise.
func CacheResidency(f *os.File, size int64) (Residency, error) {
	page := int64(os.Getpagesize())
	r := Residency{TotalPages: (size + page - 1) / page}
	if size <= 0 {
		return r, nil
	}
	var cs unix.Cachestat_t
	err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: 0, Len: uint64(size)}, &cs, 0)
	if err == nil {
		r.CachedPages, r.Method = int64(cs.Cache), "cachestat"
		return r, nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		return r, &os.PathError{Op: "cachestat", Path: f.Name(), Err: err}
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_NONE, unix.MAP_SHARED)
	if err != nil {
		return r, &os.PathError{Op: "mmap for mincore", Path: f.Name(), Err: err}
	}
	defer unix.Munmap(m)
	vec := make([]byte, r.TotalPages)
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return r, &os.PathError{Op: "mincore", Path: f.Name(), Err: e}
	}
	for _, v := range vec {
		r.CachedPages += int64(v & 1)
	}
	r.Method = "mincore"
	return r, nil
}
