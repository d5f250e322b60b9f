package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// The environment variables that change how the tracer loads are checked
// before anything is probed or loaded (New, Probe): a bad value is one
// line naming the variable and what it accepts, never a file created where
// it points (IOPATH_PROBE_CACHE=bogus once created ./bogus) nor a map the
// kernel refuses, blamed on the probe cache (IOPATH_HIT_STATS_ENTRIES=
// 4294967295 failed as "map create: argument list too long" and removed
// the cache).

// maxHitStatsEntries is the largest IOPATH_HIT_STATS_ENTRIES: 64 times the
// 16384 of bpf/maps.h. hit_stats is a per-CPU hash without preallocation,
// but its bucket array is allocated at load, and the kernel refuses
// (-E2BIG) a max_entries whose bucket count overflows. With many CPUs the
// map's memory when full (mapsize.go) sets a lower limit.
const maxHitStatsEntries = 1 << 20

// checkEnv refuses a bad IOPATH_PROBE_CACHE or IOPATH_HIT_STATS_ENTRIES.
func checkEnv() error {
	if _, err := probeCacheEnv(); err != nil {
		return err
	}
	if _, err := hitStatsEntries(); err != nil {
		return err
	}
	return checkSparesEnv() // spare.go
}

// probeCacheEnv is the probe cache's directory from IOPATH_PROBE_CACHE:
// "" when it is off (off, 0 or no), probeCacheDir when unset, else the
// absolute path of an existing directory (iopath creates only its own
// default directory).
func probeCacheEnv() (string, error) {
	v := os.Getenv("IOPATH_PROBE_CACHE")
	switch v {
	case "off", "0", "no":
		return "", nil
	case "":
		return probeCacheDir, nil
	}
	if !filepath.IsAbs(v) {
		return "", fmt.Errorf("IOPATH_PROBE_CACHE=%q is not an absolute path: give off, or the absolute path of an existing directory (unset: %s)", v, probeCacheDir)
	}
	if st, err := os.Stat(v); err != nil || !st.IsDir() {
		return "", fmt.Errorf("IOPATH_PROBE_CACHE=%q is not an existing directory: create it, or give off, or the absolute path of an existing directory (unset: %s)", v, probeCacheDir)
	}
	return v, nil
}

// hitStatsEntries is IOPATH_HIT_STATS_ENTRIES (tests shrink hit_stats with
// it so that a few hundred files fill it), 0 when unset.
func hitStatsEntries() (uint32, error) {
	v := os.Getenv("IOPATH_HIT_STATS_ENTRIES")
	if v == "" {
		return 0, nil
	}
	cpus, err := possibleCPUs()
	if err != nil {
		return 0, fmt.Errorf("counting CPUs for the size of the hit_stats map: %w", err)
	}
	hi := hitStatsMap.maxEntries(cpus, maxHitStatsEntries) // mapsize.go
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n == 0 || n > maxHitStatsEntries {
		return 0, fmt.Errorf("IOPATH_HIT_STATS_ENTRIES=%q is not a number of entries from 1 to %d: give one, or unset it (16384)", v, hi)
	}
	if err := hitStatsMap.tooBig(fmt.Sprintf("IOPATH_HIT_STATS_ENTRIES=%d", n), "file", n, hi, cpus); err != nil {
		return 0, fmt.Errorf("%w, or unset it (16384)", err)
	}
	return uint32(n), nil
}
