package workloads

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// checkSpace refuses to start writing need bytes into the file at path
// when statfs(2) says its filesystem has less free space: preparing would
// fail part-way after filling the disk. Free space is what this user may
// use (f_bavail; f_bfree for root, who may use the reserved blocks). The
// run's own writes are not checked: running out of space there is a
// result, reported with what was written.
func checkSpace(path string, need int64) error {
	var st unix.Statfs_t
	if need <= 0 || unix.Statfs(path, &st) != nil {
		return nil
	}
	blocks := st.Bavail
	if os.Geteuid() == 0 {
		blocks = st.Bfree
	}
	free := int64(blocks) * st.Bsize
	if need <= free {
		return nil
	}
	return fmt.Errorf("not enough free space for the workload's file: it needs %d more bytes (%s) and %s (%s) has %d free (%s); free space, use a smaller --size, or --dir on a larger filesystem",
		need, FormatSize(need), filepath.Dir(path), fsName(path), free, FormatSize(free))
}
