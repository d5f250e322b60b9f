package tracer

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/render"
)

// The maps a flag or variable resizes (--max-dirty-pages, IOPATH_HIT_STATS_
// ENTRIES) are refused when full they would take more than mapBudget of
// kernel memory: map memory is never swapped out, and a preallocated map
// takes all of it at load (--max-dirty-pages 67108864, once accepted, was
// 7.0 GiB). The size is the kernel's own (kernel/bpf/hashtab.c): a bucket
// of 16 bytes per entry, rounded up to a power of two, and an element per
// entry of a struct htab_elem (48 bytes) with the key and the value, each
// rounded up to 8 bytes; in a per-CPU map the element holds a pointer to
// the value and the value is there once per possible CPU. Measured (the
// map's memlock in /proc/PID/fdinfo, TestMapBytesKernel): dirty_pages of
// 1048576 entries, 117441616 bytes, 112.0 a folio.
const mapBudget = 1 << 30

// hashMap is a hash map's layout: key and value sizes from the generated
// types of package bpf (contract_test.go checks them against the maps of
// the BPF objects).
type hashMap struct {
	name       string
	key, value int
	perCPU     bool // BPF_MAP_TYPE_PERCPU_HASH
	prealloc   bool // all entries allocated at load (no BPF_F_NO_PREALLOC)
}

var (
	dirtyPagesMap = hashMap{"dirty_pages", binary.Size(bpf.IopathDirtyKey{}), binary.Size(bpf.IopathDirtyVal{}), false, true}
	hitStatsMap   = hashMap{"hit_stats", binary.Size(bpf.IopathStatKey{}), binary.Size(bpf.IopathStatVal{}), true, false}
)

// bytes is the kernel memory of the map with n entries, all in use, on
// cpus possible CPUs (htab_map_mem_usage, without its few hundred bytes
// of fixed size).
func (m hashMap) bytes(n uint64, cpus int) uint64 {
	buckets := uint64(1)
	if n > 1 {
		buckets = 1 << bits.Len64(n-1)
	}
	return n*m.elem(cpus) + buckets*16
}

// elem is the memory of one entry besides its bucket.
func (m hashMap) elem(cpus int) uint64 {
	up8 := func(v int) uint64 { return (uint64(v) + 7) &^ 7 }
	elem := 48 + up8(m.key) // struct htab_elem, the key
	switch {
	case m.perCPU:
		elem += 8 + up8(m.value)*uint64(cpus) // the pointer, a value per CPU
	default:
		elem += up8(m.value)
	}
	if !m.prealloc {
		elem += 8 // the allocator's list node (bpf_mem_alloc)
		if m.perCPU {
			elem += 16 // the per-CPU value's node and pointer
		}
	}
	return elem
}

// maxEntries is the largest number of entries within mapBudget (at most
// limit).
func (m hashMap) maxEntries(cpus int, limit uint64) uint64 {
	lo, hi := uint64(0), limit // bytes(lo) <= mapBudget
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if m.bytes(mid, cpus) <= mapBudget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// tooBig refuses n entries (given as what, e.g. "--max-dirty-pages
// 67108864", each counted as one unit) whose map exceeds mapBudget when
// full, naming the memory it would take and the most entries allowed (hi,
// from maxEntries).
func (m hashMap) tooBig(what, unit string, n, hi uint64, cpus int) error {
	if n <= hi {
		return nil
	}
	when, perCPU := "when full", ""
	if m.prealloc {
		when = "all at load"
	}
	if m.perCPU {
		perCPU = fmt.Sprintf(" on %d CPUs", cpus)
	}
	return fmt.Errorf("%s would take %s of kernel memory, never swapped out, %s (the %s map: %s per %s%s): give at most %d (%s; the limit is %s a map)",
		what, render.Bytes(m.bytes(n, cpus)), when, m.name, render.Bytes(m.elem(cpus)+16), unit, perCPU, hi, render.Bytes(m.bytes(hi, cpus)), render.Bytes(mapBudget))
}

// CheckMaxDirtyPages refuses a --max-dirty-pages below 1, or one whose
// dirty_pages map (preallocated: all of it at load) exceeds mapBudget.
func CheckMaxDirtyPages(n int) error {
	cpus, err := possibleCPUs()
	if err != nil {
		return fmt.Errorf("counting CPUs for the size of the dirty_pages map: %w", err)
	}
	hi := dirtyPagesMap.maxEntries(cpus, 1<<32-1)
	if n < 1 || n > 1<<32-1 {
		return fmt.Errorf("--max-dirty-pages %d is out of range: choose 1 to %d folios", n, hi)
	}
	return dirtyPagesMap.tooBig(fmt.Sprintf("--max-dirty-pages %d", n), "folio", uint64(n), hi, cpus)
}

// minRingBuf is the smallest ring buffer the kernel takes: one page
// (kernel/bpf/ringbuf.c wants a power of two and page-aligned size).
const minRingBuf = 4096

// CheckRingBufBytes refuses a --ringbuf-size the kernel would refuse (not
// a power of two, below a page) or one above mapBudget: the ring buffer is
// kernel memory, never swapped out, all of it allocated at load. A power
// of two out of range is said to be too large or too small, not "not a
// power of two" (2147483648 was).
func CheckRingBufBytes(n int) error {
	const fix = "e.g. --ringbuf-size 8388608 (8 MiB, the default)"
	switch {
	case n <= 0 || n&(n-1) != 0:
		return fmt.Errorf("--ringbuf-size %d is not a power of two: give a power of two from %d to %d bytes, %s", n, minRingBuf, mapBudget, fix)
	case n > mapBudget:
		return fmt.Errorf("--ringbuf-size %d (%s) is too large: the ring buffer is kernel memory, never swapped out, all of it taken at load; give at most %d (%s), %s",
			n, render.Bytes(uint64(n)), mapBudget, render.Bytes(mapBudget), fix)
	case n < minRingBuf:
		return fmt.Errorf("--ringbuf-size %d is too small: the kernel's ring buffer is at least one page, %d bytes; give %d to %d, %s", n, minRingBuf, minRingBuf, mapBudget, fix)
	}
	return nil
}
