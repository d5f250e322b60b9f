package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Each helper's condition holds inside a subtest and is undone when the
// subtest ends: checked from the parent.

func TestLoopExt4(t *testing.T) {
	NeedRoot(t)
	var l *LoopFS
	t.Run("mounted", func(t *testing.T) {
		l = LoopExt4(t, 64<<20)
		var sfs unix.Statfs_t
		if err := unix.Statfs(l.Dir, &sfs); err != nil || sfs.Type != unix.EXT4_SUPER_MAGIC {
			t.Fatalf("%s: statfs type %#x, %v; want ext4", l.Dir, sfs.Type, err)
		}
		if !OnBlockDevice(l.Dir) || BDIOf(t, l.Dir) != l.BDI() || l.Major != 7 {
			t.Errorf("%s on %s: bdi %s, want %s (major 7)", l.Dir, l.Dev, BDIOf(t, l.Dir), l.BDI())
		}
	})
	if l == nil {
		return
	}
	if _, err := os.Stat(l.Dir); err == nil {
		t.Errorf("mount point %s left behind", l.Dir)
	}
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(l.Dev), "loop/backing_file"))
	if err == nil {
		t.Errorf("%s still attached to %s", l.Dev, strings.TrimSpace(string(b)))
	}
}

// A loop device on a file of a frozen filesystem: attached, the filesystem
// frozen (a second freeze is refused as busy); afterwards thawed, detached
// and unmounted, whichever order the cleanups take.
func TestLoopDevFreeze(t *testing.T) {
	NeedRoot(t)
	var dev, dir string
	t.Run("frozen", func(t *testing.T) {
		l := LoopExt4(t, 64<<20)
		dir = l.Dir
		img := filepath.Join(l.Dir, "inner.img")
		if err := os.WriteFile(img, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, 8<<20); err != nil {
			t.Fatal(err)
		}
		var major uint32
		dev, major, _ = LoopDev(t, img)
		if b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop/backing_file")); err != nil || strings.TrimSpace(string(b)) != img || major != 7 {
			t.Errorf("%s (major %d): backing file %q, %v; want %s", dev, major, b, err, img)
		}
		Freeze(t, l.Dir)
		f, err := os.Open(l.Dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.IoctlSetInt(int(f.Fd()), 0xc0045877, 0); err != unix.EBUSY {
			t.Errorf("freezing %s again: %v, want EBUSY (frozen)", l.Dir, err)
		}
	})
	if dev == "" {
		return
	}
	if b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop/backing_file")); err == nil {
		t.Errorf("%s still attached to %s", dev, strings.TrimSpace(string(b)))
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("mount point %s left behind", dir)
	}
}

func TestSetSysctlRestoresPair(t *testing.T) {
	NeedRoot(t)
	before := map[string]string{}
	names := []string{"vm.dirty_bytes", "vm.dirty_ratio", "vm.dirty_expire_centisecs"}
	for _, n := range names {
		before[n] = Sysctl(t, n)
	}
	t.Run("set", func(t *testing.T) {
		SetSysctl(t, "vm.dirty_bytes", "67108864")
		SetSysctl(t, "vm.dirty_expire_centisecs", "150")
		if Sysctl(t, "vm.dirty_ratio") != "0" || Sysctl(t, "vm.dirty_bytes") != "67108864" {
			t.Errorf("dirty_bytes not in force: ratio %s, bytes %s", Sysctl(t, "vm.dirty_ratio"), Sysctl(t, "vm.dirty_bytes"))
		}
	})
	for _, n := range names {
		if got := Sysctl(t, n); got != before[n] {
			t.Errorf("%s = %s after the subtest, was %s", n, got, before[n])
		}
	}
}

func TestThrottleBDIRestores(t *testing.T) {
	l := LoopExt4(t, 64<<20)
	before := map[string]string{}
	// max_bytes is not compared: it is max_ratio_fine times the machine's
	// dirty limit, which moves with free memory.
	for _, f := range []string{"strict_limit", "max_ratio_fine"} {
		b, err := os.ReadFile(filepath.Join(l.BDI(), f))
		if err != nil {
			t.Skipf("no %s: %v", f, err)
		}
		before[f] = string(b)
	}
	t.Run("throttled", func(t *testing.T) {
		ThrottleBDI(t, l.BDI(), 64<<10)
		b, _ := os.ReadFile(filepath.Join(l.BDI(), "strict_limit"))
		if strings.TrimSpace(string(b)) != "1" {
			t.Errorf("strict_limit %q", b)
		}
	})
	for f, v := range before {
		if b, _ := os.ReadFile(filepath.Join(l.BDI(), f)); string(b) != v {
			t.Errorf("%s = %q after the subtest, was %q", f, b, v)
		}
	}
}

func TestColdFile(t *testing.T) {
	NeedRoot(t) // posix_fadvise works unprivileged, but the disk IO disturbs privileged runs
	p := ColdFile(t, DiskDir(t), "cold", 1<<20)
	if n := CachedPages(t, p); n != 0 {
		t.Fatalf("%d pages cached", n)
	}
	if _, err := os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
	if n := CachedPages(t, p); n != 256 {
		t.Errorf("after reading 1 MiB: %d pages cached, want 256", n)
	}
}
