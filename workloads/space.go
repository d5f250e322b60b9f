package workloads

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// checkSpace refuses to start writing need bytes into the file at path
// when statfs(2) says its filesystem has less free space: preparing would
// fail part-way after filling the disk. Free space is what this process
// may use (usableBlocks). The run's own writes are not checked: running
// out of space there is a result, reported with what was written.
func checkSpace(path string, need int64) error {
	var st unix.Statfs_t
	if need <= 0 || unix.Statfs(path, &st) != nil {
		return nil
	}
	free := int64(usableBlocks(&st, capSysResource())) * st.Bsize
	if need <= free {
		return nil
	}
	return fmt.Errorf("not enough free space for the workload's file: it needs %d more bytes (%s) and %s (%s) has %d free (%s); free space, use a smaller --size, or --dir on a larger filesystem",
		need, FormatSize(need), filepath.Dir(path), fsName(path), free, FormatSize(free))
}

// usableBlocks is f_bavail, the blocks anyone may fill, or f_bfree, with
// the filesystem's reserved blocks, for a process with CAP_SYS_RESOURCE in
// its effective set: the kernel's test (ext4_has_free_clusters). Root is
// not enough: root without it (a container: CapEff 000001fffeffffff) got
// f_bfree, and `iopath workload --size 200g` filled / (on this project's
// machine f_bfree 237 GiB, f_bavail 76 GiB: resuid=65534). ext4 also gives the reserve to its resuid/resgid
// (default uid 0); that is not counted: the check stays on the safe side.
func usableBlocks(st *unix.Statfs_t, capSysResource bool) uint64 {
	if capSysResource {
		return st.Bfree
	}
	return st.Bavail
}

// capSysResource reports whether CAP_SYS_RESOURCE is in this thread's
// effective set (capabilities are per thread; iopath changes none).
func capSysResource() bool {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return false
	}
	eff, err := capEff(string(b))
	return err == nil && eff&(1<<unix.CAP_SYS_RESOURCE) != 0
}

// capEff parses the CapEff line of a /proc/PID/status: the effective
// capabilities as a bit mask (bit N: capability N).
func capEff(status string) (uint64, error) {
	for l := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff line")
}
