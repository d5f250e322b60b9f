package testutil

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// SigMask returns a signal mask field (SigIgn, SigCgt, SigBlk) of pid's
// /proc/PID/status.
func SigMask(t testing.TB, pid int, field string) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
