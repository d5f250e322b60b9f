package tracer

import (
	"bufio"
	"bytes"
	"encoding/binary"
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
//
// When none of them is the inode any more (renamed, deleted or the process
// gone before its records were read) and the engine knows the inode's
// generation, the handle is built from inode number and generation
// (inoGenHandle), where the filesystem's handles are that.
func resolveFile(dev string, ino uint64, gen uint32, pid uint32, fd int64, path string) *fileRef {
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
	if gen != 0 {
		if mnt, h, ok := inoGenHandle(dev, ino, gen); ok {
			r.handle, r.mountID, r.hasHandle = h, mnt, true
		}
	}
	return r
}

// fileIDIno32Gen is FILEID_INO32_GEN (the kernel's export operations header): a handle
// of a 32-bit inode number and its generation, the default encoding
// (generic_encode_ino32_fh: ext2/3/4, among others).
const fileIDIno32Gen = 1

// inoGenHandle builds the file handle of inode ino, generation gen, on
// dev, if a mount of dev encodes its handles as FILEID_INO32_GEN: checked
// on the mount's root, whose own handle must be exactly its inode number
// and generation. Returns the mount ID with it.
func inoGenHandle(dev string, ino uint64, gen uint32) (int, unix.FileHandle, bool) {
	if ino > 0xffffffff {
		return 0, unix.FileHandle{}, false
	}
	for id, m := range mountPoints() {
		if m.dev != dev {
			continue
		}
		fd, err := unix.Open(m.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		rootGen, gerr := unix.IoctlGetUint32(fd, kernel.FSIocGetversion)
		serr := unix.Fstat(fd, &st)
		unix.Close(fd)
		h, mnt, err := unix.NameToHandleAt(unix.AT_FDCWD, m.path, 0)
		if gerr != nil || serr != nil || err != nil || mnt != id || h.Type() != fileIDIno32Gen ||
			!bytes.Equal(h.Bytes(), ino32Gen(st.Ino, rootGen)) {
			continue
		}
		return id, unix.NewFileHandle(fileIDIno32Gen, ino32Gen(ino, gen)), true
	}
	return 0, unix.FileHandle{}, false
}

// ino32Gen is a FILEID_INO32_GEN handle's bytes: inode number and
// generation, 32 bits each, in the CPU's byte order.
func ino32Gen(ino uint64, gen uint32) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(ino))
	return binary.NativeEndian.AppendUint32(b, gen)
}

// isInode says whether name (followed) is the file's inode now.
func (r *fileRef) isInode(name string) bool {
	var st unix.Stat_t
	return unix.Stat(name, &st) == nil && st.Ino == r.ino && kernel.Dev(kernel.UserDev(st.Dev)) == r.dev
}

// dirtyPages asks the kernel for the file's dirty plus under-writeback
// pages. mounts are this process's (mountPoints).
func (r *fileRef) dirtyPages(mounts map[int]mount) (uint64, fileState) {
	var fd int
	switch {
	case r.hasHandle:
		mp, ok := mounts[r.mountID]
		if !ok {
			return 0, fileUnavailable
		}
		mfd, err := unix.Open(mp.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
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

// mount is one line of /proc/self/mountinfo.
type mount struct {
	dev  string // "major:minor", as records name devices
	path string // mount point
}

// mountPoints maps this process's mount IDs to their mounts
// (/proc/self/mountinfo: field 1 the ID, 3 the device, 5 the mount point,
// octal escapes for space, tab, newline and backslash).
func mountPoints() map[int]mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	m := map[int]mount{}
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
		m[id] = mount{dev: fs[2], path: unescapeMount(fs[4])}
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
