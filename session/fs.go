package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/iopath/iopath/tracer/kernel"
	"golang.org/x/sys/unix"
)

// FS describes where a file lives: its filesystem and block device, if any.
type FS struct {
	Type        string // ext4, xfs, btrfs, tmpfs, ramfs, or "fs 0xMAGIC"
	Dev         uint32 // kernel dev_t of the filesystem
	BlockDevice bool   // backed by a block device (its IO can reach a disk)
	ReadAheadKB int    // the device's read_ahead_kb, -1 if unknown
	Disk        string // the block device's name (sda, nvme0n1p2)
}

const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

// DescribeFS describes the filesystem of path.
func DescribeFS(path string) FS {
	var sfs unix.Statfs_t
	var st unix.Stat_t
	info := FS{ReadAheadKB: -1}
	if unix.Statfs(path, &sfs) == nil {
		switch sfs.Type {
		case tmpfsMagic:
			info.Type = "tmpfs"
		case ramfsMagic:
			info.Type = "ramfs"
		case 0xef53:
			info.Type = "ext4"
		case 0x58465342:
			info.Type = "xfs"
		case 0x9123683e:
			info.Type = "btrfs"
		default:
			info.Type = fmt.Sprintf("fs 0x%x", sfs.Type)
		}
	}
	if unix.Stat(path, &st) == nil {
		info.Dev = kernel.UserDev(st.Dev)
		major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
		sys := fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)
		if _, err := os.Stat(sys); err == nil {
			info.BlockDevice = true
			if real, err := filepath.EvalSymlinks(sys); err == nil {
				info.Disk = filepath.Base(real)
			}
			for _, q := range []string{sys + "/queue/read_ahead_kb", sys + "/../queue/read_ahead_kb"} {
				if b, err := os.ReadFile(q); err == nil {
					info.ReadAheadKB, _ = strconv.Atoi(strings.TrimSpace(string(b)))
					break
				}
			}
		}
	}
	return info
}

// Inode returns the kernel dev_t and inode number of path.
func Inode(path string) (uint32, uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	return kernel.UserDev(st.Dev), st.Ino, nil
}

// DiskBase is the directory for a run's work files: $TMPDIR, or /var/tmp
// when $TMPDIR is memory-backed (tmpfs) and /var/tmp is not, so that their
// IO reaches a disk.
func DiskBase() string {
	base := os.TempDir()
	if !DescribeFS(base).BlockDevice && DescribeFS("/var/tmp").BlockDevice {
		base = "/var/tmp"
	}
	return base
}
