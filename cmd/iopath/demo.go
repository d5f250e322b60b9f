package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer"
	"github.com/iopath/iopath/tracer/kernel"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func init() { subcommands = append(subcommands, newDemoCmd, newDemoChildCmd) }

type demoFlags struct {
	dir      string
	keep     bool
	json     bool
	timeline timelineFlags
}

// demos maps a demo name to its runner; each file adds its own.
var demos = map[string]struct {
	short string
	run   func(cmd *cobra.Command, f *demoFlags, args []string) error
}{}

func newDemoCmd() *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo NAME",
		Short: "Run a classic IO experiment under the tracer and explain it with the kernel's numbers",
		Long:  "Demos:\n" + demoList(),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return fmt.Errorf("name a demo: %s", demoNames())
			}
			if _, ok := demos[args[0]]; !ok {
				return fmt.Errorf("unknown demo %q: choose one of %s", args[0], demoNames())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			stop := cleanupOnSignal()
			defer stop()
			if activeTimeline, err = openTimeline(&f.timeline, "iopath demo "+strings.Join(args, " ")); err != nil {
				return err
			}
			defer func() { err = activeTimeline.end(err, cmd.ErrOrStderr()) }()
			return demos[args[0]].run(cmd, f, args[1:])
		},
	}
	cmd.PersistentFlags().StringVar(&f.dir, "dir", "", "directory for the demo's file (default: a new temp dir under $TMPDIR, removed afterwards)")
	cmd.PersistentFlags().BoolVar(&f.keep, "keep", false, "keep the demo's files")
	cmd.PersistentFlags().BoolVar(&f.json, "json", false, "print the raw records as JSON Lines after the explanation")
	addTimelineFlags(cmd.PersistentFlags(), &f.timeline)
	cmd.Flags().Bool("fsync", false, "write-1byte: fsync after the write")
	cmd.Flags().Int("expire-centisecs", 0, "write-1byte: set vm.dirty_expire_centisecs for the demo (restored afterwards)")
	cmd.Flags().Duration("timeout", 90*time.Second, "write-1byte: how long to wait for writeback")
	return cmd
}

func demoNames() string {
	var n []string
	for k := range demos {
		n = append(n, k)
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

func demoList() string {
	var b strings.Builder
	var n []string
	for k := range demos {
		n = append(n, k)
	}
	slices.Sort(n)
	for _, k := range n {
		fmt.Fprintf(&b, "  %-18s %s\n", k, demos[k].short)
	}
	return b.String()
}

var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

// atSignal registers f to run if SIGINT/SIGTERM ends the demo early.
func atSignal(f func()) {
	cleanupMu.Lock()
	cleanups = append(cleanups, f)
	cleanupMu.Unlock()
}

// cleanupOnSignal removes the demo's files and restores what it changed when
// SIGINT or SIGTERM arrives, then exits 128+signal (the tracer's BPF links
// and maps go with the process's file descriptors).
func cleanupOnSignal() (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			cleanupMu.Lock()
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-done:
		}
	}()
	return func() { signal.Stop(sig); close(done) }
}

// demoDir returns the directory for demo files and a cleanup function.
func demoDir(f *demoFlags) (string, func(), error) {
	if f.dir != "" {
		st, err := os.Stat(f.dir)
		if err != nil {
			return "", nil, fmt.Errorf("--dir %s: %w: create it or choose another directory", f.dir, err)
		}
		if !st.IsDir() {
			return "", nil, fmt.Errorf("--dir %s is not a directory", f.dir)
		}
		d, err := os.MkdirTemp(f.dir, "iopath-demo-")
		if err != nil {
			return "", nil, fmt.Errorf("--dir %s: cannot create files there (%w): choose a writable directory", f.dir, err)
		}
		atSignal(func() { os.RemoveAll(d) })
		return d, func() {
			if !f.keep {
				os.RemoveAll(d)
			}
		}, nil
	}
	base := os.TempDir()
	if !describeFS(base).blockDevice {
		base = "/var/tmp" // $TMPDIR is memory-backed (tmpfs): no disk IO to show there
	}
	d, err := os.MkdirTemp(base, "iopath-demo-")
	if err != nil {
		return "", nil, fmt.Errorf("creating a temp dir: %w: set TMPDIR to a writable directory", err)
	}
	atSignal(func() { os.RemoveAll(d) })
	return d, func() {
		if !f.keep {
			os.RemoveAll(d)
		}
	}, nil
}

// fsInfo describes where a file lives: its block device, if any.
type fsInfo struct {
	fsType      string
	dev         uint32 // kernel dev_t of the filesystem
	blockDevice bool
	readAheadKB int
	disk        string
}

const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

func describeFS(path string) fsInfo {
	var sfs unix.Statfs_t
	var st unix.Stat_t
	info := fsInfo{readAheadKB: -1}
	if unix.Statfs(path, &sfs) == nil {
		switch sfs.Type {
		case tmpfsMagic:
			info.fsType = "tmpfs"
		case ramfsMagic:
			info.fsType = "ramfs"
		case 0xef53:
			info.fsType = "ext4"
		case 0x58465342:
			info.fsType = "xfs"
		case 0x9123683e:
			info.fsType = "btrfs"
		default:
			info.fsType = fmt.Sprintf("fs 0x%x", sfs.Type)
		}
	}
	if unix.Stat(path, &st) == nil {
		info.dev = kernel.UserDev(st.Dev)
		major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
		sys := fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)
		if _, err := os.Stat(sys); err == nil {
			info.blockDevice = true
			if real, err := filepath.EvalSymlinks(sys); err == nil {
				info.disk = filepath.Base(real)
			}
			for _, q := range []string{sys + "/queue/read_ahead_kb", sys + "/../queue/read_ahead_kb"} {
				if b, err := os.ReadFile(q); err == nil {
					info.readAheadKB, _ = strconv.Atoi(strings.TrimSpace(string(b)))
					break
				}
			}
		}
	}
	return info
}

// makeColdFile writes size random bytes to path, syncs them and evicts the
// file from the page cache with posix_fadvise(DONTNEED) (never a global
// drop_caches). It returns the pages still cached afterwards (mincore).
func makeColdFile(path string, size int64) (int, error) {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", path, err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		rand.Read(buf[:n])
		if _, err := unix.Pwrite(fd, buf[:n], off); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return 0, fmt.Errorf("writing %s: the disk is full after %d bytes: free space or use --dir elsewhere", path, off)
			}
			return 0, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := unix.Fsync(fd); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", path, err)
	}
	return evict(path)
}

// evict drops a file's clean pages (posix_fadvise DONTNEED) and returns how
// many remain cached.
func evict(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, fmt.Errorf("posix_fadvise(DONTNEED) on %s: %w", path, err)
	}
	return cachedPages(fd)
}

// cachedPages counts a file's pages resident in the page cache (mincore on a
// read-only mapping, which does not fault pages in).
func cachedPages(fd int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	if st.Size == 0 {
		return 0, nil
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(m)
	vec := make([]byte, (st.Size+4095)/4096)
	if err := mincore(m, vec); err != nil {
		return 0, err
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, nil
}

func mincore(b []byte, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafePointer(b)), uintptr(len(b)), uintptr(unsafePointer(vec)))
	if e != 0 {
		return e
	}
	return nil
}

// traceChild traces `iopath __demo-child ARGS...` and returns its records.
// The tracer streams every call (--all) so warm hits are shown too.
func traceChild(cmd *cobra.Command, opts tracer.Options, settle time.Duration, wait func(*tracer.Tracer), args ...string) ([]any, *record.Summary, []tracer.HookStatus, error) {
	p := render.NewPrinter(io.Discard, false, true)
	p.Collect = true
	opts.All = true
	t, err := tracer.New(opts, activeTimeline.tee(p.Record))
	if err != nil {
		return nil, nil, nil, err
	}
	defer t.Close()
	self, argv, err := selfCommand(append([]string{"__demo-child"}, args...)...)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	child, err := startGated(self, argv, t)
	if err != nil {
		return nil, nil, nil, err
	}
	var childErr error
	go func() {
		if err := child.Wait(); err != nil {
			childErr = fmt.Errorf("demo child: %w", err)
		}
		if wait != nil {
			wait(t)
		}
		cancel()
	}()
	if err := t.Run(ctx, settle); err != nil {
		return nil, nil, nil, err
	}
	if childErr != nil {
		return nil, nil, nil, childErr
	}
	sum := t.Summary()
	activeTimeline.summary(sum)
	return p.Collected, sum, t.Hooks, nil
}

// selfCommand returns the path and argv that run this iopath binary with
// args. Under `go test` (IOPATH_TEST_HELPER=1) the binary is the test binary,
// which runs iopath's main behind its helper test.
func selfCommand(args ...string) (string, []string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	argv := []string{"iopath"}
	if os.Getenv("IOPATH_TEST_HELPER") == "1" {
		argv = []string{self, "-test.run=^TestWorkloadHelperProcess$", "--"}
	}
	return self, append(argv, args...), nil
}

// newDemoChildCmd is the traced side of the demos: it does exactly the
// system calls a demo explains, nothing else on the demo's file.
func newDemoChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "__demo-child KIND PATH",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[1]
			var c [1]byte
			switch args[0] {
			case "read-1byte":
				fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				for i := 0; i < 2; i++ { // cold, then warm, both read(2) at offset 0
					if _, err := unix.Seek(fd, 0, 0); err != nil {
						return err
					}
					if _, err := unix.Read(fd, c[:]); err != nil {
						return err
					}
				}
				return unix.Close(fd)
			case "write-1byte", "write-1byte-fsync":
				fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
				if err != nil {
					return err
				}
				c[0] = 'x'
				if _, err := unix.Write(fd, c[:]); err != nil {
					return err
				}
				if args[0] == "write-1byte-fsync" {
					if err := unix.Fsync(fd); err != nil {
						return err
					}
				}
				return unix.Close(fd)
			}
			return fmt.Errorf("unknown demo child %q", args[0])
		},
	}
}

// fileRecords picks the syscall records of one file, in call order.
func fileRecords(recs []any, dev uint32, ino uint64) []*record.Syscall {
	var out []*record.Syscall
	for _, r := range recs {
		if s, ok := r.(*record.Syscall); ok && s.Ino == ino && s.Dev == kernel.Dev(dev) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *record.Syscall) int { return cmp.Compare(a.TimeNs, b.TimeNs) })
	return out
}

func inode(path string) (uint32, uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	return kernel.UserDev(st.Dev), st.Ino, nil
}
