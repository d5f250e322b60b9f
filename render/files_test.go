package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
)

// A summary of many files lists DefaultFileRows of them, most disk bytes
// first (then most calls), and one row summing the rest, so that each
// column still adds up to the processes' totals; --files 0 lists all, and
// the JSON summary always lists every file. A run that touched 17,000
// files printed 17,000 rows.
func TestSummaryTextFileRows(t *testing.T) {
	const n = 120
	s := &record.Summary{Pids: []record.PidSummary{{Pid: 100, Comm: "app"}}}
	var calls uint64
	for i := range n {
		f := record.FileSummary{Dev: "254:0", Ino: uint64(1000 + i), Path: fmt.Sprintf("/data/f%03d", i)}
		f.Calls = uint64(1 + i%7)
		f.DiskBytesRead = uint64(i%10) * 4096 // ties broken by calls
		f.DiskBytesWrite = uint64(i%3) * 8192
		calls += f.Calls
		s.Files = append(s.Files, f)
	}
	rows := func(text string) (files []string, more string) {
		for _, l := range strings.Split(text, "\n") {
			switch {
			case strings.HasPrefix(l, "/data/"):
				files = append(files, l)
			case strings.HasPrefix(l, "(") && strings.Contains(l, " more) "):
				more = l
			}
		}
		return files, more
	}
	text := SummaryText(s, DefaultFileRows)
	files, more := rows(text)
	if len(files) != DefaultFileRows {
		t.Fatalf("%d file rows, want %d:\n%s", len(files), DefaultFileRows, text)
	}
	// Ranked: disk bytes (read 9 pages + write 2×8 KiB the most), then calls.
	var prevDisk, prevCalls uint64 = 1 << 62, 1 << 62
	var shownCalls uint64
	for _, l := range files {
		var name, dev string
		var ino uint64
		fmt.Sscan(l, &name, &dev, &ino)
		f := s.Files[ino-1000]
		disk := f.DiskBytesRead + f.DiskBytesWrite
		if disk > prevDisk || disk == prevDisk && f.Calls > prevCalls {
			t.Errorf("row %q (disk %d, calls %d) after one of disk %d, calls %d", l, disk, f.Calls, prevDisk, prevCalls)
		}
		prevDisk, prevCalls = disk, f.Calls
		shownCalls += f.Calls
	}
	// (70 more) - - CALLS ...: the rest's calls, so the column adds up.
	if f := strings.Fields(more); len(f) < 5 || strings.Join(f[:5], " ") != fmt.Sprintf("(%d more) - - %d", n-DefaultFileRows, calls-shownCalls) {
		t.Errorf("the row of the rest is %q, want (%d more) - - %d calls", more, n-DefaultFileRows, calls-shownCalls)
	}
	if !strings.Contains(text, fmt.Sprintf("(%d more): the files after the first %d by disk bytes read and written, then calls, summed; --files 0 lists every one", n-DefaultFileRows, DefaultFileRows)) {
		t.Errorf("no line saying what the rest row is:\n%s", text)
	}
	if files, more := rows(SummaryText(s, 0)); len(files) != n || more != "" {
		t.Errorf("--files 0: %d rows and %q, want all %d and no rest", len(files), more, n)
	}
	var out bytes.Buffer
	p := NewPrinter(&out, true, false)
	p.SetFileRows(2)
	p.Summary(s)
	var got record.Summary
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.Files) != n {
		t.Errorf("JSON summary: %d files (%v), want all %d", len(got.Files), err, n)
	}
}

// The row summing the files left out shows its disk bytes written as a
// lower bound (≥) when any of them is one (dirty_pages map full), as their
// own rows would.
func TestSummaryTextRestRowWritePartial(t *testing.T) {
	s := &record.Summary{Pids: []record.PidSummary{{Pid: 100, Comm: "app"}}}
	for i := range 3 {
		f := record.FileSummary{Dev: "254:0", Ino: uint64(1000 + i), Path: fmt.Sprintf("/data/f%d", i)}
		f.DiskBytesWrite = uint64(3-i) * 8192
		f.DiskBytesWritePartial = i == 2 // the smallest: summed in the rest
		s.Files = append(s.Files, f)
	}
	for _, l := range strings.Split(SummaryText(s, 1), "\n") {
		if strings.HasPrefix(l, "(2 more) ") {
			if !strings.Contains(l, "≥24.0 KiB") {
				t.Errorf("the rest row %q does not mark its 24 KiB written as a lower bound", l)
			}
			return
		}
	}
	t.Error("no rest row")
}

// A file only mapped (faults, no call, nothing read from disk) is a row of
// the MAPPED FILE table, not a row of zeros in the FILE table: a new
// user's `iopath trace -- dd if=f of=/dev/null bs=1 count=1` printed 19
// FILE rows, 16 of them zeros (dd's binary, ld.so.cache, LC_* files).
// A mapped file whose faults read the disk keeps its FILE row (its DISK
// READ counts them).
func TestSummaryTextMappedOnlyFileNotInFileTable(t *testing.T) {
	s := &record.Summary{Pids: []record.PidSummary{{Pid: 100, Comm: "dd"}}}
	data := record.FileSummary{Dev: "254:0", Ino: 1, Path: "/data/f"}
	data.Calls, data.ReadCalls, data.ReadBytesReq, data.PagesMissed, data.DiskBytesRead = 1, 1, 1, 1, 16384
	lib := record.FileSummary{Dev: "254:0", Ino: 2, Path: "/usr/lib/libc.so.6"}
	lib.Faults = 29
	cold := record.FileSummary{Dev: "254:0", Ino: 3, Path: "/usr/bin/dd"}
	cold.Faults, cold.MajorFaults, cold.FaultDiskBytesRead, cold.DiskBytesRead = 5, 1, 65536, 65536
	s.Files = []record.FileSummary{data, lib, cold}
	text := SummaryText(s, 50)
	var fileTable, mapped []string
	table := ""
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "FILE "):
			table = "file"
		case strings.HasPrefix(l, "MAPPED FILE "):
			table = "mapped"
		case l == "":
			table = ""
		case table == "file":
			fileTable = append(fileTable, strings.Fields(l)[0])
		case table == "mapped":
			mapped = append(mapped, strings.Fields(l)[0])
		}
	}
	if want := []string{"/usr/bin/dd", "/data/f"}; strings.Join(fileTable, " ") != strings.Join(want, " ") {
		t.Errorf("FILE rows %v, want %v:\n%s", fileTable, want, text)
	}
	if want := []string{"/usr/bin/dd", "/usr/lib/libc.so.6"}; strings.Join(mapped, " ") != strings.Join(want, " ") {
		t.Errorf("MAPPED FILE rows %v, want %v:\n%s", mapped, want, text)
	}
}

// Files of one name whose inode number was reused (SQLite's rollback
// journal, made and deleted at each commit) are one row of the text table,
// summed, saying how many files it is; other files keep their rows.
func TestSummaryTextFoldsReusedInode(t *testing.T) {
	journal := func(gen uint32, calls uint64) record.FileSummary {
		return record.FileSummary{Dev: "254:0", Ino: 5474180, Generation: gen, Path: "/db/t.db-journal", Totals: record.Totals{Calls: calls, DiskBytesWrite: 4096 * calls}}
	}
	s := &record.Summary{Files: []record.FileSummary{
		journal(1, 3), journal(2, 4), journal(3, 5),
		{Dev: "254:0", Ino: 12, Path: "/db/t.db", Totals: record.Totals{Calls: 2, DiskBytesWrite: 8192}},
	}}
	text := SummaryText(s, 0)
	var rows []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "/db/") {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "/db/t.db-journal 254:0 5474180 (3 files) 12 ") || !strings.HasPrefix(rows[1], "/db/t.db 254:0 12 2 ") {
		t.Errorf("file rows %q\nin\n%s", rows, text)
	}
}
