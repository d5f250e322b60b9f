package workloads

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// entries lists what is in dir, recursively, for leftover checks.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// assertEmpty fails if dir has anything in it.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	if e := entries(t, dir); len(e) > 0 {
		t.Errorf("left behind in %s: %v", dir, e)
	}
}

// resident counts the pages of path in the page cache with mincore(2) on a
// fresh mapping, independently of CacheResidency.
func resident(t *testing.T, path string) (cached, total int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_NONE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached, len(vec)
}

// requireDiskFS skips unless dir is on a filesystem that can drop pages.
func requireDiskFS(t *testing.T, dir string) {
	t.Helper()
	if n := fsName(dir); n == "tmpfs" || n == "ramfs" {
		t.Skipf("%s is on %s, which cannot drop file pages; set TMPDIR to a disk filesystem to test --cold", dir, n)
	}
}

// mountFS mounts a fresh filesystem of type fstype on a test directory, or skips when not root.
func mountFS(t *testing.T, fstype, opts string, flags uintptr) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to mount a %s; run the tests as root to cover this case", fstype)
	}
	dir := t.TempDir()
	if err := unix.Mount(fstype, dir, fstype, flags, opts); err != nil {
		t.Skipf("cannot mount %s on %s: %v", fstype, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return dir
}

func TestTempDirRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p, err := Prepare(Spec{Kind: KindSeqRead, FileSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Path, tmp+"/iopath-workload-") {
		t.Errorf("file %s is not in a new directory under $TMPDIR %s", p.Path, tmp)
	}
	fi, err := os.Stat(p.Path)
	if err != nil || fi.Size() != 1<<20 {
		t.Fatalf("prepared file: %v, %v", fi, err)
	}
	if err := p.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := p.Cleanup(); err != nil {
		t.Errorf("second Cleanup: %v", err)
	}
	assertEmpty(t, tmp)
}

func TestKeep(t *testing.T) {
	dir := t.TempDir()
	p, err := Prepare(Spec{Kind: KindSeqWrite, Dir: dir, Keep: true, FileSize: 8192})
	if err != nil {
		t.Fatal(err)
	}
	run(t, p)
	p.Cleanup()
	if fi, err := os.Stat(p.Path); err != nil || fi.Size() != 8192 {
		t.Errorf("--keep: file %v, %v; want it kept with 8192 bytes", fi, err)
	}
}

func TestNewFileRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data")
	p, err := Prepare(Spec{Kind: KindRandRead, File: path, FileSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != path {
		t.Errorf("Path %s, want %s", p.Path, path)
	}
	// Real data, not zeros or holes.
	b := make([]byte, 1<<20)
	if f, err := os.ReadFile(path); err != nil || bytes.Equal(f, b) {
		t.Errorf("prepared file is all zeros (or unreadable: %v)", err)
	}
	run(t, p)
	p.Cleanup()
	assertEmpty(t, dir)
}

func TestExistingFileUntouched(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mine")
	data := bytes.Repeat([]byte("iopath"), 5000) // 30000 bytes
	if err := os.WriteFile(path, data, 0o444); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, Spec{Kind: KindRandRead, File: path, BlockSize: 1000, Count: 100})
	if p.Spec.FileSize != int64(len(data)) {
		t.Errorf("FileSize %d, want the existing file's %d", p.Spec.FileSize, len(data))
	}
	run(t, p)
	p.Cleanup()
	got, err := os.ReadFile(path)
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Errorf("existing file changed or removed: %v", err)
	}

	_, err = Prepare(Spec{Kind: KindSeqRead, File: path, FileSize: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "smaller than the 1048576 bytes") || !strings.Contains(err.Error(), "--size 30000 or less") {
		t.Errorf("file smaller than --size: %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Error("a failed Prepare changed the existing file")
	}
}

func TestAppendToExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	os.WriteFile(path, []byte("12345"), 0o644)
	p := prepare(t, Spec{Kind: KindSmallWrite, File: path, BlockSize: 10, FileSize: 100, Count: 25})
	if p.Base != 5 {
		t.Errorf("append base %d, want the old size 5", p.Base)
	}
	run(t, p)
	p.Cleanup()
	got, _ := os.ReadFile(path)
	if len(got) != 105 || string(got[:5]) != "12345" {
		t.Errorf("after 25 10-byte appends wrapping at 100 bytes the file is %d bytes starting %q; want 105 starting 12345", len(got), got[:5])
	}
}

func TestPrealloc(t *testing.T) {
	p := prepare(t, Spec{Kind: KindSeqRead, FileSize: 1 << 20, Prealloc: true})
	var st unix.Stat_t
	if err := unix.Stat(p.Path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 1<<20 || st.Blocks*512 < 1<<20 {
		t.Errorf("--prealloc: size %d, %d bytes allocated; want 1 MiB of both", st.Size, st.Blocks*512)
	}
	if b, _ := os.ReadFile(p.Path); !bytes.Equal(b, make([]byte, 1<<20)) {
		t.Error("--prealloc file is not zeros")
	}
	run(t, p)
}

func TestCold(t *testing.T) {
	dir := t.TempDir()
	requireDiskFS(t, dir)
	p := prepare(t, Spec{Kind: KindSeqRead, Dir: dir, FileSize: 4 << 20, Cold: true})
	if cached, total := resident(t, p.Path); cached != 0 || total != 1024 {
		t.Fatalf("--cold: %d of %d pages cached after Prepare (mincore), want 0 of 1024", cached, total)
	}
	if p.Cache == nil || p.Cache.CachedPages != 0 || len(p.Notes) != 0 {
		t.Errorf("--cold residency %+v, notes %q", p.Cache, p.Notes)
	}
	r := run(t, p)
	if r.Kernel.ReadBytes < 4<<20 {
		t.Errorf("cold sequential read fetched %d bytes from storage, want at least the 4 MiB file", r.Kernel.ReadBytes)
	}

	warm := prepare(t, Spec{Kind: KindSeqRead, Dir: dir, FileSize: 4 << 20})
	if cached, total := resident(t, warm.Path); cached != total {
		t.Errorf("without --cold only %d of %d pages are cached", cached, total)
	}
	if r := run(t, warm); r.Kernel.ReadBytes != 0 {
		t.Errorf("cached read fetched %d bytes from storage, want 0", r.Kernel.ReadBytes)
	}
}

func TestCacheResidencyMethodsAgree(t *testing.T) {
	p := prepare(t, Spec{Kind: KindSeqRead, FileSize: 1 << 20})
	f, err := os.Open(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := CacheResidency(f, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if c, total := resident(t, p.Path); int64(c) != r.CachedPages || int64(total) != r.TotalPages {
		t.Errorf("%s says %d/%d cached, mincore says %d/%d", r.Method, r.CachedPages, r.TotalPages, c, total)
	}
}

// TestBadInputLeavesNothing checks that every refused workload leaves its directory empty.
func TestBadInputLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: KindSeqRead, BlockSize: 8192, FileSize: 4096}, "larger than the file size"},
		{Spec{Kind: KindRandRead, Direct: true, BlockSize: 1000, FileSize: 1 << 20}, "--bs 1000 does not fit O_DIRECT"},
		{Spec{Kind: KindRead1Byte, Direct: true}, "read-1byte cannot use --direct"},
		{Spec{Kind: KindSeqRead, Engine: "spdk"}, "unknown engine"},
		{Spec{Kind: "read"}, "unknown workload kind"},
	}
	for _, c := range cases {
		c.spec.Dir = dir
		_, err := Prepare(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.spec, err, c.want)
		}
		assertEmpty(t, dir)
	}
	if _, err := Prepare(Spec{Kind: KindSeqRead, Dir: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "does not exist: create it first") {
		t.Errorf("missing --dir: %v", err)
	}
	if _, err := Prepare(Spec{Kind: KindSeqRead, File: filepath.Join(dir, "missing", "f")}); err == nil || !strings.Contains(err.Error(), "choose another --file") {
		t.Errorf("--file in a missing directory: %v", err)
	}
	// issue 10: --dir /proc said "directory /proc does not exist".
	for _, s := range []Spec{{Kind: KindSeqRead, Dir: "/proc"}, {Kind: KindSeqRead, Dir: "/proc/self"}, {Kind: KindSeqRead, File: "/proc/iopath-test.dat"}} {
		if _, err := Prepare(s); err == nil || !strings.Contains(err.Error(), "is on proc, a kernel filesystem that holds no files one can create: choose a directory on a disk (or a tmpfs) with --") {
			t.Errorf("%+v: %v", s, err)
		}
	}
	assertEmpty(t, dir)
}

func TestDirectAlignment(t *testing.T) {
	dir := t.TempDir()
	if n := fsName(dir); n == "tmpfs" || n == "ramfs" {
		t.Skipf("%s is on %s; set TMPDIR to a disk filesystem to test O_DIRECT", dir, n)
	}
	p := prepare(t, Spec{Kind: KindRandRead, Direct: true, FileSize: 1 << 20, Count: 100, Dir: dir})
	r := run(t, p)
	if r.Kernel.ReadBytes < 100*4096 {
		t.Errorf("O_DIRECT reads fetched only %d bytes from storage for 100 4 KiB reads", r.Kernel.ReadBytes)
	}
	// An append that starts at a misaligned end of file.
	path := filepath.Join(dir, "odd")
	os.WriteFile(path, []byte("odd"), 0o644)
	_, err := Prepare(Spec{Kind: KindSeqWrite, Direct: true, File: path})
	if err == nil || !strings.Contains(err.Error(), "appends start at the end") || !strings.Contains(err.Error(), "offset 3") {
		t.Errorf("misaligned append start: %v", err)
	}
	// The rule names the device's value.
	_, err = Prepare(Spec{Kind: KindSeqRead, Direct: true, BlockSize: 100, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "multiples of") || !strings.Contains(err.Error(), "statx") && !strings.Contains(err.Error(), "logical block size") {
		t.Errorf("misaligned bs: %v", err)
	}
}

func TestReadOnlyDirNonRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions; TestReadOnlyMount covers read-only directories as root")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	_, err := Prepare(Spec{Kind: KindSeqRead, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "permission denied; choose a directory you can write to with --dir") {
		t.Errorf("read-only directory: %v", err)
	}
	assertEmpty(t, dir)
}
