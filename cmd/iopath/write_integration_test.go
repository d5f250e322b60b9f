package main

// Privileged integration tests of the write story on this kernel.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/record"
	"golang.org/x/sys/unix"
)

// vmSysctls saves the dirty-page sysctls and restores them when the test
// ends, pass or fail. Each bytes/ratio pair is restored through whichever
// of the two was in force (writing 0 to *_bytes is refused; writing the
// ratio clears the bytes value and vice versa).
func vmSysctls(t *testing.T) {
	t.Helper()
	names := []string{"dirty_background_bytes", "dirty_background_ratio", "dirty_bytes", "dirty_ratio",
		"dirty_expire_centisecs", "dirty_writeback_centisecs"}
	old := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile("/proc/sys/vm/" + n)
		if err != nil {
			t.Skipf("vm sysctls unreadable: %v", err)
		}
		old[n] = strings.TrimSpace(string(b))
	}
	t.Cleanup(func() {
		put := func(n string) { os.WriteFile("/proc/sys/vm/"+n, []byte(old[n]), 0o644) }
		for _, pair := range [][2]string{{"dirty_background_bytes", "dirty_background_ratio"}, {"dirty_bytes", "dirty_ratio"}} {
			if old[pair[0]] != "0" {
				put(pair[0])
			} else {
				put(pair[1])
			}
		}
		put("dirty_expire_centisecs")
		put("dirty_writeback_centisecs")
		for _, n := range names {
			b, _ := os.ReadFile("/proc/sys/vm/" + n)
			if got := strings.TrimSpace(string(b)); got != old[n] {
				t.Errorf("sysctl vm.%s not restored: %s, was %s", n, got, old[n])
			}
		}
	})
}

func setVM(t *testing.T, name, value string) {
	t.Helper()
	if err := os.WriteFile("/proc/sys/vm/"+name, []byte(value), 0o644); err != nil {
		t.Fatalf("setting vm.%s=%s: %v", name, value, err)
	}
}

func sysctlSeconds(t *testing.T, name string) time.Duration {
	t.Helper()
	v, err := sysctlInt("vm/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(v) * 10 * time.Millisecond
}

// Must-be-true 1: a 1-byte buffered write to a new file is persisted by a
// kworker with reason periodic, dirty_expire_centisecs (+ up to one
// dirty_writeback_centisecs interval) after the write, in one 4 KiB bio.
// Quick by default (expire shortened to 2 s); IOPATH_SLOW_TESTS=1 runs it
// with the default sysctls (measured here: 34.8 s).
func TestWriteOneBytePeriodic(t *testing.T) {
	needRoot(t)
	vmSysctls(t)
	if os.Getenv("IOPATH_SLOW_TESTS") == "" {
		setVM(t, "dirty_expire_centisecs", "200")
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
	expire, interval := sysctlSeconds(t, "dirty_expire_centisecs"), sysctlSeconds(t, "dirty_writeback_centisecs")
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

// Must-be-true 3: throttling with dirty_bytes=32 MiB while dd writes 512 MiB.
func TestWriteThrottled(t *testing.T) {
	needRoot(t)
	vmSysctls(t)
	setVM(t, "dirty_background_bytes", "16777216")
	setVM(t, "dirty_bytes", "33554432")
	setVM(t, "dirty_expire_centisecs", "100") // the tail below the background limit
	dir := diskDir(t)
	var st = describeFS(dir)
	if !st.blockDevice {
		t.Skip("needs a disk-backed directory")
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil || sfs.Bavail*uint64(sfs.Bsize) < 640<<20 {
		t.Skipf("needs 640 MiB free in %s for a 512 MiB file", dir)
	}
	f := filepath.Join(dir, "big")
	tr := traceCmd(t, "--wait-writeback", "60s", "--", "dd", "if=/dev/zero", "of="+f, "bs=1M", "count=512")
	calls := tr.forIno(inoOf(t, f))
	var dirtied, throttled uint64
	for _, c := range calls {
		if c.Syscall != "write" {
			continue
		}
		dirtied += uint64(c.DirtiedPages)
		if c.ThrottleNs > 0 {
			throttled++
		}
		if c.ThrottleMaxPauseNs > uint64(200*time.Millisecond) {
			t.Errorf("a pause of %v > 200 ms", time.Duration(c.ThrottleMaxPauseNs))
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
	if persisted+sum.DirtyPending+sum.DirtyUnseen != dirtied || dirtied < 131072 || sum.DirtyPending > 256 {
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
	t.Logf("512 MiB dd: %d writes throttled, %d background writeback bios, %d pages persisted, %d pending", throttled, background, persisted, tr.summary.DirtyPending)
}

// Must-be-true 5: --wait-writeback with nothing to wait for, and tmpfs, said plainly.
func TestWaitWritebackNothing(t *testing.T) {
	needRoot(t)
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
