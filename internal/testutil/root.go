package testutil

import (
	"os"
	"testing"
)

// NeedRoot skips a privileged test (BPF programs, mounts, sysctls) unless the
// test runs as root on a kernel with BTF. IOPATH_TEST_NO_ROOT=1 skips them
// even as root: `make race` runs the unprivileged tests that way.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Getenv("IOPATH_TEST_NO_ROOT") == "1" {
		t.Skip("privileged test skipped: IOPATH_TEST_NO_ROOT=1 (make race runs the unprivileged tests only)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to load BPF programs (run the tests as root: sudo make test)")
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("needs a kernel with BTF (/sys/kernel/btf/vmlinux)")
	}
}
