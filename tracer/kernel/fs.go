package kernel

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// FSIocGetversion is FS_IOC_GETVERSION, _IOR('v', 1, long) on 64-bit
// architectures: the inode's i_generation.
const FSIocGetversion = 0x80087601

// Generation reads the i_generation of the regular file at path (not
// following a final symlink; a FIFO or device is not opened): what tells
// an inode number reused after a delete from the file that had it before.
func Generation(path string) (uint32, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, unix.EINVAL
	}
	return unix.IoctlGetUint32(fd, FSIocGetversion)
}

// fsNames maps superblock magic numbers (include/uapi/linux/magic.h) to names.
var fsNames = map[uint64]string{
	0xef53: "ext4", 0x58465342: "xfs", 0x9123683e: "btrfs", 0xf2f52010: "f2fs", 0x01021994: "tmpfs",
	0x858458f6: "ramfs", 0x9fa0: "proc", 0x62656572: "sysfs", 0x62646576: "bdev", 0x794c7630: "overlayfs",
	0x6969: "nfs", 0x65735546: "fuse", 0x4d44: "vfat", 0x01021997: "9p", 0x2fc12fc1: "zfs",
	0x74726163: "tracefs", 0x64626720: "debugfs", 0x27e0eb: "cgroup", 0x63677270: "cgroup2",
}

// FSName names a filesystem by its superblock magic, e.g. "ext4".
func FSName(magic uint64) string {
	if n, ok := fsNames[magic]; ok {
		return n
	}
	if magic == 0 {
		return ""
	}
	return fmt.Sprintf("fs_%#x", magic)
}

// MemoryOnly reports whether a filesystem keeps file data only in memory:
// its pages are never written back (tmpfs, ramfs) or it has no block device.
func MemoryOnly(fs string) bool {
	switch fs {
	case "tmpfs", "ramfs", "proc", "sysfs", "tracefs", "debugfs", "cgroup", "cgroup2":
		return true
	}
	return false
}

// PseudoFS names the filesystem of dir if it is one of the kernel's own
// (proc, sysfs, cgroup, …: no regular files can be created there, and
// trying fails with ENOENT or EACCES, which alone would say the wrong
// thing), "" else.
func PseudoFS(dir string) string {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return ""
	}
	name := FSName(uint64(st.Type))
	switch name {
	case "proc", "sysfs", "cgroup", "cgroup2", "tracefs", "debugfs", "bdev":
		return name
	}
	return ""
}
