package main

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testutil"
)

// A SIGKILLed `demo write-1byte --expire-centisecs` once left
// vm.dirty_expire_centisecs changed: the next run restores it (and says so).
func TestDemoSysctlRestoredAfterSIGKILL(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t) // the session's restore record, not a hook
	tmp := diskDir(t)
	// Whatever happens, the machine's value comes back (checked).
	before := testutil.Sysctl(t, "vm.dirty_expire_centisecs")
	testutil.SetSysctl(t, "vm.dirty_expire_centisecs", before)
	want := "137"
	if before == want {
		want = "138"
	}
	cmd := iopathCmd(tmp, "demo", "write-1byte", "--expire-centisecs", want, "--timeout", "1m")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); testutil.Sysctl(t, "vm.dirty_expire_centisecs") != want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the demo never set vm.dirty_expire_centisecs=%s; stderr %s", want, errb.String())
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if v := testutil.Sysctl(t, "vm.dirty_expire_centisecs"); v != want {
		t.Fatalf("after SIGKILL vm.dirty_expire_centisecs=%s, want the demo's %s still", v, want)
	}
	_, stderr, code := runIopath(t, tmp, "trace", "--quiet", "--", "true")
	if v := testutil.Sysctl(t, "vm.dirty_expire_centisecs"); v != before {
		t.Errorf("after the next run vm.dirty_expire_centisecs=%s, want %s back", v, before)
	}
	line := fmt.Sprintf("iopath: restored vm.dirty_expire_centisecs=%s: iopath pid %d set it to %s and was killed before it could restore it", before, cmd.Process.Pid, want)
	if code != 0 || !strings.Contains(stderr, line) {
		t.Errorf("the next run: exit %d, stderr %q; want the line %q", code, stderr, line)
	}
}
