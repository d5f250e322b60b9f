package main

// Test helpers that keep the integration tests' bodies as they were when
// this code lived in package main: thin wrappers over session/, demo/ and
// record/.

import (
	"errors"
	"os"
	"os/exec"

	"github.com/iopath/iopath/demo"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/workloads"
	"golang.org/x/sys/unix"
)

type workloadRecord = record.Workload

// demoRun is a demo.Run as the tests build it.
type demoRun struct {
	stats demo.CallStats
	rec   *record.Workload
}

func (r *demoRun) run() *demo.Run { return &demo.Run{Stats: r.stats, Rec: r.rec} }

func seqRandTable(a, b *demoRun) string { return demo.SeqRandTable(a.run(), b.run()) }
func seqRandWhy(a, b *demoRun) string   { return demo.SeqRandWhy(a.run(), b.run()) }
func directTable(a, b *demoRun) string  { return demo.DirectTable(a.run(), b.run()) }
func directWhy(a, b *demoRun) string    { return demo.DirectWhy(a.run(), b.run()) }
func freadTable(a, b *workloadRecord) string {
	return demo.FreadTable(a, b)
}
func freadWhy(a, b *workloadRecord, blksize int64) string { return demo.FreadWhy(a, b, blksize) }
func callStatsOf(calls []*tracer.Syscall) demo.CallStats  { return demo.CallStatsOf(calls) }
func fileRecords(recs []any, dev uint32, ino uint64) []*tracer.Syscall {
	return demo.FileRecords(recs, dev, ino)
}
func demoKdev(dev string) uint32 { return demo.Kdev(dev) }
func syscallCount(rep *workloads.Report, name string) int64 {
	return demo.SyscallCount(rep, name)
}

// fsInfo is the part of session.FS the tests read.
type fsInfo struct {
	fsType      string
	blockDevice bool
}

func describeFS(path string) fsInfo {
	fs := session.DescribeFS(path)
	return fsInfo{fsType: fs.Type, blockDevice: fs.BlockDevice}
}

func sysctlInt(name string) (int, error) { return session.SysctlInt(name) }

func inode(path string) (uint32, uint64, error) { return session.Inode(path) }

// evict drops a file's clean pages (posix_fadvise DONTNEED) and returns how
// many remain cached (mincore, through workloads.CacheResidency).
func evict(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	r, err := workloads.CacheResidency(f, fi.Size())
	return int(r.CachedPages), err
}

// exitStatus is the exit status in a Wait error (0 for nil, -1 if none).
func exitStatus(err error) int {
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
