package workloads

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dioAlign is the O_DIRECT alignment rule of a file, in bytes.
type dioAlign struct {
	mem    int64  // buffer address alignment; 0 if unknown
	offset int64  // file offset and length alignment; 0 if unknown
	source string // where the numbers came from, for messages
}

// directAlignment finds the O_DIRECT alignment of the open file fd: statx
// STATX_DIOALIGN where the filesystem reports it, else the logical block size
// of the device under it. supported is false when statx says the file
// cannot do O_DIRECT.
func directAlignment(fd int) (a dioAlign, supported bool) {
	var st unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &st)
	if err == nil && st.Mask&unix.STATX_DIOALIGN != 0 {
		if st.Dio_offset_align == 0 {
			return dioAlign{source: "statx STATX_DIOALIGN"}, false
		}
		return dioAlign{mem: int64(st.Dio_mem_align), offset: int64(st.Dio_offset_align), source: "statx STATX_DIOALIGN"}, true
	}
	var fst unix.Stat_t
	if unix.Fstat(fd, &fst) != nil {
		return dioAlign{}, true
	}
	maj, minor := unix.Major(fst.Dev), unix.Minor(fst.Dev)
	dev := filepath.Join("/sys/dev/block", fmt.Sprintf("%d:%d", maj, minor))
	// A partition's directory has no queue/; its disk's directory is the parent.
	for _, p := range []string{filepath.Join(dev, "queue/logical_block_size"), filepath.Join(dev, "../queue/logical_block_size")} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n > 0 {
			return dioAlign{mem: n, offset: n, source: "logical block size of device " + fmt.Sprintf("%d:%d", maj, minor) + " (" + p + ")"}, true
		}
	}
	return dioAlign{}, true
}

// fsName names the filesystem holding path, e.g. "ext4" or "tmpfs", for messages.
func fsName(path string) string {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return "this filesystem"
	}
	if n, ok := fsMagics[int64(st.Type)]; ok {
		return n
	}
	return fmt.Sprintf("filesystem type %#x", st.Type)
}

// fsMagics names common filesystems by their statfs magic.
var fsMagics = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.RAMFS_MAGIC:           "ramfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.FUSE_SUPER_MAGIC:      "fuse",
	unix.V9FS_MAGIC:            "9p",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	unix.ZONEFS_MAGIC:          "zonefs",
	unix.MSDOS_SUPER_MAGIC:     "vfat",
	unix.EXFAT_SUPER_MAGIC:     "exfat",
	unix.PROC_SUPER_MAGIC:      "proc",
	unix.SYSFS_MAGIC:           "sysfs",
}
