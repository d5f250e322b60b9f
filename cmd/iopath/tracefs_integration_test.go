package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
)

// A machine without tracefs mounted (a minimal install, a container): iopath
// mounts it itself, says so on stderr, and its tracepoints attach. The
// unmount happens in a private mount namespace: the machine's own mounts are
// untouched.
func TestTraceMountsTracefs(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1) (util-linux) for a private mount namespace")
	}
	helper := iopathCmd(t.TempDir(), "trace", "--json", "--", "true")
	// debugfs automounts tracefs at /sys/kernel/debug/tracing: unmount both.
	script := `umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null
if [ -e /sys/kernel/tracing/events ] || [ -e /sys/kernel/debug/tracing/events ]; then echo "tracefs still mounted" >&2; exit 99; fi
exec "$@"`
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh"}, helper.Args...)...)
	cmd.Env = helper.Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("trace without tracefs: %v; stderr:\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "tracefs was not mounted: mounted it at /sys/kernel/tracing") {
		t.Errorf("no word about mounting tracefs; stderr:\n%s", errb.String())
	}
	tr := parseRecords(t, out.Bytes())
	if tr.summary == nil {
		t.Fatalf("no summary record; stderr:\n%s", errb.String())
	}
}
