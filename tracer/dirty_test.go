package tracer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/kernel"
	"golang.org/x/sys/unix"
)

// The kernel's count --wait-writeback falls back on: a synced file has no
// dirty page; a file iopath cannot name (path cut short, a copy's output,
// an inode the path no longer is) makes the count unavailable, never 0.
func TestDirtiedFilesKernelCount(t *testing.T) {
	p := filepath.Join(t.TempDir(), "synced")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 8192)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	var cs unix.Cachestat_t
	fd, _ := unix.Open(p, unix.O_RDONLY, 0)
	err = unix.Cachestat(uint(fd), &unix.CachestatRange{}, &cs, 0)
	unix.Close(fd)
	if err != nil {
		t.Skipf("cachestat(2) unavailable (Linux 6.5+): %v", err)
	}
	rec := record.Syscall{Syscall: "write", Path: p, Ino: st.Ino, Dev: kernel.Dev(kernel.UserDev(st.Dev)), DirtiedPages: 2}
	var d dirtiedFiles
	var got []any
	out := d.watch(func(r any) { got = append(got, r) })
	out(&rec)
	if len(got) != 1 {
		t.Fatalf("watch forwarded %d records, want 1", len(got))
	}
	if n, ok := d.kernelDirty(); !ok || n.Pages != 0 || n.Files != 1 || n.Unavailable != 0 {
		t.Errorf("synced file: kernel count %+v, %v; want 0 pages of 1 file, true", n, ok)
	}
	// A file iopath cannot open again is unavailable: in no count, not 0
	// pages of a file said written.
	for _, c := range []record.Syscall{
		{Syscall: "write", Path: ".../synced", Ino: st.Ino + 1, Dev: rec.Dev, DirtiedPages: 1},
		{Syscall: "copy_file_range", Path: p, Ino: st.Ino + 2, Dev: rec.Dev, DirtiedPages: 1, OutIno: st.Ino + 2, OutDev: rec.Dev},
		{Syscall: "write", Path: p, Ino: st.Ino + 3, Dev: rec.Dev, DirtiedPages: 1}, // not that inode
	} {
		var d dirtiedFiles
		w := d.watch(nil)
		w(&rec)
		w(&c)
		if n, ok := d.kernelDirty(); !ok || n.Files != 2 || n.Unavailable != 1 {
			t.Errorf("%s of %q ino %d: kernel count %+v, %v; want 1 of 2 files unavailable", c.Syscall, c.Path, c.Ino, n, ok)
		}
	}
	// A record that dirtied nothing is not noted.
	var e dirtiedFiles
	e.watch(nil)(&record.Syscall{Syscall: "write", Path: ".../x", Ino: 9})
	if len(e.files) != 0 {
		t.Errorf("a write that dirtied nothing was noted: %v", e.files)
	}
}

// A noted file is found again after a rename (by its file handle), and a
// deleted one counts as dropped, not as a count that cannot fall.
func TestDirtiedFilesRenameDelete(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	if err := os.WriteFile(p, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	if _, _, err := unix.NameToHandleAt(unix.AT_FDCWD, p, 0); err != nil {
		t.Skipf("no file handles on %s: %v", dir, err)
	}
	var d dirtiedFiles
	d.watch(nil)(&record.Syscall{Syscall: "write", Path: p, Ino: st.Ino, Dev: kernel.Dev(kernel.UserDev(st.Dev)), DirtiedPages: 2})
	q := filepath.Join(dir, "b")
	if err := os.Rename(p, q); err != nil {
		t.Fatal(err)
	}
	n, ok := d.kernelDirty()
	if !ok {
		t.Skip("cachestat(2) unavailable (Linux 6.5+)")
	}
	fd, _ := unix.Open(q, unix.O_RDONLY, 0)
	var cs unix.Cachestat_t
	_ = unix.Cachestat(uint(fd), &unix.CachestatRange{}, &cs, 0)
	unix.Close(fd)
	if n.Unavailable != 0 || n.Pages != cs.Dirty+cs.Writeback {
		t.Errorf("renamed file: %+v; want its cachestat count %d", n, cs.Dirty+cs.Writeback)
	}
	if err := os.Remove(q); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.kernelDirty(); n.Deleted != 1 || n.Pages != 0 || n.Unavailable != 0 {
		t.Errorf("deleted file: %+v; want 1 deleted, 0 pages", n)
	}
}

// A file renamed or deleted before its record was read (the writer gone)
// is found by the handle built from its inode number and the generation
// the engine knows, where the filesystem's handles are those.
func TestDirtiedFilesByGeneration(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	if err := os.WriteFile(p, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	gen, gerr := unix.IoctlGetUint32(fd, kernel.FSIocGetversion)
	var st unix.Stat_t
	serr := unix.Fstat(fd, &st)
	unix.Close(fd)
	if gerr != nil || serr != nil {
		t.Skipf("no i_generation on %s: %v %v", dir, gerr, serr)
	}
	dev := kernel.Dev(kernel.UserDev(st.Dev))
	if _, _, ok := inoGenHandle(dev, st.Ino, gen); !ok {
		t.Skipf("the filesystem of %s has no FILEID_INO32_GEN handles", dir)
	}
	q := filepath.Join(dir, "b")
	if err := os.Rename(p, q); err != nil {
		t.Fatal(err)
	}
	d := dirtiedFiles{gen: func(uint32, uint64) uint32 { return gen }}
	// The record names the old path; pid 0 has no /proc entry to look in.
	d.watch(nil)(&record.Syscall{Syscall: "write", Path: p, Ino: st.Ino, Dev: dev, Fd: 3, DirtiedPages: 2})
	n, ok := d.kernelDirty()
	if !ok {
		t.Skip("cachestat(2) unavailable (Linux 6.5+)")
	}
	if n.Files != 1 || n.Unavailable != 0 || n.Deleted != 0 {
		t.Errorf("renamed before noting: %+v; want the file counted", n)
	}
	// The wrong generation opens nothing: a reused inode number is another file.
	w := dirtiedFiles{gen: func(uint32, uint64) uint32 { return gen + 1 }}
	w.watch(nil)(&record.Syscall{Syscall: "write", Path: p, Ino: st.Ino, Dev: dev, Fd: 3, DirtiedPages: 2})
	if n, _ := w.kernelDirty(); n.Deleted != 1 {
		t.Errorf("another generation: %+v; want it deleted (ESTALE)", n)
	}
	if err := os.Remove(q); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.kernelDirty(); n.Deleted != 1 || n.Pages != 0 {
		t.Errorf("deleted: %+v; want 1 deleted, 0 pages", n)
	}
}
