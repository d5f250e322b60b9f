package main

// Privileged integration tests of the write story on this kernel.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
)

// sysctlDuration reads a vm.*_centisecs sysctl as a duration.
func sysctlDuration(t *testing.T, name string) time.Duration {
	t.Helper()
	return time.Duration(testutil.SysctlInt(t, name)) * 10 * time.Millisecond
}

// Must-be-true 1: a 1-byte buffered write to a new file is persisted by a
// kworker with reason periodic, dirty_expire_centisecs (+ up to one
// dirty_writeback_centisecs interval) after the write, in one 4 KiB bio.
// Quick by default (expire shortened to 2 s); IOPATH_SLOW_TESTS=1 runs it
// with the default sysctls (measured here: 34.8 s).
func TestWriteOneBytePeriodic(t *testing.T) {
	needRoot(t)
	if os.Getenv("IOPATH_SLOW_TESTS") == "" {
		testutil.SetSysctl(t, "vm.dirty_expire_centisecs", "200")
	}
	// Another process calling sync(2), or dirtying enough memory to start
	// background writeback, makes the reason "sync" or "background"
	// (correctly); try again then, at most twice.
	for try := 1; ; try++ {
		reason := oneBytePeriodic(t)
		if (reason != "sync" && reason != "background") || try == 3 {
			if reason != "periodic" {
				t.Errorf("writeback reason %q, want periodic", reason)
			}
			return
		}
		t.Logf("try %d: another process's activity wrote the page (reason %s); again", try, reason)
	}
}

func oneBytePeriodic(t *testing.T) string {
	t.Helper()
	expire, interval := sysctlDuration(t, "vm.dirty_expire_centisecs"), sysctlDuration(t, "vm.dirty_writeback_centisecs")
	f := filepath.Join(diskDir(t), "one-byte")
	tr := traceCmd(t, "--wait-writeback", (expire + interval + 30*time.Second).String(), "--", "sh", "-c", "printf x > "+f)
	ino := inoOf(t, f)
	calls := tr.forIno(ino)
	if len(calls) != 1 || calls[0].Syscall != "write" || calls[0].DirtiedPages != 1 || len(calls[0].Bios) != 0 {
		t.Fatalf("write records %+v", calls)
	}
	var p []record.Persisted
	for _, x := range tr.persisted {
		if x.OpID == calls[0].OpID {
			p = append(p, x)
		}
	}
	if len(p) != 1 {
		t.Fatalf("persisted records for the write: %+v (stderr %s)", p, tr.stderr)
	}
	if p[0].Reason == "sync" || p[0].Reason == "background" {
		return string(p[0].Reason)
	}
	d := time.Duration(p[0].DirtyToDiskNs)
	if !strings.HasPrefix(p[0].Worker, "kworker/") || p[0].Pages != 1 || p[0].Outcome != "written" {
		t.Errorf("persisted %+v", p[0])
	}
	if d < expire || d > expire+interval+time.Second {
		t.Errorf("dirty to disk %v, want within [%v, %v]", d, expire, expire+interval+time.Second)
	}
	var bios []record.Bio
	for _, w := range tr.wbs {
		if w.Ino == ino {
			bios = append(bios, w.Bios...)
		}
	}
	if len(bios) != 1 || bios[0].Bytes != 4096 || !strings.HasPrefix(bios[0].Rwbs, "W") || bios[0].CompleteNs != p[0].PersistedNs {
		t.Errorf("writeback bios %+v", bios)
	}
	t.Logf("1-byte write persisted %v after the write by %s (%s), bio %+v", d, p[0].Worker, p[0].Reason, bios)
	return string(p[0].Reason)
}

// Must-be-true 2: the same write followed by fsync is persisted inside the fsync call.
func TestWriteOneByteFsync(t *testing.T) {
	needRoot(t)
	f := filepath.Join(diskDir(t), "one-byte-fsync")
	tr := traceCmd(t, "--", "dd", "if=/dev/zero", "of="+f, "bs=1", "count=1", "conv=fsync")
	calls := tr.forIno(inoOf(t, f))
	var write, fsync *record.Syscall
	for i := range calls {
		switch calls[i].Syscall {
		case "write":
			write = &calls[i]
		case "fsync":
			fsync = &calls[i]
		}
	}
	if write == nil || fsync == nil {
		t.Fatalf("records %+v", calls)
	}
	var p *record.Persisted
	for i := range tr.persisted {
		if tr.persisted[i].OpID == write.OpID {
			p = &tr.persisted[i]
		}
	}
	if p == nil || p.Reason != "fsync" || p.ByOpID != fsync.OpID || p.PersistedNs > fsync.TimeNs+fsync.DurationNs || p.PersistedNs < fsync.TimeNs {
		t.Fatalf("persisted %+v, fsync %+v", p, fsync)
	}
	data := 0
	for _, b := range fsync.Bios {
		if b.Kind == "data" && b.Bytes == 4096 {
			data++
		}
	}
	if data != 1 {
		t.Errorf("fsync bios %+v: want one 4 KiB data bio", fsync.Bios)
	}
}

// Must-be-true 3: a writer that dirties pages faster than writeback cleans
// them is throttled in balance_dirty_pages, and every page it dirtied is seen
// written. The condition is made, not hoped for (a fast disk kept up with a
// 512 MiB dd under a 32 MiB global dirty limit, and the test failed): the file
// is on a device of its own whose bdi has a strict 64 KiB dirty limit
// (testutil.ThrottleBDI), so the writer is paused whatever the disk's speed
// and whatever other processes write. Linux 6.2+ (bdi strict_limit knob).
func TestWriteThrottled(t *testing.T) {
	needRoot(t)
	dir := throttledDir(t, 64<<10)
	// The tail below the bdi's background limit waits for periodic writeback.
	testutil.SetSysctl(t, "vm.dirty_expire_centisecs", "100")
	const mib = 64
	f := filepath.Join(dir, "big")
	tr := traceCmd(t, "--wait-writeback", "60s", "--", "dd", "if=/dev/zero", "of="+f, "bs=1M", fmt.Sprint("count=", mib))
	calls := tr.forIno(inoOf(t, f))
	planned := tr.summary.Attach["balance_dirty_pages"] == "tracepoint"
	var dirtied, throttled uint64
	for _, c := range calls {
		if c.Syscall != "write" {
			continue
		}
		dirtied += uint64(c.DirtiedPages)
		if c.ThrottleNs > 0 {
			throttled++
		}
		// The kernel plans each pause up to MAX_PAUSE (200 ms): the
		// tracepoint reports that plan; fentry/kprobe measure the sleep,
		// which also holds the wait for a CPU after it (384 ms once on
		// the 6.12 VM under a loaded host): bounded only where planned.
		if planned && c.ThrottleMaxPauseNs > uint64(200*time.Millisecond) {
			t.Errorf("a planned pause of %v > 200 ms", time.Duration(c.ThrottleMaxPauseNs))
		}
	}
	if throttled == 0 {
		t.Errorf("no write call was throttled")
	}
	background := 0
	for _, w := range tr.wbs {
		if w.Reason == "background" {
			background++
		}
	}
	if background == 0 {
		t.Errorf("no background writeback seen")
	}
	var persisted uint64
	for _, p := range tr.persisted {
		if p.Outcome == "written" {
			persisted += uint64(p.Pages)
		}
	}
	// Everything dirtied must be seen written: at most a few pages may still
	// be in flight when --wait-writeback gives up.
	sum := tr.summary
	if persisted+sum.DirtyPending+sum.DirtyUnseen != dirtied || dirtied < mib<<8 || sum.DirtyPending > 256 {
		t.Errorf("dirtied %d, persisted %d + still dirty %d + written unseen %d", dirtied, persisted, sum.DirtyPending, sum.DirtyUnseen)
	}
	if sum.DirtyUnseen > 2048 {
		// Seen a few times under heavy IO from other processes: one 8 MiB
		// writeback bio claimed in BPF but never joined in userspace (open
		// issue; IOPATH_DEBUG_EVENTS logs the raw events). iopath reports
		// such pages as written-unseen instead of pending.
		t.Errorf("%d pages written unseen (missed runs %v)", sum.DirtyUnseen, sum.MissedRuns)
	}
	if sum.DirtyUnseen > 0 {
		t.Logf("written unseen %d pages; missed runs %v", sum.DirtyUnseen, sum.MissedRuns)
	}
	got := map[uint64]uint64{}
	for _, p := range tr.persisted {
		got[p.OpID] += uint64(p.Pages)
	}
	for _, c := range calls {
		if c.Syscall == "write" && uint64(c.DirtiedPages) != got[c.OpID] {
			t.Logf("write at %d MiB: dirtied %d %v, persisted %d", c.Offset>>20, c.DirtiedPages, c.DirtiedRanges, got[c.OpID])
		}
	}
	t.Logf("diagnostics %v", tr.summary.Diagnostics)
	t.Logf("summary: truncations %v, evictions %v, incomplete %d, unattributed %d, writeback records %d", tr.summary.Truncations, tr.summary.MapEvictions, tr.summary.IncompleteBios, tr.summary.UnattributedBios, len(tr.wbs))
	if len(tr.wbs) > 0 {
		t.Logf("first writeback record %+v", tr.wbs[0])
	}
	t.Logf("%d MiB dd: %d writes throttled, %d background writeback bios, %d pages persisted, %d pending", mib, throttled, background, persisted, tr.summary.DirtyPending)
}

// throttledDir returns a directory whose writers are throttled after
// maxBytes of dirty pages: an ext4 filesystem on a loop device of its own
// with a throttled bdi. Under scripts/vmtest.sh (IOPATH_VM set; no loop
// module or mkfs.ext4 in the guest) the guest's test disk is throttled
// instead: nothing else writes to it.
func throttledDir(t *testing.T, maxBytes int64) string {
	t.Helper()
	if os.Getenv("IOPATH_VM") != "" {
		d := diskDir(t)
		testutil.ThrottleBDI(t, testutil.BDIOf(t, d), maxBytes)
		return d
	}
	l := testutil.LoopExt4(t, 256<<20)
	testutil.ThrottleBDI(t, l.BDI(), maxBytes)
	return l.Dir
}

// Must-be-true 5: --wait-writeback with nothing to wait for, and tmpfs, said plainly.
func TestWaitWritebackNothing(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	tr := traceCmd(t, "--wait-writeback", "5s", "--", "true")
	if !strings.Contains(tr.stderr, "left no dirty pages") || tr.code != 0 {
		t.Errorf("no writes: exit %d, stderr %q", tr.code, tr.stderr)
	}
	f := filepath.Join("/dev/shm", "iopath-test-tmpfs")
	defer os.Remove(f)
	tr = traceCmd(t, "--wait-writeback", "5s", "--", "sh", "-c", "printf x > "+f)
	if !strings.Contains(tr.stderr, "memory-only filesystem (tmpfs): nothing is ever written back") {
		t.Errorf("tmpfs: stderr %q", tr.stderr)
	}
	calls := tr.forIno(inoOf(t, f))
	if len(calls) != 1 || calls[0].FS != "tmpfs" || calls[0].DirtiedPages != 0 {
		t.Errorf("tmpfs write record %+v", calls)
	}
}
