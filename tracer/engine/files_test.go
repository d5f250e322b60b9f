package engine_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/engine/enginetest"
	"github.com/iopath/iopath/tracer/kernel"
)

// namedOp is a write call on inode 42 whose record carries path parts
// (deepest first) and the inode's generation.
func namedOp(id uint64, gen uint32, parts ...string) *bpf.IopathOp {
	o := enginetest.Op(id, bpf.IopathOpSysSYS_PWRITE64, 0, 4096, 4096, 100, 200)
	o.PathDepth, o.PathDone, o.PathGen = uint32(len(parts)), 1, gen
	for i, p := range parts {
		for j := 0; j < len(p); j++ {
			o.Path[i][j] = int8(p[j])
		}
	}
	return o
}

func fileRows(s *record.Summary, ino uint64) []record.FileSummary {
	var out []record.FileSummary
	for _, f := range s.Files {
		if f.Ino == ino {
			out = append(out, f)
		}
	}
	return out
}

// A file renamed between calls (PostgreSQL's pg_wal/xlogtemp.N installed as
// a segment) is one row, named by its latest path, the earlier one listed.
func TestRenameBetweenCalls(t *testing.T) {
	s := enginetest.NewStream()
	s.E.HandleOp(namedOp(7<<32|1, 99, "xlogtemp.22248", "pg_wal"))
	s.E.HandleOp(namedOp(7<<32|2, 99, "000000010000000000000002", "pg_wal"))
	rows := fileRows(s.E.Summary(), 42)
	if len(rows) != 1 || rows[0].Path != "/pg_wal/000000010000000000000002" ||
		!slices.Equal(rows[0].EarlierPaths, []string{"/pg_wal/xlogtemp.22248"}) || rows[0].Calls != 2 {
		t.Fatalf("rows %+v", rows)
	}
}

// An inode number reused after a delete (a new i_generation) is another
// file: the deleted one keeps its row and name, the new one gets its own.
func TestInodeReuse(t *testing.T) {
	s := enginetest.NewStream()
	s.E.HandleOp(namedOp(7<<32|1, 99, "old.dat"))
	s.E.HandleOp(namedOp(7<<32|2, 100, "new.dat"))
	s.E.HandleOp(namedOp(7<<32|3, 100, "new.dat"))
	rows := fileRows(s.E.Summary(), 42)
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	byPath := map[string]record.FileSummary{}
	for _, r := range rows {
		byPath[r.Path] = r
	}
	if o, n := byPath["/old.dat"], byPath["/new.dat"]; o.Calls != 1 || n.Calls != 2 || len(n.EarlierPaths) != 0 || n.Generation != 100 {
		t.Fatalf("rows %+v", rows)
	}
}

// A file renamed after its last call (a WAL segment installed by rename and
// not written since) gets its current name at the end of the trace.
func TestRenamedAfterLastCall(t *testing.T) {
	// Under /tmp, not t.TempDir: a record carries at most 8 names, and
	// TMPDIR may be deeper.
	dir, err := os.MkdirTemp("/tmp", "iopath-rename-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	tmp, seg := filepath.Join(dir, "xlogtemp.22248"), filepath.Join(dir, "000000010000000000000003")
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(tmp, &st); err != nil {
		t.Fatal(err)
	}
	s := enginetest.NewStream()
	o := enginetest.Op(7<<32|1, bpf.IopathOpSysSYS_PWRITE64, 0, 1, 1, 100, 200)
	o.Ino, o.Dev = st.Ino, unix.Major(st.Dev)<<20|unix.Minor(st.Dev)
	s.E.HandleOp(enginetest.Named(o, "postgres", tmp))
	if err := os.Rename(tmp, seg); err != nil {
		t.Fatal(err)
	}
	var row *record.FileSummary
	sum := s.E.Summary()
	for i := range sum.Files {
		if sum.Files[i].Ino == st.Ino {
			row = &sum.Files[i]
		}
	}
	if row == nil || row.Path != seg || !slices.Equal(row.EarlierPaths, []string{tmp}) {
		t.Fatalf("row %+v", row)
	}
}

// A file deleted after its last call whose inode number a new file in the
// same directory took (ext4 reuses the lowest free inode of the group) is
// not renamed to that file at the end of the trace: its generation is
// another. Before, the deleted file's row took the new file's name, the
// deleted name listed as earlier. The same inode (a rename) still is.
func TestDeletedInodeReusedAfterLastCall(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "iopath-reuse-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// The new file; the traced one had its inode number and was deleted
	// (made up with another generation: reuse itself is the allocator's).
	created := filepath.Join(dir, "created-later")
	if err := os.WriteFile(created, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(created, &st); err != nil {
		t.Fatal(err)
	}
	gen, err := kernel.Generation(created)
	if err != nil {
		t.Skipf("no i_generation on %s: %v", dir, err)
	}
	other := gen + 1
	if other == 0 {
		other = 1 // 0 is "unknown"
	}
	for _, c := range []struct {
		name    string
		gen     uint32
		renamed bool
	}{{"deleted", other, false}, {"renamed", gen, true}} {
		t.Run(c.name, func(t *testing.T) {
			s := enginetest.NewStream()
			gone := filepath.Join(dir, "000000010000000000000007")
			o := enginetest.Op(7<<32|1, bpf.IopathOpSysSYS_PWRITE64, 0, 1, 1, 100, 200)
			o.Ino, o.Dev, o.PathGen = st.Ino, unix.Major(st.Dev)<<20|unix.Minor(st.Dev), c.gen
			s.E.HandleOp(enginetest.Named(o, "postgres", gone))
			var row *record.FileSummary
			sum := s.E.Summary()
			for i := range sum.Files {
				if sum.Files[i].Ino == st.Ino {
					row = &sum.Files[i]
				}
			}
			want, earlier := gone, []string(nil)
			if c.renamed {
				want, earlier = created, []string{gone}
			}
			if row == nil || row.Path != want || !slices.Equal(row.EarlierPaths, earlier) {
				t.Fatalf("row %+v, want path %s, earlier %v", row, want, earlier)
			}
		})
	}
}

// splice(2) from a pipe into a file is traced on its file side, the
// output: the pages it dirtied are its own file's. Its row counts a write,
// not a read with misses; a splice from a file into a pipe stays a read.
func TestSpliceIntoFileIsWrite(t *testing.T) {
	s := enginetest.NewStream()
	into := enginetest.Named(enginetest.Op(7<<32|1, bpf.IopathOpSysSYS_SPLICE, 0, 65536, 65536, 100, 200), "app", "/data/spliced.dat")
	into.OutDev, into.OutIno = enginetest.Dev, into.Ino
	enginetest.AddRange(into, 0, 16, engine.RangeAdded)
	into.DirtiedPages = 16
	s.E.HandleOp(into)
	from := enginetest.Named(enginetest.Op(7<<32|2, bpf.IopathOpSysSYS_SPLICE, 0, 65536, 65536, 300, 400), "app", "/data/src.dat")
	from.Ino = 43
	enginetest.AddRange(from, 0, 16, engine.RangeAdded)
	s.E.HandleOp(from)
	sum := s.E.Summary()
	w, r := fileRows(sum, 42), fileRows(sum, 43)
	if len(w) != 1 || w[0].WriteCalls != 1 || w[0].ReadCalls != 0 || w[0].ReadBytesReq != 0 || w[0].PagesMissed != 0 || w[0].DirtiedPages != 16 {
		t.Errorf("output row %+v: want 1 write call, no read, no miss, 16 pages dirtied", w)
	}
	if len(r) != 1 || r[0].ReadCalls != 1 || r[0].ReadBytesReq != 65536 || r[0].PagesMissed != 16 {
		t.Errorf("input row %+v: want 1 read call of 64 KiB, 16 pages missed", r)
	}
}
