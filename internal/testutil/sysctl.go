package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sysctlPairs are the dirty-page limits given either in bytes or as a ratio:
// writing one sets the other to 0, and writing 0 to a *_bytes is refused.
var sysctlPairs = map[string]string{
	"vm.dirty_bytes": "vm.dirty_ratio", "vm.dirty_ratio": "vm.dirty_bytes",
	"vm.dirty_background_bytes": "vm.dirty_background_ratio", "vm.dirty_background_ratio": "vm.dirty_background_bytes",
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

// Sysctl reads a sysctl by its dotted name ("vm.dirty_bytes").
func Sysctl(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(sysctlPath(name))
	if err != nil {
		t.Fatalf("reading sysctl %s: %v", name, err)
	}
	return strings.TrimSpace(string(b))
}

// SysctlInt reads a sysctl holding one integer.
func SysctlInt(t testing.TB, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(Sysctl(t, name), 10, 64)
	if err != nil {
		t.Fatalf("sysctl %s: %v", name, err)
	}
	return v
}

// SetSysctl sets a sysctl for the rest of the test and restores the old
// value when the test ends, pass or fail (checked: a value not restored is a
// test error). For a bytes/ratio pair both halves are saved and the one that
// was in force is written back.
func SetSysctl(t testing.TB, name, value string) {
	t.Helper()
	old := map[string]string{name: Sysctl(t, name)}
	restore := []string{name}
	if other, ok := sysctlPairs[name]; ok {
		old[other] = Sysctl(t, other)
		// The bytes half is in force when it is non-zero.
		bytes, ratio := name, other
		if strings.HasSuffix(name, "_ratio") {
			bytes, ratio = other, name
		}
		restore = []string{ratio}
		if old[bytes] != "0" {
			restore = []string{bytes}
		}
	}
	t.Cleanup(func() {
		for _, n := range restore {
			if err := os.WriteFile(sysctlPath(n), []byte(old[n]), 0o644); err != nil {
				t.Errorf("restoring sysctl %s=%s: %v", n, old[n], err)
			}
		}
		for n, v := range old {
			if got := Sysctl(t, n); got != v {
				t.Errorf("sysctl %s not restored: %s, was %s", n, got, v)
			}
		}
	})
	if err := os.WriteFile(sysctlPath(name), []byte(value), 0o644); err != nil {
		t.Fatalf("setting sysctl %s=%s: %v", name, value, err)
	}
}
