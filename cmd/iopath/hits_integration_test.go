package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/record"
	"golang.org/x/sys/unix"
)

// TestHitsHelperProcess is not a test: traced by TestHitStatsFull, it makes
// 1-byte cached preads of IOPATH_TEST_HITS_FILES files f-N in
// IOPATH_TEST_HITS_DIR, then 1000 of file A, then one of file B.
func TestHitsHelperProcess(t *testing.T) {
	dir := os.Getenv("IOPATH_TEST_HITS_DIR")
	if dir == "" {
		t.Skip("helper process for TestHitStatsFull")
	}
	n, _ := strconv.Atoi(os.Getenv("IOPATH_TEST_HITS_FILES"))
	pread := func(name string, times int) {
		fd, err := unix.Open(filepath.Join(dir, name), unix.O_RDONLY, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		var b [1]byte
		for i := 0; i < times; i++ {
			if _, err := unix.Pread(fd, b[:], 0); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		unix.Close(fd)
	}
	for i := 0; i < n; i++ {
		pread(fmt.Sprintf("f-%d", i), 1)
	}
	pread("A", 1000)
	pread("B", 1)
	os.Exit(0)
}

// Issue 10 item 3: with the kernel's per-file hit map (shrunk to 64 entries)
// full, cached hits of the files it refused stay in the process's totals,
// are listed as not itemized, and never carry over to another file (B once
// showed A's bytes, and A's calls were gone).
func TestHitStatsFull(t *testing.T) {
	needRoot(t)
	testutil.KernelIndependent(t)
	const files, entries = 200, 64
	dir := diskDir(t)
	for i := 0; i < files; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f-%d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"A", "B"} {
		if err := os.WriteFile(filepath.Join(dir, n), bytes.Repeat([]byte("y"), 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := iopathCmd(os.TempDir(), "trace", "--json", "--", self, "-test.run=^TestHitsHelperProcess$")
	cmd.Env = append(cmd.Env, "IOPATH_HIT_STATS_ENTRIES="+strconv.Itoa(entries),
		"IOPATH_TEST_HITS_DIR="+dir, "IOPATH_TEST_HITS_FILES="+strconv.Itoa(files))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	tr := parseRecords(t, out.Bytes())
	s := tr.summary
	if s == nil || len(s.Pids) != 1 {
		t.Fatalf("want a summary of one traced process; stderr:\n%s", errb.String())
	}
	p := s.Pids[0]
	var sum, not record.Totals
	for _, f := range s.Files {
		sum.Calls += f.Calls
		sum.BytesRequested += f.BytesRequested
		sum.PagesHit += f.PagesHit
	}
	for _, n := range s.HitsNotItemized {
		if n.Pid != p.Pid {
			t.Errorf("hits not itemized of pid %d (want only %d): %+v", n.Pid, p.Pid, n)
			continue
		}
		not.Calls += n.Calls
		not.BytesRequested += n.BytesRequested
		if !n.Write {
			not.PagesHit += n.Pages
		}
	}
	t.Logf("pid %d: %d calls, %d bytes requested, %d pages hit; files %d calls; not itemized %d calls; map_evictions.hit_stats %d",
		p.Pid, p.Calls, p.BytesRequested, p.PagesHit, sum.Calls, not.Calls, s.MapEvictions["hit_stats"])
	// Totals are exact: every call is in a file's row or not itemized.
	if sum.Calls+not.Calls != p.Calls || sum.BytesRequested+not.BytesRequested != p.BytesRequested ||
		sum.PagesHit+not.PagesHit != p.PagesHit {
		t.Errorf("files (%d calls, %d bytes, %d pages) + not itemized (%d, %d, %d) != pid totals (%d, %d, %d)",
			sum.Calls, sum.BytesRequested, sum.PagesHit, not.Calls, not.BytesRequested, not.PagesHit,
			p.Calls, p.BytesRequested, p.PagesHit)
	}
	if want := uint64(files + 1000 + 1); p.ReadCalls < want || p.ReadBytesReq < want {
		t.Errorf("pid's read calls %d, bytes %d: want at least the helper's %d 1-byte preads", p.ReadCalls, p.ReadBytesReq, want)
	}
	// The map filled up before A: A's and B's hits are not itemized.
	if want := uint64(1000 + 1 + files - entries); not.Calls < want {
		t.Errorf("%d calls not itemized, want at least %d (A, B and the files beyond the map's %d entries)", not.Calls, want, entries)
	}
	if s.MapEvictions["hit_stats"] == 0 {
		t.Errorf("map_evictions.hit_stats = 0 with %d files in a %d-entry map", files, entries)
	}
	for _, name := range []string{"A", "B"} {
		ino := inoOf(t, filepath.Join(dir, name))
		want := uint64(1000)
		if name == "B" {
			want = 1
		}
		for _, f := range s.Files {
			if f.Ino == ino && (f.Calls != want || f.BytesRequested != want) {
				t.Errorf("file %s in the summary with %d calls, %d bytes requested (want %d, %d)", name, f.Calls, f.BytesRequested, want, want)
			}
		}
	}
}
