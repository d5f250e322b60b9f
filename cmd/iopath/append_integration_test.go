package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iopath/iopath/record"
)

// A write to an O_APPEND file lands at the end of the file, whatever the
// file position says: its record's offset is the file's size at the call
// (5 bytes, then 10), not 0 (a breaker's finding on main: offset 0 twice).
func TestAppendWriteOffset(t *testing.T) {
	needRoot(t)
	f := filepath.Join(diskDir(t), "appended")
	if err := os.WriteFile(f, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := traceCmd(t, "--all", "--", "sh", "-c", `echo more >> "$0"; printf x >> "$0"`, f)
	var offsets []uint64
	for _, c := range tr.forIno(inoOf(t, f)) {
		if record.IsWrite(c.Syscall) {
			offsets = append(offsets, c.Offset)
		}
	}
	if len(offsets) != 2 || offsets[0] != 5 || offsets[1] != 10 {
		t.Fatalf("O_APPEND write offsets %v, want [5 10]", offsets)
	}
}
