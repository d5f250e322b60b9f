package testutil

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// makeDryRun returns the commands `make -n TARGET` would run in the
// repository's root (../..), one per line, with make's variables set by
// vars ("NAME=VALUE").
func makeDryRun(t *testing.T, target string, vars ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", append([]string{"-n", "-C", "../..", "--no-print-directory", target}, vars...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// goTestArgs returns the arguments of the `go test` command among lines.
func goTestArgs(t *testing.T, lines []string) []string {
	t.Helper()
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 2 && f[1] == "test" && strings.HasSuffix(f[0], "go") {
			return f[2:]
		}
	}
	t.Fatalf("no go test command in %q", lines)
	return nil
}

// `make unit` runs the privileged tests, which change machine-wide state
// (kernel.io_uring_disabled, vm.dirty_*, drop_caches): one package at a
// time, or a package's test sees another's sysctl (TestTraceBackupsForced
// in cmd/iopath failed with "io_uring_disabled is 2" while workloads'
// TestIOUringDisabledSysctl ran beside it).
func TestMakeUnitOnePackageAtATime(t *testing.T) {
	args := goTestArgs(t, makeDryRun(t, "unit"))
	if i := slices.Index(args, "-p"); i < 0 || i+1 >= len(args) || args[i+1] != "1" {
		if !slices.Contains(args, "-p=1") {
			t.Errorf("make unit runs go test %s: want -p 1 (one package at a time)", strings.Join(args, " "))
		}
	}
}
