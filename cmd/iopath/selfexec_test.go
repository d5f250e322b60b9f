package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/demo"
)

// TestMain runs the iopath command instead of the tests when this test
// binary is started the way iopath starts itself (os.Executable with a
// command, not test flags: a demo's `__demo-child`, a workload's jobs).
// Without it, a test that runs a demo in-process starts the whole test
// binary again as the demo's child, which runs that test again: a chain
// of processes without end (seen: 65 in 5 minutes).
func TestMain(m *testing.M) {
	if prog := os.Getenv(execRaceEnv); prog != "" {
		execRace(strings.Fields(prog)) // exec_integration_test.go
	}
	if path := os.Getenv(evictEnv); path != "" {
		if left, err := demo.Evict(path); err != nil || left != 0 {
			fmt.Fprintf(os.Stderr, "evicting %s: %d pages left, %v\n", path, left, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		main()
	}
	os.Exit(m.Run())
}

// The test binary started as a demo's child runs the child command (here
// refused for its missing arguments), not the tests.
func TestSelfExecRunsTheCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "__demo-child")
	cmd.Env = append(os.Environ(), "IOPATH_TEST_NO_ROOT=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil || err == nil || strings.Contains(string(out), "PASS") || strings.Contains(string(out), "--- ") {
		t.Fatalf("the test binary as `__demo-child`: %v, output:\n%.2000s", err, out)
	}
	t.Logf("%v: %s", err, strings.TrimSpace(string(out)))
}

// `iopath --version` is one line: the version, the commit when Go recorded
// it, the Go release.
func TestVersionOneLine(t *testing.T) {
	root := newRootCmd([]string{"--version"})
	var out strings.Builder
	root.SetOut(&out)
	err := root.Execute()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "iopath version ") || !strings.Contains(lines[0], " go1.") {
		t.Fatalf("iopath --version: %v, %q", err, out.String())
	}
	t.Log(lines[0])
}
