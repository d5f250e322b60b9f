package workloads

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// diskTempDir returns a test directory on a disk-backed filesystem (tmpfs
// has no major faults), or skips.
func diskTempDir(t *testing.T) string {
	t.Helper()
	for _, base := range []string{os.TempDir(), "/var/tmp"} {
		var st unix.Statfs_t
		if unix.Statfs(base, &st) == nil && st.Type != 0x01021994 && st.Type != 0x858458f6 {
			d, err := os.MkdirTemp(base, "mmap-test-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	t.Skip("no disk-backed directory")
	return ""
}

// Under MADV_RANDOM a fault reads only its own page: one pass over a cold
// 1 MiB mapping in 4 KiB ops reads the 256 pages in about as many major
// faults (measured: 255 on 6.18, 253 on Debian 6.1, 249-250 on 6.12, 233 on
// 7.2, the rest counted minor; Debian 6.1's read_bytes had 3 pages more
// than the file). Without advice the first fault reads around: 1 MiB per
// major fault.
func TestMmapRandomAdviceFaults(t *testing.T) {
	p := prepare(t, Spec{Kind: KindSeqRead, Engine: EngineMmap, FileSize: 1 << 20, Cold: true, Madvise: MadviseRandom, Dir: diskTempDir(t)})
	r := run(t, p)
	f := r.Faults
	if f == nil || r.Madvise != MadviseRandom {
		t.Fatalf("report without mmap faults or advice: %+v", r)
	}
	if f.Major < 200 || f.Major > 256 || r.Kernel == nil || r.Kernel.ReadBytes < 256*4096 || r.Kernel.ReadBytes > 256*4096+64<<10 || f.DiskBytesPerMajor > 2*4096 {
		t.Errorf("MADV_RANDOM over a cold 1 MiB mapping: %+v, kernel %+v", f, r.Kernel)
	}
	// Without advice the first fault reads around its page: fewer major
	// faults, more bytes each. Debian 7.2 counts none: the fault that reads
	// around ends VM_FAULT_RETRY and its redo finds the page (minor); the
	// kernel still read the file.
	q := prepare(t, Spec{Kind: KindSeqRead, Engine: EngineMmap, FileSize: 1 << 20, Cold: true, Dir: diskTempDir(t)})
	qr := run(t, q)
	g := qr.Faults
	readFile := qr.Kernel != nil && qr.Kernel.ReadBytes >= 256*4096
	if g.Major >= 256 || (g.Major == 0 && !readFile) || (g.Major > 0 && g.DiskBytesPerMajor <= 4096) {
		t.Errorf("read-around over a cold 1 MiB mapping: %+v, kernel %+v", g, qr.Kernel)
	}
	t.Logf("MADV_RANDOM: %+v; default: %+v; cache after cold %+v minflt %d", f, g, r.Cache, r.MinorFaults)
}
