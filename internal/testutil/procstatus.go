package testutil

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ProcField returns the value of the line "field:" of a /proc file of
// "name: value" lines (/proc/PID/status, /proc/PID/fdinfo/FD), trimmed.
func ProcField(t testing.TB, path, field string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in %s", field, path)
	return ""
}

// SigMask returns a signal mask field (SigIgn, SigCgt, SigBlk) of pid's
// /proc/PID/status.
func SigMask(t testing.TB, pid int, field string) uint64 {
	t.Helper()
	m, err := strconv.ParseUint(ProcField(t, fmt.Sprintf("/proc/%d/status", pid), field), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
