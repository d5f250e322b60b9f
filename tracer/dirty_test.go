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
	if n, ok := d.kernelDirty(); !ok || n != 0 {
		t.Errorf("synced file: kernel count %d, %v; want 0, true", n, ok)
	}
	for _, c := range []record.Syscall{
		{Syscall: "write", Path: ".../synced", Ino: st.Ino + 1, Dev: rec.Dev, DirtiedPages: 1},
		{Syscall: "copy_file_range", Path: p, Ino: st.Ino + 2, Dev: rec.Dev, DirtiedPages: 1},
		{Syscall: "write", Path: p, Ino: st.Ino + 3, Dev: rec.Dev, DirtiedPages: 1}, // not that inode
	} {
		var d dirtiedFiles
		d.note(&rec)
		d.note(&c)
		if n, ok := d.kernelDirty(); ok {
			t.Errorf("%s of %q ino %d: kernel count %d, want unavailable", c.Syscall, c.Path, c.Ino, n)
		}
	}
	// A record that dirtied nothing is not noted.
	var e dirtiedFiles
	e.watch(nil)(&record.Syscall{Syscall: "write", Path: ".../x", Ino: 9})
	if len(e.files) != 0 {
		t.Errorf("a write that dirtied nothing was noted: %v", e.files)
	}
}
