package workloads

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// These tests mount small filesystems, so they need root; they skip otherwise.

func TestReadOnlyMount(t *testing.T) {
	dir := mountFS(t, "tmpfs", "size=1m", unix.MS_RDONLY)
	_, err := Prepare(Spec{Kind: KindSeqRead, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "read-only filesystem; choose a writable place with --dir") {
		t.Errorf("read-only filesystem: %v", err)
	}
	_, err = Prepare(Spec{Kind: KindSeqWrite, File: filepath.Join(dir, "f")})
	if err == nil || !strings.Contains(err.Error(), "read-only filesystem; choose a writable place with --file") {
		t.Errorf("read-only filesystem, --file: %v", err)
	}
}

func TestDirectRefused(t *testing.T) {
	dir := mountFS(t, "ramfs", "", 0)
	_, err := Prepare(Spec{Kind: KindRandRead, Direct: true, FileSize: 1 << 20, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "(ramfs) does not support O_DIRECT") || !strings.Contains(err.Error(), "drop --direct") {
		t.Errorf("O_DIRECT on ramfs: %v", err)
	}
	assertEmpty(t, dir)
}

func TestColdOnTmpfs(t *testing.T) {
	dir := mountFS(t, "tmpfs", "size=4m", 0)
	p := prepare(t, Spec{Kind: KindSeqRead, FileSize: 1 << 20, Cold: true, Dir: dir})
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "--cold did not work: 256 of 256 pages") || !strings.Contains(p.Notes[0], "tmpfs keeps files only in memory") {
		t.Errorf("--cold on tmpfs notes %q", p.Notes)
	}
	r := run(t, p)
	if len(r.Notes) != 1 {
		t.Errorf("report notes %q, want the --cold warning", r.Notes)
	}
}

func TestFullWhilePreparing(t *testing.T) {
	dir := mountFS(t, "tmpfs", "size=1m", 0)
	_, err := Prepare(Spec{Kind: KindRandRead, FileSize: 4 << 20, Dir: dir})
	// statfs says so before anything is written.
	if err == nil || !strings.Contains(err.Error(), "not enough free space for the workload's file: it needs 4194304 more bytes (4MiB) and "+dir+" (tmpfs) has 1048576 free (1MiB)") {
		t.Errorf("4 MiB file on a 1 MiB tmpfs: %v", err)
	}
	assertEmpty(t, dir)
	_, err = Prepare(Spec{Kind: KindRandRead, FileSize: 4 << 20, Dir: dir, Prealloc: true})
	if err == nil || !strings.Contains(err.Error(), "not enough free space") {
		t.Errorf("4 MiB --prealloc on a 1 MiB tmpfs: %v", err)
	}
	assertEmpty(t, dir)
	// What fits is prepared.
	p := prepare(t, Spec{Kind: KindRandRead, FileSize: 512 << 10, Dir: dir})
	if err := p.Cleanup(); err != nil {
		t.Error(err)
	}
}

func TestFullWhileRunning(t *testing.T) {
	for _, engine := range Engines() {
		t.Run(engine, func(t *testing.T) {
			dir := mountFS(t, "tmpfs", "size=1m", 0)
			// 3000 does not divide 1 MiB: the last write is cut short, then fails.
			p, err := Prepare(Spec{Kind: KindSmallWrite, Engine: engine, BlockSize: 3000, FileSize: 4 << 20, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			r, err := p.Run(context.Background())
			if err == nil {
				t.Fatal("writing 4 MiB to a 1 MiB tmpfs succeeded")
			}
			msg := err.Error()
			switch engine {
			case EngineMmap:
				if !strings.Contains(msg, "faulted (SIGBUS) at offset 1048576 after 349 ops") || !strings.Contains(msg, "usually because it is full") {
					t.Errorf("mmap on a full disk: %v", err)
				}
			default:
				if !strings.Contains(msg, "disk full (ENOSPC") || !strings.Contains(msg, "after writing 1048576 bytes (1MiB)") || strings.Contains(msg, "short") {
					t.Errorf("%s on a full disk: %v", engine, err)
				}
			}
			if r == nil || r.Ops != 349 && engine != EngineStdio {
				t.Errorf("partial report %+v, want 349 completed 3000-byte writes", r)
			}
			if err := p.Cleanup(); err != nil {
				t.Error(err)
			}
			assertEmpty(t, dir)
		})
	}
}

func TestFullAtCreate(t *testing.T) {
	dir := mountFS(t, "tmpfs", "size=1m,nr_inodes=2", 0)
	os.WriteFile(filepath.Join(dir, "taken"), nil, 0o644) // the last inode
	_, err := Prepare(Spec{Kind: KindSeqWrite, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("no free inode: %v", err)
	}
}
