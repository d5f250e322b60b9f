package main

// Test helpers that keep the integration tests' bodies as they were when
// this code lived in package main: thin wrappers over session/, demo/ and
// record/.

import (
	"errors"
	"os/exec"

	"github.com/iopath/iopath/demo"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/session"
	"github.com/iopath/iopath/workloads"
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
func callStatsOf(calls []*record.Syscall) demo.CallStats  { return demo.CallStatsOf(calls) }
func fileRecords(recs []any, dev uint32, ino uint64) []*record.Syscall {
	return demo.FileRecords(recs, dev, ino)
}
func demoKdev(dev string) uint32 { return demo.Kdev(dev) }
func syscallCount(rep *workloads.Report, name string) int64 {
	return demo.SyscallCount(rep, name)
}

func inode(path string) (uint32, uint64, error) { return session.Inode(path) }

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
