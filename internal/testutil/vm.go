package testutil

import (
	"os"
	"testing"
)

// KernelIndependent marks a privileged test whose answer does not depend on
// the kernel: iopath's own CLI behaviour (exit status, signals, output files,
// workloads and demos, map-full handling) on top of hooks that other tests
// check per kernel. Under scripts/vmtest.sh (IOPATH_VM=1) it skips, so `make
// vmtest` spends its TCG time on what differs between kernels (every attach
// path, the read, write and fault stories: docs/tests.md); the host run covers
// it. IOPATH_VM_ALL=1 (make vmtest VMTEST_ALL=1) runs it in the VMs too.
func KernelIndependent(t testing.TB) {
	t.Helper()
	if os.Getenv("IOPATH_VM") == "1" && os.Getenv("IOPATH_VM_ALL") != "1" {
		t.Skip("kernel-independent: the host run covers it (IOPATH_VM_ALL=1 runs it in the VMs too)")
	}
}
