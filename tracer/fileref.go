package tracer

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iopath/iopath/tracer/kernel"
)

// fileRef is how --wait-writeback opens a dirtied file again: by its file
// handle (name_to_handle_at(2), taken when its first record arrived), which
// follows renames, names no path and, carrying the inode's generation,
// opens nothing once the inode was freed; else, on filesystems without
// handles, by the name it had then.
type fileRef struct {
	dev       string
	ino       uint64
	handle    unix.FileHandle // when hasHandle
	hasHandle bool
	mountID   int
	path      string // "" when no usable name was found
	tries     int    // lookups done (resolveTries at most)
}

// resolveTries bounds the lookups of a file not found: each reads the
// process's fd and map_files directories.
const resolveTries = 3

// usable says whether the file can be asked about at all.
func (r *fileRef) usable() bool { return r.hasHandle || r.path != "" }

// fileState is what asking the kernel about one dirtied file gave.
type fileState int

const (
	fileCounted     fileState = iota // cachestat(2) answered
	fileDeleted                      // inode freed: its pages were dropped
	fileUnavailable                  // cannot be opened: no count
	fileNoCachestat                  // the kernel has no cachestat(2) (before 6.5)
)

// resolveFile finds a way to open inode ino of dev later: through the
// name the record gave (unless cut short: "..."), the process's open fd,
// or any of its fds or file mappings (/proc/PID/fd, /proc/PID/map_files)
// that is that inode (a path too deep for the record, a copy's output, a
// file mapped and closed).
func resolveFile(dev string, ino uint64, pid uint32, fd int64, path string) *fileRef {
	r := &fileRef{dev: dev, ino: ino}
	var cands []string
	if path != "" && !strings.HasPrefix(path, "...") {
		cands = append(cands, path)
	}
	proc := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	if fd >= 0 {
		cands = append(cands, proc+"/fd/"+strconv.FormatInt(fd, 10))
	}
	for _, sub := range []string{"/fd", "/map_files"} {
		if ents, err := os.ReadDir(proc + sub); err == nil {
			for _, e := range ents {
				cands = append(cands, proc+sub+"/"+e.Name())
			}
		}
	}
	for _, c := range cands {
		if !r.isInode(c) {
			continue
		}
		h, mnt, err := unix.NameToHandleAt(unix.AT_FDCWD, c, unix.AT_SYMLINK_FOLLOW)
		if err == nil && r.isInode(c) {
			r.handle, r.mountID, r.hasHandle = h, mnt, true
			return r
		}
		if c == path && r.path == "" {
			// No handles on this filesystem (EOPNOTSUPP): keep the name.
			r.path = path
		}
	}
	return r
}

// isInode says whether name (followed) is the file's inode now.
func (r *fileRef) isInode(name string) bool {
	var st unix.Stat_t
	return unix.Stat(name, &st) == nil && st.Ino == r.ino && kernel.Dev(kernel.UserDev(st.Dev)) == r.dev
}

// dirtyPages asks the kernel for the file's dirty plus under-writeback
// pages. mounts maps mount IDs to mount points (mountPoints).
func (r *fileRef) dirtyPages(mounts map[int]string) (uint64, fileState) {
	var fd int
	switch {
	case r.hasHandle:
		mp, ok := mounts[r.mountID]
		if !ok {
			return 0, fileUnavailable
		}
		mfd, err := unix.Open(mp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, fileUnavailable
		}
		fd, err = unix.OpenByHandleAt(mfd, r.handle, unix.O_RDONLY|unix.O_CLOEXEC)
		unix.Close(mfd)
		if errors.Is(err, unix.ESTALE) {
			return 0, fileDeleted
		}
		if err != nil {
			return 0, fileUnavailable
		}
	case r.path != "":
		var err error
		fd, err = unix.Open(r.path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return 0, fileUnavailable
		}
	default:
		return 0, fileUnavailable
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Ino != r.ino || kernel.Dev(kernel.UserDev(st.Dev)) != r.dev {
		return 0, fileUnavailable
	}
	var cs unix.Cachestat_t
	if err := unix.Cachestat(uint(fd), &unix.CachestatRange{}, &cs, 0); err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return 0, fileNoCachestat
		}
		return 0, fileUnavailable
	}
	return cs.Dirty + cs.Writeback, fileCounted
}

// mountPoints maps this process's mount IDs to their mount points
// (/proc/self/mountinfo: field 1 the ID, field 5 the mount point, octal
// escapes for space, tab, newline and backslash).
func mountPoints() map[int]string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	m := map[int]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			continue
		}
		id, err := strconv.Atoi(fs[0])
		if err != nil {
			continue
		}
		m[id] = unescapeMount(fs[4])
	}
	return m
}

// unescapeMount undoes mountinfo's \NNN octal escapes.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
