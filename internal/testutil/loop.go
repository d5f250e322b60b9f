package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// LoopFS is an ext4 filesystem on a loop device that belongs to one test.
type LoopFS struct {
	Dir   string // mount point
	Dev   string // /dev/loopN
	Major uint32
	Minor uint32
}

// BDI returns the sysfs directory of the loop device's bdi (dirty-page
// limits, /sys/class/bdi/7:N).
func (l *LoopFS) BDI() string { return fmt.Sprintf("/sys/class/bdi/%d:%d", l.Major, l.Minor) }

// LoopExt4 makes a sparse image of size bytes in a disk-backed directory,
// attaches it to a free loop device (autoclear: the kernel detaches it when
// its last user goes), makes an ext4 filesystem on it (inode tables and
// journal initialized now, so no ext4lazyinit IO runs during the test) and
// mounts it. Everything is undone when the test ends. Skips when the machine
// has no loop devices or no mkfs.ext4 (scripts/setup.sh installs e2fsprogs).
func LoopExt4(t testing.TB, size int64) *LoopFS {
	t.Helper()
	NeedRoot(t)
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("needs mkfs.ext4 for a test filesystem (apt-get install e2fsprogs; scripts/setup.sh does)")
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no loop devices: %v", err)
	}
	defer ctl.Close()

	img := filepath.Join(DiskDir(t), "ext4.img")
	backing, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close() // the loop device holds its own reference
	if err := backing.Truncate(size); err != nil {
		t.Fatal(err)
	}

	l := &LoopFS{}
	// The mount is gone when the device is detached (cleanups run
	// last-in first-out).
	l.Dev, l.Major, l.Minor = loopOn(t, ctl, backing)

	if out, err := exec.Command(mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", l.Dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v: %s", l.Dev, err, out)
	}
	l.Dir = t.TempDir()
	if err := unix.Mount(l.Dev, l.Dir, "ext4", 0, ""); err != nil {
		t.Fatalf("mounting %s on %s: %v", l.Dev, l.Dir, err)
	}
	t.Cleanup(func() { unmount(t, l.Dir) })
	return l
}

// loopOn binds backing to a free loop device, detached when the test
// ends, and returns the device (/dev/loopN) and its number.
func loopOn(t testing.TB, ctl, backing *os.File) (dev string, major, minor uint32) {
	t.Helper()
	dev, loop := attachLoop(t, ctl, backing)
	t.Cleanup(func() {
		if err := unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
			t.Errorf("detaching %s: %v", dev, err)
		}
		loop.Close()
	})
	var st unix.Stat_t
	if err := unix.Fstat(int(loop.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return dev, unix.Major(st.Rdev), unix.Minor(st.Rdev)
}

// LoopDev attaches a loop device to the existing file path (no
// filesystem made; autoclear) and returns it (/dev/loopN) with its number;
// it is detached when the test ends. Skips without loop devices.
func LoopDev(t testing.TB, path string) (dev string, major, minor uint32) {
	t.Helper()
	NeedRoot(t)
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no loop devices: %v", err)
	}
	defer ctl.Close()
	backing, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close() // the loop device holds its own reference
	return loopOn(t, ctl, backing)
}

// Freeze freezes the filesystem mounted at dir (the FIFREEZE ioctl, as
// fsfreeze(8)): writes to it wait until it is thawed. It returns thaw,
// which the end of the test also runs; thawing twice is harmless.
func Freeze(t testing.TB, dir string) (thaw func()) {
	t.Helper()
	NeedRoot(t)
	th, err := FreezeFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	thaw = func() {
		if err := th(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(thaw)
	return thaw
}

// FreezeFS is Freeze for a goroutine other than the test's (no t.Fatal):
// it freezes the filesystem mounted at dir and returns its thaw, which
// does nothing after the first call.
func FreezeFS(dir string) (thaw func() error, err error) {
	// FIFREEZE and FITHAW: _IOWR('X', 119, int) and _IOWR('X', 120, int)
	// (include/uapi/linux/fs.h); golang.org/x/sys/unix has no name for them.
	const fiFreeze, fiThaw = 0xc0045877, 0xc0045878
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlSetInt(int(f.Fd()), fiFreeze, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("freezing %s: %w", dir, err)
	}
	thawed := false
	return func() error {
		if thawed {
			return nil
		}
		thawed = true
		defer f.Close()
		if err := unix.IoctlSetInt(int(f.Fd()), fiThaw, 0); err != nil {
			return fmt.Errorf("thawing %s: %w", dir, err)
		}
		return nil
	}, nil
}

// attachLoop binds backing to a free loop device, retrying when another
// process takes the same free device first.
func attachLoop(t testing.TB, ctl, backing *os.File) (string, *os.File) {
	t.Helper()
	for try := 0; try < 10; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			t.Fatalf("LOOP_CTL_GET_FREE: %v", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		loop, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			t.Fatalf("opening %s: %v", dev, err)
		}
		if err := unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_SET_FD, int(backing.Fd())); err != nil {
			loop.Close()
			if errors.Is(err, unix.EBUSY) {
				continue // taken between GET_FREE and SET_FD
			}
			t.Fatalf("LOOP_SET_FD on %s: %v", dev, err)
		}
		info := unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}
		copy(info.File_name[:], backing.Name())
		if err := unix.IoctlLoopSetStatus64(int(loop.Fd()), &info); err != nil {
			unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_CLR_FD, 0)
			loop.Close()
			t.Fatalf("LOOP_SET_STATUS64 on %s: %v", dev, err)
		}
		return dev, loop
	}
	t.Fatal("no free loop device after 10 tries")
	return "", nil
}

// unmount unmounts dir, waiting a little for a process still using it
// (a traced command just exiting), and detaches it lazily as a last resort.
func unmount(t testing.TB, dir string) {
	t.Helper()
	var err error
	for i := 0; i < 50; i++ {
		if err = unix.Unmount(dir, 0); err == nil || !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("unmounting %s: %v (detaching it lazily)", dir, err)
		unix.Unmount(dir, unix.MNT_DETACH)
	}
}
