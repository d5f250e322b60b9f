package tracer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/internal/testutil"
	"golang.org/x/sys/unix"
)

// The layouts mapsize.go sizes the maps by are those of the maps in both
// BPF objects.
func TestMapLayouts(t *testing.T) {
	for name, load := range map[string]func() (*ebpf.CollectionSpec, error){"main": bpf.LoadIopath, "compat": bpf.LoadIopathCompat} {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []hashMap{dirtyPagesMap, hitStatsMap} {
			ms := spec.Maps[m.name]
			if ms == nil {
				t.Fatalf("%s: no map %s", name, m.name)
			}
			typ := ebpf.Hash
			if m.perCPU {
				typ = ebpf.PerCPUHash
			}
			const noPrealloc = 1 // BPF_F_NO_PREALLOC
			if int(ms.KeySize) != m.key || int(ms.ValueSize) != m.value || ms.Type != typ || (ms.Flags&noPrealloc == 0) != m.prealloc {
				t.Errorf("%s: map %s is %v key %d value %d flags %#x; mapsize.go has %+v", name, m.name, ms.Type, ms.KeySize, ms.ValueSize, ms.Flags, m)
			}
		}
	}
}

// issue 10: --max-dirty-pages 67108864 was accepted (7.0 GiB of kernel
// memory at load); the most allowed fits in mapBudget, one more does not.
func TestCheckMaxDirtyPages(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{
		{67108864, "--max-dirty-pages 67108864 would take 7.0 GiB of kernel memory, never swapped out, all at load (the dirty_pages map: 112 B per folio): give at most 8388608 (896.0 MiB; the limit is 1.0 GiB a map)"},
		{8388609, "--max-dirty-pages 8388609 would take"},
		{0, "--max-dirty-pages 0 is out of range: choose 1 to 8388608 folios"},
		{-1, "--max-dirty-pages -1 is out of range"},
		{1 << 40, "out of range: choose 1 to 8388608 folios"},
	} {
		if err := CheckMaxDirtyPages(c.n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--max-dirty-pages %d: %v, want %q", c.n, err, c.want)
		}
	}
	for _, n := range []int{1, 262144, 8388608} {
		if err := CheckMaxDirtyPages(n); err != nil {
			t.Errorf("--max-dirty-pages %d refused: %v", n, err)
		}
	}
	if b := dirtyPagesMap.bytes(8388608, 1); b > mapBudget || dirtyPagesMap.bytes(8388609, 1) <= mapBudget {
		t.Errorf("8388608 folios take %d bytes: not the largest within %d", b, mapBudget)
	}
}

// hit_stats holds a value per possible CPU: on many CPUs fewer entries fit
// the budget than IOPATH_HIT_STATS_ENTRIES's 1048576.
func TestHitStatsEntriesBudget(t *testing.T) {
	hi := hitStatsMap.maxEntries(64, maxHitStatsEntries)
	if hi >= maxHitStatsEntries || hitStatsMap.bytes(hi, 64) > mapBudget || hitStatsMap.bytes(hi+1, 64) <= mapBudget {
		t.Fatalf("64 CPUs: at most %d entries (%d bytes)", hi, hitStatsMap.bytes(hi, 64))
	}
	err := hitStatsMap.tooBig("IOPATH_HIT_STATS_ENTRIES=1048576", "entry", maxHitStatsEntries, hi, 64)
	if err == nil || !strings.Contains(err.Error(), "IOPATH_HIT_STATS_ENTRIES=1048576 would take 6.") ||
		!strings.Contains(err.Error(), "when full (the hit_stats map: ") || !strings.Contains(err.Error(), fmt.Sprintf("on 64 CPUs): give at most %d", hi)) {
		t.Errorf("64 CPUs, 1048576 entries: %v", err)
	}
	if hitStatsMap.maxEntries(2, maxHitStatsEntries) != maxHitStatsEntries {
		t.Errorf("2 CPUs: 1048576 entries (%d bytes) refused", hitStatsMap.bytes(maxHitStatsEntries, 2))
	}
}

// The sizes are the kernel's: the memlock it reports for a full map.
func TestMapBytesKernel(t *testing.T) {
	testutil.NeedRoot(t)
	// A map's memlock in fdinfo is what it really takes only where the
	// kernel computes that (map_mem_usage, htab_map_mem_usage: Linux 6.4);
	// before, it is a rough estimate from the key and value sizes (5.10 said
	// 196608 bytes for a dirty_pages map of 4096 entries, 6.1 462848), which
	// no formula of the real layout matches. The budget itself holds there
	// too: the memory is the same, only its report differs.
	kspec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	var usage *btf.Func
	if err := kspec.TypeByName("htab_map_mem_usage", &usage); err != nil {
		t.Skipf("this kernel reports no map's real memory (no htab_map_mem_usage in its BTF: before 6.4): %v", err)
	}
	spec, err := bpf.LoadIopath()
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4096
	for _, m := range []hashMap{dirtyPagesMap, hitStatsMap} {
		ms := spec.Maps[m.name].Copy()
		ms.MaxEntries = n
		mp, err := ebpf.NewMap(ms)
		if err != nil {
			t.Fatal(err)
		}
		defer mp.Close()
		if !m.prealloc { // fill it: its elements are allocated on update
			vals := make([]bpf.IopathStatVal, cpus)
			for i := range n {
				if err := updateRetry(mp, bpf.IopathStatKey{Ino: uint64(i)}, vals); err != nil {
					t.Fatal(err)
				}
			}
		}
		got := memlock(t, mp.FD())
		want := m.bytes(n, cpus)
		t.Logf("%s, %d entries on %d CPUs: the kernel says %d bytes, mapsize.go %d", m.name, n, cpus, got, want)
		// The fixed part (struct bpf_htab, locks, the spare elements of a
		// preallocated map: one per CPU) is not in bytes.
		if got < want || got > want+1024+uint64(cpus)*m.elem(cpus) {
			t.Errorf("%s, %d entries: the kernel says %d bytes, mapsize.go %d", m.name, n, got, want)
		}
	}
}

// memlock is the memlock of the map fd in /proc/self/fdinfo.
func memlock(t *testing.T, fd int) uint64 {
	n, err := strconv.ParseUint(testutil.ProcField(t, fmt.Sprintf("/proc/self/fdinfo/%d", fd), "memlock"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// updateRetry inserts key, retrying while the kernel answers ENOMEM: the
// elements of a map without preallocation come from per-CPU caches that
// the kernel refills asynchronously (bpf_mem_alloc, irq_work), so a burst
// of inserts can find one empty for a moment (the 6.12 VM, one TCG vCPU:
// "update: cannot allocate memory" at some insert of 4096).
func updateRetry(mp *ebpf.Map, key, value any) error {
	var err error
	for range 200 {
		if err = mp.Update(key, value, ebpf.UpdateNoExist); !errors.Is(err, unix.ENOMEM) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return err
}
