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

// ReadSigMask is SigMask for a process that may be gone: its error instead
// of a failed test.
func ReadSigMask(pid int, field string) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
