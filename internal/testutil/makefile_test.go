package testutil

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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
	KernelIndependent(t)
	args := goTestArgs(t, makeDryRun(t, "unit"))
	if i := slices.Index(args, "-p"); i < 0 || i+1 >= len(args) || args[i+1] != "1" {
		if !slices.Contains(args, "-p=1") {
			t.Errorf("make unit runs go test %s: want -p 1 (one package at a time)", strings.Join(args, " "))
		}
	}
}

// `make vmtest`'s limits: per kernel (vmtest.sh -t: boot and every test
// binary) at least 1800 s, since 5.10 hit the old 1200 s on a busy
// machine (qemu CPU 833 s); each test binary's -test.timeout ends before
// vmtest.sh's SIGQUIT (20 s before the limit), so Go names the test that
// hung; and the VM rounds (kernels / jobs at once) fit CI's 90 minutes
// beside the rest of `make test` (~10 min measured: tools, checks, race,
// the host tests).
func TestMakeVMTestLimits(t *testing.T) {
	KernelIndependent(t)
	lines := makeDryRun(t, "vmtest")
	var f []string
	for _, l := range lines {
		f = append(f, strings.Fields(strings.TrimSuffix(l, "\\"))...)
	}
	i := slices.Index(f, "scripts/vmtest-go.sh")
	if i < 0 {
		t.Fatalf("no scripts/vmtest-go.sh in %q", lines)
	}
	f = f[i:]
	var limit, kernels, jobs int
	var timeout time.Duration
	for j, a := range f {
		next := func() string {
			if j+1 >= len(f) {
				t.Fatalf("%s without a value in %q", a, f)
			}
			return f[j+1]
		}
		var err error
		switch {
		case a == "-t":
			limit, err = strconv.Atoi(next())
		case a == "-j":
			jobs, err = strconv.Atoi(next())
		case a == "-k":
			kernels++
		case strings.HasPrefix(a, "-test.timeout="):
			timeout, err = time.ParseDuration(strings.TrimPrefix(a, "-test.timeout="))
		}
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
	if limit < 1800 {
		t.Errorf("per-kernel limit -t %d s: want at least 1800 (5.10 hit 1200 s on a busy machine)", limit)
	}
	if timeout <= 0 || timeout >= time.Duration(limit-20)*time.Second {
		t.Errorf("-test.timeout=%s: want one that ends before vmtest.sh's SIGQUIT at %d s", timeout, limit-20)
	}
	if jobs < 1 || kernels < 1 {
		t.Fatalf("-j %d, %d kernels", jobs, kernels)
	}
	if rounds := (kernels + jobs - 1) / jobs; time.Duration(rounds*limit)*time.Second > 80*time.Minute {
		t.Errorf("%d kernels, %d at once, %d s each: %d s of VMs at most, more than the 80 min CI's 90 leave", kernels, jobs, limit, rounds*limit)
	}
}
