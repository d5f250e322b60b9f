package workloads

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"golang.org/x/sys/unix"
)

func TestCapEff(t *testing.T) {
	for _, c := range []struct {
		status string
		want   uint64
		ok     bool
	}{
		{"Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000001fffeffffff\nCapEff:\t000001fffeffffff\nCapBnd:\t000001ffffffffff\n", 0x1fffeffffff, true},
		{"CapEff:\t000001ffffffffff\n", 0x1ffffffffff, true},
		{"CapEff:\t0000000000000000", 0, true}, // no newline at the end
		{"CapPrm:\t000001ffffffffff\n", 0, false},
		{"CapEff:\tzz\n", 0, false},
	} {
		got, err := capEff(c.status)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("capEff(%q) = %#x, %v; want %#x, ok %v", c.status, got, err, c.want, c.ok)
		}
	}
	// A container's root without CAP_SYS_RESOURCE (bit 24): f_bavail.
	st := unix.Statfs_t{Bfree: 100, Bavail: 60}
	eff, _ := capEff("CapEff:\t000001fffeffffff\n")
	if has := eff&(1<<unix.CAP_SYS_RESOURCE) != 0; has || usableBlocks(&st, has) != 60 || usableBlocks(&st, true) != 100 {
		t.Errorf("CapEff 000001fffeffffff: CAP_SYS_RESOURCE %v, usable %d", has, usableBlocks(&st, has))
	}
}

// issue 10: root without CAP_SYS_RESOURCE in its effective set may not fill
// the reserved blocks, but the check counted them (f_bfree for euid 0):
// `iopath workload --size 200g` filled /. On an ext4 of its own (5 %
// reserved), a file that needs half the reserve beyond f_bavail is refused
// on a thread without the capability (it is dropped for the check), and
// accepted with it (where the test has it to give).
func TestCheckSpaceReserved(t *testing.T) {
	fs := testutil.LoopExt4(t, 64<<20)
	path := filepath.Join(fs.Dir, "f") // the workload's file, made before the check
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(fs.Dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Bfree <= st.Bavail+2 {
		t.Fatalf("no reserve on the test ext4: f_bfree %d, f_bavail %d", st.Bfree, st.Bavail)
	}
	need := int64(st.Bavail+(st.Bfree-st.Bavail)/2) * st.Bsize
	withCap := capSysResource()
	errs := make(chan error, 2)
	go func() {
		// Capabilities are per thread: drop CAP_SYS_RESOURCE from this
		// one's effective set; the locked thread exits with the goroutine.
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			errs <- err
			return
		}
		data[0].Effective &^= 1 << unix.CAP_SYS_RESOURCE
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			errs <- err
			return
		}
		errs <- checkSpace(path, need)
	}()
	if err := <-errs; err == nil || !strings.Contains(err.Error(), "not enough free space for the workload's file") {
		t.Errorf("%d bytes (f_bavail %d, f_bfree %d blocks) without CAP_SYS_RESOURCE: %v, want refused", need, st.Bavail, st.Bfree, err)
	}
	if withCap {
		if err := checkSpace(path, need); err != nil {
			t.Errorf("%d bytes with CAP_SYS_RESOURCE: %v", need, err)
		}
	} else {
		t.Log("CAP_SYS_RESOURCE is not in this test's effective set: only the refusal is checked")
	}
}
