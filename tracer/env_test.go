package tracer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad IOPATH_PROBE_CACHE or IOPATH_HIT_STATS_ENTRIES is one line naming
// the variable and what it accepts, and nothing is created where it points.
func TestCheckEnv(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cache, entries, want string }{
		{"bogus", "", `IOPATH_PROBE_CACHE="bogus" is not an absolute path: give off, or the absolute path of an existing directory`},
		{filepath.Join(dir, "new", "dir"), "", "is not an existing directory"},
		{file, "", "is not an existing directory"},
		{"", "4294967295", `IOPATH_HIT_STATS_ENTRIES="4294967295" is not a number of entries from 1 to 1048576`},
		{"", "0", "from 1 to 1048576"},
		{"", "-1", "from 1 to 1048576"},
		{"", "64k", "from 1 to 1048576"},
	} {
		t.Setenv("IOPATH_PROBE_CACHE", c.cache)
		t.Setenv("IOPATH_HIT_STATS_ENTRIES", c.entries)
		err := checkEnv()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("IOPATH_PROBE_CACHE=%q IOPATH_HIT_STATS_ENTRIES=%q: %v, want one line with %q", c.cache, c.entries, err, c.want)
		}
		if c.cache != "" && openProbeCache("") != nil {
			t.Errorf("IOPATH_PROBE_CACHE=%q: a cache was opened", c.cache)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 {
		t.Errorf("created: %v", left)
	}
	for _, c := range [][2]string{{"", ""}, {"off", "1"}, {dir, "1048576"}, {"no", "64"}} {
		t.Setenv("IOPATH_PROBE_CACHE", c[0])
		t.Setenv("IOPATH_HIT_STATS_ENTRIES", c[1])
		if err := checkEnv(); err != nil {
			t.Errorf("IOPATH_PROBE_CACHE=%q IOPATH_HIT_STATS_ENTRIES=%q refused: %v", c[0], c[1], err)
		}
	}
}
